package store

import (
	"slices"
	"testing"
)

// TestSplitHalvesTheSeqs: the two parts hold every seq of the ranges
// once, in order, the lower part below the upper, about half each.
func TestSplitHalvesTheSeqs(t *testing.T) {
	for _, rs := range [][]SeqRange{
		{{Lo: 1, Hi: 1}},
		{{Lo: 1, Hi: 2}},
		{{Lo: 5, Hi: 104}},
		{{Lo: 1, Hi: 3}, {Lo: 10, Hi: 10}, {Lo: 20, Hi: 29}},
		{{Lo: 1, Hi: 1}, {Lo: 3, Hi: 3}, {Lo: 5, Hi: 5}, {Lo: 7, Hi: 7}},
		{{Lo: 100, Hi: 199}, {Lo: 300, Hi: 300}},
	} {
		lower, upper := Split(rs)
		var all, got []uint64
		for _, r := range rs {
			for s := r.Lo; s <= r.Hi; s++ {
				all = append(all, s)
			}
		}
		for _, part := range [][]SeqRange{lower, upper} {
			for _, r := range part {
				if r.Lo > r.Hi {
					t.Fatalf("%v: empty range %v in %v | %v", rs, r, lower, upper)
				}
				for s := r.Lo; s <= r.Hi; s++ {
					got = append(got, s)
				}
			}
		}
		if !slices.Equal(got, all) {
			t.Errorf("%v split into %v | %v: seqs %v", rs, lower, upper, got)
		}
		if d := int(Count(upper)) - int(Count(lower)); d < 0 || d > 1 {
			t.Errorf("%v split into %v | %v: %d and %d seqs", rs, lower, upper, Count(lower), Count(upper))
		}
	}
}
