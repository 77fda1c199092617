package main

import (
	"fmt"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// baseline is ripgrep's times over the same JSONL for some needles of each
// group (at: their indexes in the group, spread evenly through it).
type baseline struct {
	at        map[string][]int
	rgC, rg50 map[string][]float64 // rg -F -c over everything; rg -F stopped at 50 lines (branch scope: the session's journal, -j1)
}

// measureBaseline runs ripgrep for up to rgN needles of every group of set.
func measureBaseline(corpus string, set needleSet, rgN int) *baseline {
	b := &baseline{at: map[string][]int{}, rgC: map[string][]float64{}, rg50: map[string][]float64{}}
	if !benchkit.HaveRg() || rgN <= 0 {
		return b
	}
	for _, k := range kinds {
		qs := set[k.name]
		at := benchkit.Spread(len(qs), rgN)
		sub := benchkit.Choose(qs, at)
		nds := make([]string, len(sub))
		for i, q := range sub {
			nds[i] = q.needle
		}
		b.at[k.name] = at
		switch k {
		case branch:
			b.rg50[k.name] = benchkit.RgInOrder(func(i int) []string { return []string{sub[i].file} }, nds, 50)
		case counts:
			b.rgC[k.name] = benchkit.RgTimes(corpus, nds, 0)
		default:
			b.rgC[k.name] = benchkit.RgTimes(corpus, nds, 0)
			b.rg50[k.name] = benchkit.RgTimes(corpus, nds, 50)
		}
	}
	return b
}

// print writes ripgrep's medians, one line per group.
func (b *baseline) print() {
	fmt.Printf("\nripgrep over the same JSONL (rg-c: rg -F -c, every byte read; rg50: rg -F stopped after 50 lines in the order\n" +
		"its parallel walk prints them; branch scope: rg -j1 -F over the session's journal, stopped after 50 lines):\n")
	for _, k := range kinds {
		if len(b.at[k.name]) == 0 {
			fmt.Printf("  %-34s not run\n", k.name)
			continue
		}
		fmt.Printf("  %-34s %3d needles: rg-c p50 %s ms, rg50 p50 %s ms\n", k.name, len(b.at[k.name]), msOrDash(b.rgC[k.name]), msOrDash(b.rg50[k.name]))
	}
}

func msOrDash(ts []float64) string {
	if len(ts) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", benchkit.Pct(ts, 0.5))
}

// ratios returns, for the needles ripgrep ran, its time over ours (ours by
// the group's index, -1 where the query failed): against rg -c and
// against rg stopped at 50 lines.
func (b *baseline) ratios(k kind, ours []float64) (rc, r50 []float64) {
	if b == nil {
		return nil, nil
	}
	per := func(base []float64) []float64 {
		var out []float64
		for i, j := range b.at[k.name] {
			if i < len(base) && j < len(ours) && ours[j] >= 0 {
				out = append(out, base[i]/max(ours[j], 0.001))
			}
		}
		return out
	}
	return per(b.rgC[k.name]), per(b.rg50[k.name])
}
