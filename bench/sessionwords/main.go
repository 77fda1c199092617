// Command sessionwords measures the session word index (index.Sessions)
// over an imported store: it builds the index from nothing into a fresh
// directory, reports its size on disk and the build's time, reopens it (a
// restart's catch-up when nothing changed), then times word queries made
// of words from sessions' titles (one word, two words, a phrase) and prints
// p50 and p99 per group with the process's heap and peak RSS. The store
// is opened read-only and left as it was.
//
//	go run ./bench/sessionwords -store DATA/store -out /tmp/index-sessions
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

func main() {
	storeDir := flag.String("store", "", "an imported store directory (opened read-only; no server may own it)")
	out := flag.String("out", "", "where to build the index (removed first)")
	n := flag.Int("n", 200, "queries per group")
	limit := flag.Int("limit", 50, "sessions per query")
	seed := flag.Uint64("seed", 1, "seed of the query sample")
	flag.Parse()
	if *storeDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "give -store and -out")
		os.Exit(2)
	}
	if err := run(*storeDir, *out, *n, *limit, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "sessionwords:", err)
		os.Exit(1)
	}
}

func run(storeDir, out string, n, limit int, seed uint64) error {
	st, err := store.OpenWith(storeDir, store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	infos, err := st.Sessions()
	if err != nil {
		return err
	}
	entries := 0
	for _, si := range infos {
		entries += si.Entries
	}
	fmt.Printf("store: %d sessions, %d entries, %.1f MB on disk; RSS %s after opening it\n", len(infos), entries, float64(st.DiskSize())/1e6, procStatus("VmRSS:"))
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	ctx := context.Background()
	t0 := time.Now()
	s, err := index.OpenSessions(out, st, nil)
	if err != nil {
		return err
	}
	p, err := s.CatchUp(ctx)
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	build := time.Since(t0)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Printf("after the build: RSS %s, peak RSS %s, Go heap obtained from the OS %.0f MB\n", procStatus("VmRSS:"), procStatus("VmHWM:"), float64(m.HeapSys)/1e6)
	size := service.DirSize(out)
	fmt.Printf("build: %d sessions, %.1f MB of user text, %.2f s (closed, on disk); index %.1f MB on disk (%.2fx the user text, %.3fx the store)\n",
		p.Indexed, float64(p.TextBytes)/1e6, build.Seconds(), float64(size)/1e6, float64(size)/float64(max(p.TextBytes, 1)), float64(size)/float64(st.DiskSize()))
	t0 = time.Now()
	if s, err = index.OpenSessions(out, st, nil); err != nil {
		return err
	}
	defer s.Close()
	if p, err = s.CatchUp(ctx); err != nil {
		return err
	}
	fmt.Printf("reopen + catch-up with nothing changed: %d indexed, %.0f ms\n", p.Indexed, float64(time.Since(t0).Microseconds())/1e3)
	words := titleWords(st, infos)
	if len(words) < 2 {
		return fmt.Errorf("too few title words to sample (%d)", len(words))
	}
	r := rand.New(rand.NewPCG(seed, seed))
	pick := func() string { return words[r.IntN(len(words))] }
	groups := []struct {
		name string
		make func() string
	}{
		{"one word", pick},
		{"two words", func() string { return pick() + " " + pick() }},
		{"a phrase of two", func() string { return `"` + pick() + " " + pick() + `"` }},
		{"two words required", func() string { return "+" + pick() + " +" + pick() }},
	}
	for _, g := range groups {
		var times []time.Duration
		hits := 0
		for range n {
			q := g.make()
			t := time.Now()
			ms, err := s.Match(ctx, q, limit)
			if err != nil {
				return fmt.Errorf("match %q: %w", q, err)
			}
			times = append(times, time.Since(t))
			hits += len(ms)
		}
		slices.Sort(times)
		fmt.Printf("%-20s n=%d  p50 %6.2f ms  p99 %6.2f ms  mean sessions returned %.1f\n", g.name, n,
			ms(times[len(times)/2]), ms(times[len(times)*99/100]), float64(hits)/float64(n))
	}
	runtime.ReadMemStats(&m)
	fmt.Printf("after the queries: heap in use %.0f MB, RSS %s\n", float64(m.HeapInuse)/1e6, procStatus("VmRSS:"))
	return nil
}

// titleWords are the distinct words of four letters or more in the
// sessions' titles.
func titleWords(st *store.Store, infos []*store.SessionInfo) []string {
	seen := map[string]bool{}
	var out []string
	for _, si := range infos {
		for _, w := range strings.FieldsFunc(index.SessionTitle(st, si), func(r rune) bool { return !unicode.IsLetter(r) }) {
			w = strings.ToLower(w)
			if len(w) >= 4 && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	slices.Sort(out)
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// procStatus is a line of /proc/self/status (VmRSS:, VmHWM:).
func procStatus(key string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
