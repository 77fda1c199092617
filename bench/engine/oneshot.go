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
// and for every hit, beside ripgrep's on the same needles, and the
// memory each run held (measured in a second, untimed pass).
type oneShot struct {
	page, all     []float64 // ms
	rgPage, rgAll []float64
	// pageMem and allMem are each run's highest anonymous memory and
	// peak RSS, sampled (benchkit.RunSampled); none when sampling failed.
	pageMem, allMem []benchkit.Memory
	memErr          error // why they are none
	errs            int
	firstErr        string
	names           []string // the needles, parallel to page and all
}

// measureOneShot runs 'bin search' once per needle (a first page of 50,
// then --all) with no server running, then ripgrep on the same needles,
// then every run of 'bin search' again with its memory sampled.
func measureOneShot(bin, data, corpus string, needles []string) oneShot {
	o := oneShot{names: needles}
	command := func(nd string, args ...string) (*exec.Cmd, *bytes.Buffer) {
		var errb bytes.Buffer
		cmd := exec.Command(bin, append(append([]string{"search", "--data", data, "--color", "never"}, args...), "--", nd)...)
		cmd.Stdout, cmd.Stderr = io.Discard, &errb
		return cmd, &errb
	}
	failed := func(nd string, err error, errb *bytes.Buffer) bool {
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) { // 1: nothing matched
			if o.errs == 0 {
				o.firstErr = fmt.Sprintf("%q: %v: %s", nd, err, strings.TrimSpace(errb.String()))
			}
			o.errs++
			return true
		}
		return false
	}
	run := func(nd string, args ...string) float64 {
		cmd, errb := command(nd, args...)
		t0 := time.Now()
		err := cmd.Run()
		el := float64(time.Since(t0).Microseconds()) / 1000
		failed(nd, err, errb)
		return el
	}
	for _, nd := range needles {
		o.page = append(o.page, run(nd, "--limit", "50"))
		o.all = append(o.all, run(nd, "--all"))
	}
	o.rgPage = benchkit.RgTimes(corpus, needles, 50)
	o.rgAll = benchkit.RgAll(corpus, needles)
	// The timed runs counted failures already: a run that fails here
	// leaves the memory unsampled, and says why.
	sample := func(nd string, args ...string) (benchkit.Memory, error) {
		cmd, errb := command(nd, args...)
		m, err := benchkit.RunSampled(cmd, 2*time.Millisecond)
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			err = nil // nothing matched
		}
		if err != nil {
			err = fmt.Errorf("%q: %v: %s", nd, err, strings.TrimSpace(errb.String()))
		}
		return m, err
	}
	for _, nd := range needles {
		pm, err := sample(nd, "--limit", "50")
		var am benchkit.Memory
		if err == nil {
			am, err = sample(nd, "--all")
		}
		if err != nil {
			o.pageMem, o.allMem, o.memErr = nil, nil, err
			break
		}
		o.pageMem, o.allMem = append(o.pageMem, pm), append(o.allMem, am)
	}
	return o
}

// memPct is the p-th percentile of one figure of ms, in MB.
func memPct(ms []benchkit.Memory, p float64, of func(benchkit.Memory) int64) float64 {
	xs := make([]float64, len(ms))
	for i, m := range ms {
		xs[i] = float64(of(m)) / (1 << 20)
	}
	return benchkit.Pct(xs, p)
}

func anonOf(m benchkit.Memory) int64 { return m.Anon }
func peakOf(m benchkit.Memory) int64 { return m.Peak }

func (o oneShot) print(slowN int) {
	fmt.Printf("\none-shot CLI, no server ('pi-history search --data DIR', %d needles of the 3+ character group; rg over the same JSONL):\n", len(o.names))
	line := func(name string, ours, rg []float64, rgName string) {
		fmt.Printf("  %-28s p50 %8.1f ms, worst %8.1f ms | %s p50 %7.1f ms, worst %7.1f ms | rg/us (medians) %.2fx\n", name,
			benchkit.Pct(ours, 0.5), benchkit.Pct(ours, 1), rgName, benchkit.Pct(rg, 0.5), benchkit.Pct(rg, 1),
			benchkit.Pct(rg, 0.5)/max(benchkit.Pct(ours, 0.5), 0.001))
	}
	line("first page (--limit 50)", o.page, o.rgPage, "rg stopped at 50 lines")
	line("every hit (--all)", o.all, o.rgAll, "rg printing every line")
	if o.memErr != nil {
		fmt.Printf("  memory: not sampled, a run failed: %v\n", o.memErr)
	}
	if len(o.allMem) > 0 {
		fmt.Printf("  memory (each run again, untimed, /proc sampled every 2 ms), anonymous p50 / max, peak RSS with file-backed pages p50 / max:\n")
		fmt.Printf("    first page %.0f / %.0f MB, %.0f / %.0f MB; --all %.0f / %.0f MB, %.0f / %.0f MB\n",
			memPct(o.pageMem, 0.5, anonOf), memPct(o.pageMem, 1, anonOf), memPct(o.pageMem, 0.5, peakOf), memPct(o.pageMem, 1, peakOf),
			memPct(o.allMem, 0.5, anonOf), memPct(o.allMem, 1, anonOf), memPct(o.allMem, 0.5, peakOf), memPct(o.allMem, 1, peakOf))
	}
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
