package store

// Count is how many seqs ranges span.
func Count(ranges []SeqRange) uint64 {
	var n uint64
	for _, r := range ranges {
		n += r.Hi - r.Lo + 1
	}
	return n
}

// Split cuts ascending ranges into a lower and an upper part that span
// about as many seqs each (the upper part one more when the count is odd).
func Split(ranges []SeqRange) (lower, upper []SeqRange) {
	half := Count(ranges) / 2
	var n uint64
	for i, r := range ranges {
		w := r.Hi - r.Lo + 1
		if n+w <= half {
			n += w
			continue
		}
		cut := r.Lo + (half - n) // first seq of the upper part
		lower = append([]SeqRange(nil), ranges[:i]...)
		if cut > r.Lo {
			lower = append(lower, SeqRange{Lo: r.Lo, Hi: cut - 1})
		}
		upper = append([]SeqRange{{Lo: cut, Hi: r.Hi}}, ranges[i+1:]...)
		return lower, upper
	}
	return ranges, nil
}
