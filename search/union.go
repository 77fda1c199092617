package search

import (
	"github.com/pi-history/pi-history/store"
)

// mayHoldAny returns the entries of ranges that may hold p's needle: the
// candidates of its query, or for a pattern that requires one of several
// literals the union of each one's; every entry when p has no query.
// skipped counts the entries ruled out.
func (e *Engine) mayHoldAny(p *prepared, ranges []store.SeqRange) ([]store.SeqRange, int, error) {
	switch len(p.queries) {
	case 0:
		return ranges, 0, nil
	case 1:
		return p.queries[0].MayHold(ranges, nil)
	}
	var out []store.SeqRange
	for _, q := range p.queries {
		got, _, err := q.MayHold(ranges, nil)
		if err != nil {
			return nil, 0, err
		}
		out = unionRanges(out, got)
	}
	return out, int(store.Count(ranges) - store.Count(out)), nil
}

// unionRanges merges two ascending lists of disjoint ranges into one.
func unionRanges(a, b []store.SeqRange) []store.SeqRange {
	out := make([]store.SeqRange, 0, len(a)+len(b))
	add := func(r store.SeqRange) {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			return
		}
		out = append(out, r)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || i < len(a) && a[i].Lo <= b[j].Lo {
			add(a[i])
			i++
		} else {
			add(b[j])
			j++
		}
	}
	return out
}
