package main

import (
	"fmt"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// mbOf is bytes as MB, for the goals' figures.
func mbOf(b int64) float64 { return float64(b) / (1 << 20) }

// searchGoals judges one phase's searches; prefix names the phase.
func searchGoals(prefix string, p phase, base *baseline, why string) []benchkit.Goal {
	g := func(name string) []float64 {
		if p == nil {
			return nil
		}
		return p[name].ours
	}
	at := func(xs []float64, q float64) float64 {
		if len(xs) == 0 {
			return -1
		}
		return benchkit.Pct(xs, q)
	}
	fp := g(firstPage.name)
	var rc, r50 []float64
	if p != nil {
		rc, r50 = base.ratios(firstPage, p[firstPage.name].aligned)
	}
	rgWhy := why
	if len(rc) == 0 && p != nil {
		rgWhy = "ripgrep did not run"
	}
	ratio := at(rc, 0.5)
	rg := benchkit.AtLeast(prefix+"first page 3+ chars ≥ 100x rg (median per needle, vs rg -F -c)", ratio, 100, "%.0fx", rgWhy)
	if ratio >= 0 && len(r50) > 0 {
		rg.Measured += fmt.Sprintf(" (vs rg stopped at 50 lines: %.0fx)", benchkit.Pct(r50, 0.5))
	}
	return []benchkit.Goal{
		benchkit.AtMost(prefix+"first page 3+ chars p50 ≤ 2 ms", at(fp, 0.5), 2, "%.3f ms", why),
		benchkit.AtMost(prefix+"first page 3+ chars p99 ≤ 30 ms", at(fp, 0.99), 30, "%.2f ms", why),
		rg,
		benchkit.AtMost(prefix+"first page 1-2 chars p50 ≤ 5 ms", at(g(shortPage.name), 0.5), 5, "%.3f ms", why),
		benchkit.AtMost(prefix+"branch scope p50 ≤ 1 ms", at(g(branch.name), 0.5), 1, "%.3f ms", why),
		benchkit.AtMost(prefix+"count of 20-char needles p50 ≤ 50 ms", at(g(counts.name), 0.5), 50, "%.2f ms", why),
		benchkit.AtMost(prefix+"count of 20-char needles p99 ≤ 500 ms", at(g(counts.name), 0.99), 500, "%.1f ms", why),
	}
}

// One piece (63 lines): the table's rows in the order, each
// reading its own part of the report.
func goals(c config, r *report) []benchkit.Goal {
	b := r.judged()
	st := r.steady[b]
	var out []benchkit.Goal
	heap := benchkit.AtMost("server heap (anonymous memory: Go heap and the rest) ≤ 256 MB, peak", mbOf(r.peakAnon[b]), 256, "%.0f MB", "no server ran")
	if cn, ok := st[counts.name]; ok {
		heap.Measured += fmt.Sprintf(" (steady %s MB, Go heap in use %s MB)", benchkit.MB(cn.mem.Anon), goHeapMB(cn.goHeap))
		out = append(out, heap, benchkit.Goal{Goal: "total RSS, with file-backed pages (printed)",
			Measured: fmt.Sprintf("%s MB steady (file-backed %s MB), peak %s MB", benchkit.MB(cn.mem.RSS), benchkit.MB(cn.mem.File), benchkit.MB(r.peakRSS[b]))})
	} else {
		out = append(out, heap)
	}
	out = append(out, benchkit.Goal{Goal: "heap ≤ 512 MB at 10M entries (trend over 1M, 2M, 4M)", Measured: "one size per run: run at each size"})
	out = append(out, searchGoals("", st, r.base, "no server ran")...)
	if r.cold != nil {
		out = append(out, searchGoals("page cache dropped: ", r.cold, r.base, "")...)
	} else {
		out = append(out, benchkit.Goal{Goal: "the same figures after dropping the page cache", Measured: r.coldWhy})
	}
	early, steady := -1.0, -1.0
	if e, ok := r.early[b]; ok && len(e[firstPage.name].ours) > 0 && len(st[firstPage.name].ours) > 0 {
		early, steady = benchkit.Pct(e[firstPage.name].ours, 0.5), benchkit.Pct(st[firstPage.name].ours, 0.5)
	}
	nw := benchkit.AtMost(fmt.Sprintf("no warm-up: first page p50 %.0f s after start ≤ 2x steady", c.early.Seconds()), early/max(steady, 0.001), 2, "%.1fx", "no server ran")
	if early >= 0 {
		nw.Measured += fmt.Sprintf(" (%.3f against %.3f ms)", early, steady)
	} else {
		nw = benchkit.Goal{Goal: nw.Goal, Measured: "no server ran"}
	}
	out = append(out, nw)
	if o := r.cli; o != nil && len(o.all) > 0 {
		rgAll := -1.0
		if len(o.rgAll) > 0 {
			rgAll = benchkit.Pct(o.rgAll, 0.5)
		}
		cliP50 := benchkit.AtMost("one-shot CLI --all p50 ≤ rg's", benchkit.Pct(o.all, 0.5)/max(rgAll, 0.001), 1, "%.2fx rg", "ripgrep did not run")
		cliP50.Measured = fmt.Sprintf("%.0f ms against rg %.0f ms", benchkit.Pct(o.all, 0.5), rgAll)
		if rgAll < 0 {
			cliP50 = benchkit.Goal{Goal: cliP50.Goal, Measured: "ripgrep did not run"}
		}
		out = append(out, cliP50, benchkit.AtMost("one-shot CLI --all worst ≤ 1 s", benchkit.Pct(o.all, 1), 1000, "%.0f ms", ""))
		cliMem := benchkit.Goal{Goal: "one-shot CLI heap (anonymous memory) ≤ 256 MB, largest run", Measured: "not sampled (a run failed)"}
		if len(o.allMem) > 0 {
			cliMem = benchkit.AtMost(cliMem.Goal, max(memPct(o.allMem, 1, anonOf), memPct(o.pageMem, 1, anonOf)), 256, "%.0f MB", "")
			cliMem.Measured += fmt.Sprintf(" (peak RSS with file-backed pages %.0f MB)", max(memPct(o.allMem, 1, peakOf), memPct(o.pageMem, 1, peakOf)))
		}
		out = append(out, cliMem)
	} else {
		out = append(out, benchkit.Goal{Goal: "one-shot CLI --all p50 ≤ rg's, worst ≤ 1 s", Measured: "not run (-no-cli)"})
	}
	impWhy := "the data directory existed: not imported here"
	impRate, impRSS := -1.0, -1.0
	if r.imp != nil {
		impRate, impRSS = float64(r.jsonl)/1e6/r.imp.seconds, mbOf(r.imp.peakRSS)
	}
	out = append(out,
		benchkit.AtLeast("import ≥ 15 MB/s", impRate, 15, "%.1f MB/s", impWhy),
		benchkit.AtMost("import peak RSS ≤ 1 GB", impRSS, 1024, "%.0f MB", impWhy),
		benchkit.AtMost("store + index (the whole data directory) ≤ 1.0x the JSONL", float64(r.dataBytes)/float64(r.jsonl), 1, "%.2fx", ""),
		benchkit.AtMost("append → searchable p99 ≤ 100 ms (bench/live)", pick(r.live, 1), 100, "%.1f ms", "not run (-live)"),
		benchkit.AtLeast("≥ 5,000 searches/s at concurrency 16 with a writer (bench/apiload)", pick(r.apiload, 0), 5000, "%.0f/s", "not run (-apiload)"),
		benchkit.AtMost("  … with p99 ≤ 20 ms", pick(r.apiload, 1), 20, "%.2f ms", "not run (-apiload)"),
	)
	knob := benchkit.Goal{Goal: "one knob: serve --memory-mb N", Measured: "serve has no --memory-mb (budgets ran with -fallback-flags)", Met: benchkit.Missed}
	if r.knob {
		knob = benchkit.Goal{Goal: knob.Goal, Measured: "serve has it; the curve is above", Met: benchkit.Met}
	}
	return append(out, knob)
}

// pick returns xs[i], or -1 (not measured).
func pick(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return -1
}

func goHeapMB(b float64) string {
	if b < 0 {
		return "-"
	}
	return benchkit.MB(int64(b))
}
