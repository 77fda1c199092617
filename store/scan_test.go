package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// scanTexts is a store of 400 entries, a fifth of them without a text,
// and the texts by seq ("" for none).
func scanTexts(t *testing.T) (*Store, []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(31, 32))
	texts := make([]string, 400)
	for i := range texts {
		if r.IntN(5) > 0 {
			texts[i] = fmt.Sprintf("text of seq %d", i+1)
		}
	}
	return pushTexts(t, texts), texts
}

// TestScanTextRangesVisitsExactlyTheTextsOfItsRanges: ranges close together
// (stepped to) and far apart (sought), empty of texts or not, forward and
// reverse, give exactly the texts in them, in order.
func TestScanTextRangesVisitsExactlyTheTextsOfItsRanges(t *testing.T) {
	st, texts := scanTexts(t)
	r := rand.New(rand.NewPCG(33, 34))
	for round := range 300 {
		var ranges []SeqRange
		for lo := uint64(1 + r.IntN(5)); lo <= 420; {
			hi := lo + uint64(r.IntN(6))
			ranges = append(ranges, SeqRange{lo, hi})
			gap := []int{1, 2, 3, 15, 16, 17, 40}[r.IntN(7)]
			lo = hi + uint64(1+r.IntN(gap))
		}
		for _, reverse := range []bool{false, true} {
			var want []uint64
			for _, x := range ranges {
				for seq := x.Lo; seq <= x.Hi; seq++ {
					if seq <= uint64(len(texts)) && texts[seq-1] != "" {
						want = append(want, seq)
					}
				}
			}
			if reverse {
				slices.Reverse(want)
			}
			var got []uint64
			err := st.ScanTextRanges(ranges, reverse, func(seq uint64, text []byte) bool {
				if string(text) != texts[seq-1] {
					t.Fatalf("seq %d reads %q, want %q", seq, text, texts[seq-1])
				}
				got = append(got, seq)
				return true
			})
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("round %d, reverse %v, ranges %v:\n got %v (%v)\nwant %v", round, reverse, ranges, got, err, want)
			}
		}
	}
}
