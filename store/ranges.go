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

// inVisitOrder calls fn with each range of ranges that is not empty (Lo
// <= Hi), in order or, when reverse, last first, until fn reports false
// or fails.
func inVisitOrder(ranges []SeqRange, reverse bool, fn func(r SeqRange) (bool, error)) error {
	for k := range ranges {
		r := ranges[k]
		if reverse {
			r = ranges[len(ranges)-1-k]
		}
		if r.Lo > r.Hi {
			continue
		}
		if more, err := fn(r); err != nil || !more {
			return err
		}
	}
	return nil
}
