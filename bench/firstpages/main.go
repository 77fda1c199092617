// Command firstpages sends first pages (50 hits, all scope) to a running
// 'pi-history serve', one at a time, and prints their round trips (the
// body read to its end) with the server's memory after: the client the
// A/B runs of docs/measurements/2026-12-07-mapped-texts-and-page-keys.md
// used, for comparing two builds on fresh servers without bench/engine's
// whole run.
//
//	go run ./bench/firstpages -url http://127.0.0.1:7314 -token DATA/api-token \
//	    -needles needles.json [-set 1] [-only FILE] [-rounds 5] [-each] [-pid PID]
//
// The needles are a group of a bench/engine -needles file (-set picks the
// early set, 0, or the steady one, 1), or one per line of -only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:7314", "the server's address")
	tokenFile := flag.String("token", "", "the server's token file (DATA/api-token)")
	needlesFile := flag.String("needles", "", "a needle file written by bench/engine -needles")
	set := flag.Int("set", 1, "which of its two sets: 0 (sent early) or 1 (steady)")
	group := flag.String("group", "first page, all scope, 3+ chars", "which group of the set")
	only := flag.String("only", "", "a file of needles, one per line, instead of -needles")
	rounds := flag.Int("rounds", 1, "times over the needles")
	each := flag.Bool("each", false, "also print each needle's round trip of the last round, in order")
	pid := flag.Int("pid", 0, "the server's process id, to print its memory after")
	flag.Parse()
	needles, err := readNeedles(*needlesFile, *set, *group, *only)
	if err == nil && *tokenFile == "" {
		err = fmt.Errorf("give -token DATA/api-token")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "firstpages:", err)
		os.Exit(2)
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "firstpages:", err)
		os.Exit(2)
	}
	var all, last []float64
	for range *rounds {
		last = last[:0]
		for _, nd := range needles {
			ms, err := firstPage(*base, strings.TrimSpace(string(tok)), nd)
			if err != nil {
				fmt.Fprintf(os.Stderr, "firstpages: %q: %v\n", nd, err)
				os.Exit(1)
			}
			all, last = append(all, ms), append(last, ms)
		}
	}
	fmt.Printf("n %d  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f ms\n", len(all),
		benchkit.Pct(all, 0.5), benchkit.Pct(all, 0.9), benchkit.Pct(all, 0.99), slices.Max(all))
	if *each {
		for i, nd := range needles {
			fmt.Printf("  %8.3f ms  %q\n", last[i], nd)
		}
	}
	if *pid > 0 {
		if m, err := benchkit.ReadMemory(*pid); err == nil {
			fmt.Printf("server: anonymous %s MB, file-backed %s MB, RSS %s MB, peak RSS %s MB\n",
				benchkit.MB(m.Anon), benchkit.MB(m.File), benchkit.MB(m.RSS), benchkit.MB(m.Peak))
		}
	}
}

// readNeedles returns the needles of -only, or of group in set of the
// needle file.
func readNeedles(file string, set int, group, only string) ([]string, error) {
	if only != "" {
		b, err := os.ReadFile(only)
		if err != nil {
			return nil, err
		}
		return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' }), nil
	}
	if file == "" {
		return nil, fmt.Errorf("give -needles FILE (from bench/engine -needles) or -only FILE")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var sets []map[string][]struct{ Needle string }
	if err := json.Unmarshal(b, &sets); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if set < 0 || set >= len(sets) || len(sets[set][group]) == 0 {
		return nil, fmt.Errorf("%s has no group %q in set %d", file, group, set)
	}
	var out []string
	for _, q := range sets[set][group] {
		out = append(out, q.Needle)
	}
	return out, nil
}

// firstPage asks one first page and returns its round trip in ms.
func firstPage(base, token, needle string) (float64, error) {
	v := url.Values{"needle": {needle}, "scope": {"all"}, "limit": {"50"}}
	req, err := http.NewRequest(http.MethodGet, base+"/v1/search?"+v.Encode(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ms := float64(time.Since(t0).Microseconds()) / 1000
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	return ms, err
}
