package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// oneShot is the CLI with no server: each needle's time for a first page
// and for every hit, beside ripgrep's on the same needles.
type oneShot struct {
	page, all     []float64 // ms
	rgPage, rgAll []float64
	errs          int
	firstErr      string
	names         []string // the needles, parallel to page and all
}

// measureOneShot runs 'bin search' once per needle (a first page of 50,
// then --all) with no server running, then ripgrep on the same needles.
func measureOneShot(bin, data, corpus string, needles []string) oneShot {
	o := oneShot{names: needles}
	run := func(nd string, args ...string) float64 {
		var errb bytes.Buffer
		cmd := exec.Command(bin, append(append([]string{"search", "--data", data, "--color", "never"}, args...), "--", nd)...)
		cmd.Stdout, cmd.Stderr = io.Discard, &errb
		t0 := time.Now()
		err := cmd.Run()
		el := float64(time.Since(t0).Microseconds()) / 1000
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) { // 1: nothing matched
			if o.errs == 0 {
				o.firstErr = fmt.Sprintf("%q: %v: %s", nd, err, strings.TrimSpace(errb.String()))
			}
			o.errs++
		}
		return el
	}
	for _, nd := range needles {
		o.page = append(o.page, run(nd, "--limit", "50"))
		o.all = append(o.all, run(nd, "--all"))
	}
	o.rgPage = benchkit.RgTimes(corpus, needles, 50)
	o.rgAll = benchkit.RgAll(corpus, needles)
	return o
}

func (o oneShot) print(slowN int) {
	fmt.Printf("\none-shot CLI, no server ('pi-history search --data DIR', %d needles of the 3+ character group; rg over the same JSONL):\n", len(o.names))
	line := func(name string, ours, rg []float64, rgName string) {
		fmt.Printf("  %-28s p50 %8.1f ms, worst %8.1f ms | %s p50 %7.1f ms, worst %7.1f ms | rg/us (medians) %.2fx\n", name,
			benchkit.Pct(ours, 0.5), benchkit.Pct(ours, 1), rgName, benchkit.Pct(rg, 0.5), benchkit.Pct(rg, 1),
			benchkit.Pct(rg, 0.5)/max(benchkit.Pct(ours, 0.5), 0.001))
	}
	line("first page (--limit 50)", o.page, o.rgPage, "rg stopped at 50 lines")
	line("every hit (--all)", o.all, o.rgAll, "rg printing every line")
	if len(o.all) > 0 {
		fmt.Printf("  slowest --all: %q\n", o.names[slices.Index(o.all, slices.Max(o.all))])
	}
	if slowN > 0 && len(o.rgAll) == len(o.all) {
		idx := make([]int, len(o.all))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return o.all[idx[a]] > o.all[idx[b]] })
		for _, i := range idx[:min(slowN, len(idx))] {
			fmt.Printf("    slow --all: %8.1f ms (rg %6.1f ms, first page %6.1f ms)  %q\n", o.all[i], o.rgAll[i], o.page[i], o.names[i])
		}
	}
	if o.errs > 0 {
		fmt.Printf("  %d runs failed; the first: %s\n", o.errs, o.firstErr)
	}
}
