// Command search benchmarks literal search against ripgrep on the same
// corpus, in one run: first pages in all scope for sampled needles and
// near-misses, short needles, branch scope, exact counts, and memory across
// many queries. It prints medians, p99s and ratios.
//
//	go run ./bench/search -data DATA -corpus CORPUS_DIR
//
// DATA is a pi-history data directory into which CORPUS_DIR was imported
// (see bench/run-import.sh). Nothing here is a test: figures vary with the
// machine.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
	"github.com/pi-history/pi-history/internal/procmem"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// One piece (277 lines): a benchmark's whole run, read top to bottom as
// the order it measures in (flags, the heap as serve sets it, the preload,
// the corpus line, then each group of needles); every group reads the
// same flags and open service.
func main() {
	data := flag.String("data", "", "pi-history data directory holding the imported corpus (required)")
	corpus := flag.String("corpus", "", "the corpus's JSONL directory, for ripgrep (required)")
	n := flag.Int("n", 200, "needles per group")
	rgN := flag.Int("rg", 20, "needles per group also run through ripgrep, spread evenly through the group (it is slow)")
	memQ := flag.Int("mem-queries", 10000, "queries for the memory check")
	seed := flag.Uint64("seed", 1, "sampling seed")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the queries here")
	memProf := flag.String("memprofile", "", "write a profile of what the queries allocated here, every allocation sampled (see FILE.base)")
	flag.BoolVar(&each, "each", false, "print every query: time, hits, plan and the work it did; and every needle ripgrep ran, with both times and their ratio, lowest first")
	memoryMB := flag.Int("memory-mb", 0, "the memory budget in MB, as 'pi-history serve --memory-mb' (0: serve's default for this machine); the budget is divided as serve divides it")
	memLimit := flag.Int("memlimit-mb", 0, "the Go memory limit in MB (0: what 'pi-history serve' sets)")
	gcPercent := flag.Int("gcpercent", 0, "the collector's pace, GOGC (0: what 'pi-history serve' sets)")
	only := flag.String("only", "", "run only the query groups whose name holds this text (e.g. 'branch'); the memory check runs when it matches 'memory'")
	cold := flag.Bool("cold", false, "do not preload the current branches first (serve preloads them when it starts)")
	flag.Parse()
	if *data == "" || *corpus == "" {
		fmt.Fprintln(os.Stderr, "usage: search -data DATA -corpus CORPUS_DIR")
		os.Exit(2)
	}
	// The heap as a server runs it, unless told otherwise.
	mem := service.SplitMemory(service.ServeMemoryBytes())
	if *memoryMB > 0 {
		mem = service.SplitMemory(int64(*memoryMB) << 20)
	}
	procmem.TuneServe(mem.GoLimit)
	if *memLimit > 0 {
		debug.SetMemoryLimit(int64(*memLimit) << 20)
	}
	if *gcPercent > 0 {
		debug.SetGCPercent(*gcPercent)
	}
	svc, err := service.Open(service.Options{DataDir: *data, Memory: mem})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer svc.Close()
	ctx := context.Background()
	if err := svc.WaitIndexed(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if !*cold {
		w, err := svc.Warm(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("preloaded as serve does at start: current branches of %d sessions, %.1f s\n", w.Branches, w.BranchTime.Seconds())
	}
	eng := search.New(svc.Store, svc.Index)
	r := rand.New(rand.NewPCG(*seed, 99))
	last := svc.Store.LastSeq()
	st, _ := svc.Stats()
	fmt.Printf("corpus: %d sessions, %d entries, %.0f MB of journal; store %.0f MB, index %.0f MB (%.2fx the JSONL)\n",
		st.Sessions, st.Entries, float64(st.Bytes)/1e6, float64(st.StoreBytes)/1e6, float64(st.IndexBytes)/1e6,
		float64(st.StoreBytes+st.IndexBytes)/float64(st.Bytes))
	fmt.Printf("memory budget: %d MB (block cache %d MB, memtables 2 x %d MB, Go memory limit %d MB)\n", mem.Total>>20, mem.Cache>>20, mem.MemTable>>20, mem.GoLimit>>20)
	if _, err := exec.LookPath("rg"); err != nil && *rgN > 0 {
		fmt.Fprintln(os.Stderr, "warning: ripgrep (rg) is not on PATH: the rg columns stay empty (install it, e.g. apt-get install ripgrep)")
	}

	sm := &benchkit.Sampler{Text: svc.Store.Text, Last: last, R: r}
	sampleAt, sample, nearMiss := sm.At, sm.Sample, sm.NearMiss
	type group struct {
		name    string
		needles []string
		req     func(string) search.Request
	}
	all := func(nd string) search.Request { return search.Request{Needle: nd, Scope: search.ScopeAll, Limit: 50} }
	var groups []group
	for _, g := range []struct {
		name     string
		min, max int
	}{{"3-5 chars", 3, 5}, {"6-12 chars", 6, 12}, {"13-40 chars", 13, 40}} {
		var nds []string
		for i := 0; i < *n; i++ {
			nds = append(nds, sample(g.min, g.max))
		}
		groups = append(groups, group{"all scope, first page of 50, sampled " + g.name, nds, all})
	}
	var misses, short []string
	for i := 0; i < *n; i++ {
		misses = append(misses, nearMiss(sample(6, 20)))
		short = append(short, sample(1, 2))
	}
	groups = append(groups, group{"all scope, first page, near-misses (match nothing)", misses, all})
	groups = append(groups, group{"all scope, first page, 1-2 char needles", short, all})
	// The goal for first pages names one population: needles of 3
	// characters or more, sampled, plus near-misses. Besides each group, a
	// line pools the four groups' queries (each group the same size).
	pooled := map[string]bool{groups[0].name: true, groups[1].name: true, groups[2].name: true, groups[3].name: true}
	var pool, poolHits, poolRg, poolRgO []float64
	var poolSame, poolRatios []float64 // the pooled needles ripgrep also ran: our times, and ripgrep's over ours

	if *prof != "" {
		// From here on: the queries, not the preload or the sampling.
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProf != "" {
		// From here on, every allocation is recorded. What the preload
		// allocated goes to FILE.base, the queries' allocations and those
		// to FILE when they are done: compare with
		// 'go tool pprof -diff_base FILE.base FILE'.
		runtime.MemProfileRate = 1
		if err := writeHeapProfile(*memProf + ".base"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer func() {
			if err := writeHeapProfile(*memProf); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	sessions, _ := eng.Sessions(ctx)
	var ordered []string // the journals in the store's order, for benchkit.RgInOrder
	if *rgN > 0 {
		ordered = benchkit.StoreOrder(svc, sessions)
	}
	fmt.Printf("\nrg: ripgrep stopped at 50 lines in whatever order its parallel walk finds them; rg in order: ripgrep reaching\n" +
		"the same first page, the oldest 50 matches (one file at a time, in the store's order; in branch scope, the session's\n" +
		"file alone); counts: rg -c over every file\n")
	fmt.Printf("\n%-58s %9s %9s %9s %9s %11s %9s %9s\n", "query", "p50 ms", "p99 ms", "rg p50", "rg/ours", "in order", "rg/ours", "hits p50")
	pick := func(name string) bool { return strings.Contains(name, *only) }
	for _, g := range groups {
		if !pick(g.name) {
			continue
		}
		ours, hits := run(eng, g.needles, g.req)
		at := benchkit.Spread(len(g.needles), *rgN)
		sub := benchkit.Choose(g.needles, at)
		rgT, rgO := benchkit.RgTimes(*corpus, sub, 50), benchkit.RgInOrder(func(int) []string { return ordered }, sub, 50)
		report(g.name, ours, rgT, rgO, hits)
		same := benchkit.Choose(ours, at)
		reportSame(same, benchkit.Ratios(same, rgO), "rg in order")
		printEach(sub, same, rgO, "rg in order")
		if pooled[g.name] {
			pool, poolHits, poolRg, poolRgO = append(pool, ours...), append(poolHits, hits...), append(poolRg, rgT...), append(poolRgO, rgO...)
			poolSame, poolRatios = append(poolSame, same...), append(poolRatios, benchkit.Ratios(same, rgO)...)
			delete(pooled, g.name)
			if len(pooled) == 0 {
				fmt.Printf("%-58s %9.3f %9.2f %s %9.0f   (the four groups above together: %d queries)\n",
					"all scope, first page, 3+ chars and near-misses pooled", benchkit.Pct(pool, 0.5), benchkit.Pct(pool, 0.99),
					versus(pool, poolRg, poolRgO), benchkit.Pct(poolHits, 0.5), len(pool))
				reportSame(poolSame, poolRatios, "rg in order")
			}
		}
	}

	// Branch scope: needles from the current branch of the session
	// searched; ripgrep reads that session's journal alone.
	var bn, bs []string
	var bf [][]string
	for len(bn) < *n {
		s := sessions[r.IntN(len(sessions))]
		seqs, err := svc.Store.CurrentBranchSeqs(s.ID)
		if err != nil || len(seqs) == 0 {
			continue
		}
		nd := sampleAt(func() uint64 { return seqs[r.IntN(len(seqs))] }, 5, 12)
		if nd == "" {
			continue // no text long enough on this branch
		}
		bn, bs, bf = append(bn, nd), append(bs, s.ID), append(bf, []string{s.File})
	}
	k := 0
	if name := "branch scope, first page of 50"; pick(name) {
		ours, hits := run(eng, bn, func(nd string) search.Request {
			k++
			return search.Request{Needle: nd, Scope: search.ScopeBranch, Session: bs[(k-1)%len(bs)], Limit: 50}
		})
		at := benchkit.Spread(len(bn), *rgN)
		sub := benchkit.Choose(bn, at)
		rgO := benchkit.RgInOrder(func(i int) []string { return bf[at[i]] }, sub, 50)
		report(name, ours, nil, rgO, hits)
		same := benchkit.Choose(ours, at)
		reportSame(same, benchkit.Ratios(same, rgO), "rg in order")
		printEach(sub, same, rgO, "rg in order")
	}

	// Exact count of every hit of 20-character needles, vs rg -c over everything.
	var cn []string
	for i := 0; i < *n/4+1; i++ {
		cn = append(cn, sample(20, 20))
	}
	if name := "all scope, exact count, 20-char needles"; pick(name) {
		ours, hits := run(eng, cn, func(nd string) search.Request {
			return search.Request{Needle: nd, Scope: search.ScopeAll, Limit: 1, Count: true}
		})
		at := benchkit.Spread(len(cn), *rgN)
		sub := benchkit.Choose(cn, at)
		rgC := benchkit.RgTimes(*corpus, sub, 0)
		report(name, ours, rgC, nil, hits)
		same := benchkit.Choose(ours, at)
		reportSame(same, benchkit.Ratios(same, rgC), "rg -c")
		printEach(sub, same, rgC, "rg -c")
	}

	// Memory across many queries.
	if !pick("memory") {
		return
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	mix := slices.Concat(groups[0].needles, groups[1].needles, misses)
	for i := 0; i < *memQ; i++ {
		req := all(mix[i%len(mix)])
		if _, err := eng.Search(ctx, &req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fmt.Printf("\nmemory across %d queries: heap in use %.1f MB before, %.1f MB after\n", *memQ,
		float64(m0.HeapInuse)/1e6, float64(m1.HeapInuse)/1e6)
}

// writeHeapProfile writes the allocation profile to path, after a
// collection (the profile stands as of the last one).
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scanned sums the work of the last group: candidate blocks, entries
// compared and bytes compared.
var scanned search.Stats

// each prints every query (-each).
var each bool

// plans holds the plan of each query of the last group (its kind, see
// planKind), parallel to its times.
var plans []string

// faults is the page faults the process took during the last run's
// queries (minor and major): searches whose allocations land on pages the
// process has not touched yet (or that the kernel took back) fault on each,
// which shows as a whole group running slower (see
// docs/decisions/004-server-gc-pace-and-memory-limit.md).
var faults int64

// pageFaults returns the page faults the process has taken so far.
func pageFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Minflt + ru.Majflt)
}

func run(eng *search.Engine, needles []string, mk func(string) search.Request) ([]float64, []float64) {
	var ts, hits []float64
	scanned, plans = search.Stats{}, nil
	f0 := pageFaults()
	defer func() { faults = pageFaults() - f0 }()
	for _, nd := range needles {
		req := mk(nd)
		t0 := time.Now()
		resp, err := eng.Search(context.Background(), &req)
		el := time.Since(t0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "search:", err)
			os.Exit(1)
		}
		ts = append(ts, float64(el.Microseconds())/1000)
		plans = append(plans, planKind(resp.Stats))
		if each {
			fmt.Printf("  %8.2f ms %4d hits  %-50q plan %s; %d candidate blocks, %d skipped, %d compared\n",
				float64(el.Microseconds())/1000, len(resp.Hits), nd, resp.Stats.Plan, resp.Stats.Candidates, resp.Stats.Skipped, resp.Stats.Scanned)
		}
		scanned.Candidates += resp.Stats.Candidates
		scanned.Scanned += resp.Stats.Scanned
		scanned.BytesScanned += resp.Stats.BytesScanned
		scanned.Skipped += resp.Stats.Skipped
		scanned.Confirmed += resp.Stats.Confirmed
		h := float64(len(resp.Hits))
		if resp.Total != nil {
			h = float64(*resp.Total)
		}
		hits = append(hits, h)
	}
	return ts, hits
}

// versus formats the ripgrep columns: each baseline's median and its ratio
// to ours, "-" where it did not run.
func versus(ours, rg, rgOrdered []float64) string {
	col := func(base []float64, w int) string {
		if len(base) == 0 {
			return fmt.Sprintf("%9s %*s", "-", w, "-")
		}
		return fmt.Sprintf("%9.1f %*s", benchkit.Pct(base, 0.5), w, fmt.Sprintf("%.0fx", benchkit.Pct(base, 0.5)/max(benchkit.Pct(ours, 0.5), 0.001)))
	}
	return col(rg, 9) + " " + col(rgOrdered, 9)
}

// reportSame prints, under a group's line, the figures of the needles
// ripgrep also ran: our median over those alone (the group's median is
// over every needle, ripgrep's over its few), and the median and lowest of
// the per-needle ratios, each needle against ripgrep reaching its answer.
func reportSame(ours, rs []float64, base string) {
	if len(rs) == 0 {
		return
	}
	fmt.Printf("    the %d needles %s ran: ours p50 %.3f ms; %s/ours per needle: median %.0fx, lowest %.0fx\n",
		len(rs), base, benchkit.Pct(ours, 0.5), base, benchkit.Pct(rs, 0.5), slices.Min(rs))
}

// printEach prints, with -each, every needle ripgrep ran: our time,
// ripgrep's and their ratio, lowest ratio first, so that the needles that
// hold a group's median down can be seen.
func printEach(needles []string, ours, rs []float64, base string) {
	if !each || len(rs) == 0 {
		return
	}
	type row struct {
		nd              string
		us, them, ratio float64
	}
	rows := make([]row, len(rs))
	for i, ratio := range benchkit.Ratios(ours, rs) {
		rows[i] = row{needles[i], ours[i], rs[i], ratio}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.ratio, b.ratio) })
	for _, r := range rows {
		fmt.Printf("      %-42q ours %8.3f ms  %s %8.2f ms  %7.0fx\n", r.nd, r.us, base, r.them, r.ratio)
	}
}

func report(name string, ours, rg, rgOrdered, hits []float64) {
	n := float64(max(len(ours), 1))
	fmt.Printf("%-58s %9.3f %9.2f %s %9.0f   (per query: %.0f candidate blocks, %.0f entries skipped, %.0f compared, %.2f MB; %d page faults in all)\n", name, benchkit.Pct(ours, 0.5), benchkit.Pct(ours, 0.99), versus(ours, rg, rgOrdered), benchkit.Pct(hits, 0.5),
		float64(scanned.Candidates)/n, float64(scanned.Skipped)/n, float64(scanned.Scanned)/n, float64(scanned.BytesScanned)/n/1e6, faults)
	if len(plans) == len(ours) {
		reportPlans(ours)
	}
}

// planKind is the kind of plan a response used (and of its count's, with
// Count), as the engine names it.
func planKind(st search.Stats) string {
	if st.CountPlanKind != "" {
		return string(st.PlanKind) + "; count: " + string(st.CountPlanKind)
	}
	return string(st.PlanKind)
}

// reportPlans prints, under a group of several plans, how many queries
// each kind of plan served and their median: a group's p50 can sit where
// two kinds meet (needles the index narrows, needles made of common
// trigrams that scan every sketch).
func reportPlans(ours []float64) {
	byKind := map[string][]float64{}
	var kinds []string
	for i, k := range plans {
		if byKind[k] == nil {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], ours[i])
	}
	if len(kinds) < 2 {
		return
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s: %d, p50 %.2f ms", k, len(byKind[k]), benchkit.Pct(byKind[k], 0.5)))
	}
	fmt.Printf("    by plan: %s\n", strings.Join(parts, "; "))
}
