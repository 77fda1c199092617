// Package benchkit holds what the benchmarks under bench/ share: order
// statistics, ripgrep as the baseline, needle sampling, and readings of a
// process's memory (/proc/PID/status, a Prometheus /metrics page). Nothing
// here is a test: the benchmarks print figures that vary with the machine.
package benchkit

import (
	"slices"
)

// Pct returns the p-quantile of xs (0.5: the median, 0.99: p99) as the
// element at rank p·n of the sorted values (the largest for p near 1), or
// 0 when xs is empty. xs is not reordered.
func Pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(min(int(p*float64(len(s))), len(s)-1), 0)]
}

// Spread returns k indexes spread evenly over [0, n) (all of them when
// k >= n): the needles of a group that ripgrep also runs. Taking a group's
// first k instead times them right after ripgrep ran the group before,
// whose processes leave our data out of the CPU caches (the first queries
// ran two to five times slower than the same queries later).
func Spread(n, k int) []int {
	k = max(min(k, n), 0)
	out := make([]int, k)
	for i := range out {
		out[i] = i * n / k
	}
	return out
}

// Choose returns the elements of xs at the indexes at.
func Choose[T any](xs []T, at []int) []T {
	out := make([]T, len(at))
	for i, k := range at {
		out[i] = xs[k]
	}
	return out
}

// Ratios returns, for each time in base, base's time over ours at the
// same index (how many times faster ours was); ours below a microsecond
// counts as one.
func Ratios(ours, base []float64) []float64 {
	var out []float64
	for i, b := range base {
		if i >= len(ours) {
			break
		}
		out = append(out, b/max(ours[i], 0.001))
	}
	return out
}
