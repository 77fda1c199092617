package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// result is one group's run against one server.
type result struct {
	ours, srv, hits []float64 // per query answered: round trip and the server's own time (ms), hits (or the count)
	aligned         []float64 // round trips by the group's index, -1 where the query failed
	errs            int
	firstErr        string
	mem             benchkit.Memory
	goHeap          float64 // bytes in use, from /metrics; -1 unknown
	slow            []slowQuery
}

// slowQuery is one answered query with what the server said it cost.
type slowQuery struct {
	needle string
	ms     float64
	hits   float64
	stats  queryStats
}

// queryStats is the part of a response's stats the slowest queries print.
type queryStats struct {
	TookMs       float64 `json:"tookMs"`
	Candidates   int     `json:"candidates"`
	Scanned      int     `json:"scanned"`
	BytesScanned int64   `json:"bytesScanned"`
	PlanKind     string  `json:"planKind"`
}

// answer is what a search response holds that the bench reads.
type answer struct {
	Hits  []json.RawMessage `json:"hits"`
	Total *int              `json:"total"`
	Stats queryStats        `json:"stats"`
}

// search sends one query of kind k over HTTP and returns its round trip in
// ms (the response read to its end), the server's time and the hits.
func (s *server) search(k kind, q query) (float64, queryStats, float64, error) {
	v := url.Values{"needle": {q.needle}, "scope": {k.scope}, "limit": {strconv.Itoa(k.limit)}}
	if k.count {
		v.Set("count", "true")
	}
	if q.session != "" {
		v.Set("session", q.session)
	}
	req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/search?"+v.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	t0 := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, queryStats{}, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	el := float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		return 0, queryStats{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, queryStats{}, 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, queryStats{}, 0, fmt.Errorf("decode the answer: %w", err)
	}
	h := float64(len(a.Hits))
	if a.Total != nil {
		h = float64(*a.Total)
	}
	return el, a.Stats, h, nil
}

// runGroup sends every query of a group, one at a time, then reads the
// server's memory.
func (s *server) runGroup(k kind, qs []query) result {
	var r result
	for _, q := range qs {
		el, st, h, err := s.search(k, q)
		if err != nil {
			if r.errs == 0 {
				r.firstErr = fmt.Sprintf("%q: %v", q.needle, err)
			}
			r.errs++
			r.aligned = append(r.aligned, -1)
			continue
		}
		r.aligned = append(r.aligned, el)
		r.ours, r.srv, r.hits = append(r.ours, el), append(r.srv, st.TookMs), append(r.hits, h)
		if s.slowN > 0 {
			r.slow = append(r.slow, slowQuery{needle: q.needle, ms: el, hits: h, stats: st})
		}
	}
	if len(r.slow) > 0 {
		sort.Slice(r.slow, func(i, j int) bool { return r.slow[i].ms > r.slow[j].ms })
		r.slow = r.slow[:min(len(r.slow), s.slowN)]
	}
	r.mem, r.goHeap = s.memory()
	return r
}

// phase is every group's result in one state of one server.
type phase map[string]result

// runPhase runs every group of set in the order of kinds and prints a
// table of them, each beside ripgrep's per-needle ratios (base) and the
// server's memory after it.
func (s *server) runPhase(title string, set needleSet, base *baseline) phase {
	p := phase{}
	fmt.Printf("\n%s\n", title)
	fmt.Printf("  %-34s %4s %8s %8s %8s %9s %9s %8s | %7s %6s %6s %6s  (MB)\n",
		"group", "n", "p50 ms", "p99 ms", "srv p50", "rg-c/us", "rg50/us", "hits p50", "Go heap", "anon", "file", "RSS")
	for _, k := range kinds {
		r := s.runGroup(k, set[k.name])
		p[k.name] = r
		rc, r50 := base.ratios(k, r.aligned)
		heap := "-"
		if r.goHeap >= 0 {
			heap = benchkit.MB(int64(r.goHeap))
		}
		fmt.Printf("  %-34s %4d %8.3f %8.2f %8.3f %9s %9s %8.0f | %7s %6s %6s %6s\n", k.name, len(r.ours),
			benchkit.Pct(r.ours, 0.5), benchkit.Pct(r.ours, 0.99), benchkit.Pct(r.srv, 0.5), ratio(rc), ratio(r50),
			benchkit.Pct(r.hits, 0.5), heap, benchkit.MB(r.mem.Anon), benchkit.MB(r.mem.File), benchkit.MB(r.mem.RSS))
		for _, q := range r.slow {
			fmt.Printf("    slow: %8.2f ms  %-42q hits %6.0f  candidates %7d  scanned %7d  bytes %10d  plan %s\n",
				q.ms, q.needle, q.hits, q.stats.Candidates, q.stats.Scanned, q.stats.BytesScanned, q.stats.PlanKind)
		}
		if r.errs > 0 {
			fmt.Printf("    %d queries failed; the first: %s\n", r.errs, r.firstErr)
		}
	}
	return p
}

// ratio formats the median of per-needle ratios, "-" when none.
func ratio(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fx", benchkit.Pct(rs, 0.5))
}
