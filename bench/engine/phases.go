package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// budgetName is how a budget is printed.
func budgetName(mb int) string {
	if mb == 0 {
		return "default"
	}
	return fmt.Sprintf("%d MB", mb)
}

// budget runs one server with a memory budget of mb (0: serve's default
// flags): sets[0] sent c.early after it starts, sets[1] once its warm-up
// is over. It returns the flag template to go on with (the fallback once
// serve refused the first as unknown).
func (r *report) budget(c config, mb int, tmpl string, sets []needleSet) (string, error) {
	warmRe, err := regexp.Compile(c.warmLog)
	if err != nil {
		return tmpl, fmt.Errorf("-warm-log: %w", err)
	}
	var flags []string
	if mb > 0 {
		flags = expand(tmpl, mb)
	}
	logPath := filepath.Join(c.out, "serve-"+strings.ReplaceAll(budgetName(mb), " ", "")+".log")
	s, err := startServer(c.bin, c.data, flags, warmRe, logPath, c.slowN)
	if errors.Is(err, errUnknownFlag) && mb > 0 && tmpl != c.fallbackFlags {
		fmt.Printf("\nserve refused %q as unknown: falling back to %q\n", strings.Join(flags, " "), c.fallbackFlags)
		tmpl = c.fallbackFlags
		flags = expand(tmpl, mb)
		s, err = startServer(c.bin, c.data, flags, warmRe, logPath, c.slowN)
	}
	if err != nil {
		return tmpl, err
	}
	defer s.stop()
	desc := "serve's default flags"
	if len(flags) > 0 {
		desc = strings.Join(flags, " ")
	}
	r.flagsUsed[mb] = desc
	time.Sleep(time.Until(s.started.Add(c.early)))
	t := time.Since(s.started)
	r.early[mb] = s.runPhase(fmt.Sprintf("budget %s (%s): searches sent %.2f s after start, no warm-up (it answered /healthz at %.2f s; log: %s)",
		budgetName(mb), desc, t.Seconds(), s.up.Seconds(), logPath), sets[0], nil)
	fmt.Printf("  (these searches ended %.1f s after start)\n", time.Since(s.started).Seconds())
	how := s.waitSteady(c.steadyMax)
	r.steadyHow[mb] = how
	r.steady[mb] = s.runPhase(fmt.Sprintf("budget %s (%s): steady state, %s", budgetName(mb), desc, how), sets[1], r.base)
	s.stop()
	r.peakAnon[mb], r.peakRSS[mb] = s.peakAnon.Load(), s.peakRSS.Load()
	fmt.Printf("  peaks over the server's life (sampled every 200 ms): anonymous %s MB, RSS %s MB\n", benchkit.MB(r.peakAnon[mb]), benchkit.MB(r.peakRSS[mb]))
	return tmpl, nil
}

// measureCold drops the page cache, where the kernel allows it, under a
// server at steady state with serve's default flags, and measures again
// (ripgrep too, after dropping it once more).
func (r *report) measureCold(c config, tmpl string, set needleSet) {
	if c.skipCold {
		r.coldWhy = "skipped (-no-cold)"
		return
	}
	if err := dropPageCache(); err != nil {
		r.coldWhy = "not permitted here"
		fmt.Printf("\npage cache: cannot drop it here (%v); the figures after dropping it are not measured\n", err)
		return
	}
	warmRe, _ := regexp.Compile(c.warmLog)
	s, err := startServer(c.bin, c.data, nil, warmRe, filepath.Join(c.out, "serve-cold.log"), c.slowN)
	if err != nil {
		r.coldWhy = err.Error()
		fmt.Printf("\npage cache dropped, but the server did not start: %v\n", err)
		return
	}
	defer s.stop()
	how := s.waitSteady(c.steadyMax)
	dropPageCache()
	base := measureBaselineAfterDrop(c, set)
	dropPageCache()
	r.cold = s.runPhase("serve's default flags, steady state ("+how+"), right after dropping the page cache (ripgrep's figures too)", set, base)
}

// measureBaselineAfterDrop measures ripgrep again with the page cache
// just dropped.
func measureBaselineAfterDrop(c config, set needleSet) *baseline {
	b := measureBaseline(c.corpus, set, c.rgN)
	fmt.Printf("\nafter dropping the page cache:")
	b.print()
	return b
}

// others runs bench/live and bench/apiload when given.
func (r *report) others(c config) {
	if c.liveBin != "" {
		vals, out := subBench(c.liveBin, []string{"-bin", c.bin, "-n", "300"}, `p50 ([0-9.]+) ms`, `p99 ([0-9.]+) ms`)
		r.live = vals
		fmt.Printf("\nbench/live (a fresh data directory, as run-import.sh runs it):\n  %s\n", strings.ReplaceAll(out, "\n", "\n  "))
	}
	if c.apiloadBin != "" {
		vals, out := subBench(c.apiloadBin, []string{"-duration", c.apiloadDuration.String()}, `= ([0-9.]+) searches/s`, `p99 (\S+)`)
		r.apiload = vals
		fmt.Printf("\nbench/apiload (its own generated corpus, in one process with its clients):\n  %s\n", strings.ReplaceAll(out, "\n", "\n  "))
	}
}

// printCurve prints the budgets side by side.
func printCurve(c config, r *report) {
	fmt.Printf("\nthe curve, steady state (early: first page p50 sent %.1f s after start):\n", c.early.Seconds())
	fmt.Printf("  %-8s %-36s %9s %9s %9s %9s %8s %8s %7s %7s %7s\n", "budget", "flags", "page p50", "page p99", "count p50", "early p50",
		"peak anon", "anon", "file", "RSS", "Go heap")
	for _, mb := range c.budgets {
		st, ok := r.steady[mb]
		if !ok {
			continue
		}
		fp, cn := st[firstPage.name], st[counts.name]
		heap := "-"
		if cn.goHeap >= 0 {
			heap = benchkit.MB(int64(cn.goHeap))
		}
		fmt.Printf("  %-8s %-36s %9.3f %9.2f %9.2f %9.3f %8s %8s %7s %7s %7s\n", budgetName(mb), r.flagsUsed[mb],
			benchkit.Pct(fp.ours, 0.5), benchkit.Pct(fp.ours, 0.99), benchkit.Pct(cn.ours, 0.5), benchkit.Pct(r.early[mb][firstPage.name].ours, 0.5),
			benchkit.MB(r.peakAnon[mb]), benchkit.MB(cn.mem.Anon), benchkit.MB(cn.mem.File), benchkit.MB(cn.mem.RSS), heap)
	}
	fmt.Println("  (MB; anon, file, RSS and Go heap as read after the steady counts; peak anon sampled every 200 ms over the server's life)")
}
