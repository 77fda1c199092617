package search

import (
	"cmp"
	"context"
	"errors"
	pihistory "github.com/pi-history/pi-history"
	"slices"

	"github.com/pi-history/pi-history/store"
)

// scanMembers confirms a scoped search by reading the text of each member
// the index says may hold the needle.
func (e *Engine) scanMembers(ctx context.Context, p *prepared, st *Stats) (found, uint64, bool, error) {
	st.Plan, st.PlanKind = "scan "+string(p.req.Scope), pihistory.PlanMembers
	var hits found
	var ar arena // what the hits keep
	// Members the index rules out are not read. The seqs are
	// ascending, so the ranges are too, and every seq in them is a member.
	var ranges []store.SeqRange
	for _, seq := range p.seqs {
		if k := len(ranges); k > 0 && ranges[k-1].Hi+1 == seq {
			ranges[k-1].Hi = seq
		} else {
			ranges = append(ranges, store.SeqRange{Lo: seq, Hi: seq})
		}
	}
	ranges, err := e.mayHold(p, ranges, st)
	if err != nil {
		return found{}, 0, false, err
	}
	// The candidates are the seqs of ranges past the cursor, read in the
	// request's order from the ranges themselves (a list of them was a
	// few KB to write and read back for every branch-scope page).
	if p.hasAfter {
		ranges = pastCursor(ranges, p.after, p.req.NewestFirst)
	}
	n := int(store.Count(ranges))
	// One iterator reads the candidates' texts: a member's text a point
	// read each (Pebble's Get opens the table's iterators every time) took
	// half the time of branch-scope first pages.
	var rd *store.TextReader
	if n > 0 {
		rd = e.st.NewTextReader(ranges[0].Lo, ranges[len(ranges)-1].Hi)
		defer rd.Close()
	}
	next := inOrder(ranges, p.req.NewestFirst)
	for k := 0; k < n; k++ {
		seq := next()
		// With a tree loaded, entries the filter rules out are not read;
		// without one (the current branch, unfiltered) only hits' records
		// are looked up.
		var m *store.Meta
		if p.members != nil {
			i, _ := slices.BinarySearchFunc(p.members, seq, func(m *store.Meta, seq uint64) int { return cmp.Compare(m.Seq, seq) })
			if m = p.members[i]; !p.filter.match(m) {
				continue
			}
		}
		if k%256 == 0 && ctx.Err() != nil {
			return found{}, 0, false, ctx.Err()
		}
		ok := false
		var text hitText
		b, has, err := rd.Text(seq)
		if err != nil {
			return found{}, 0, false, err
		}
		if has {
			st.BytesScanned += int64(len(b))
			if at := p.find.index(b); at >= 0 {
				ok, text = true, p.keep(&ar, b, at)
			}
		}
		st.Scanned++
		if !ok {
			continue
		}
		if m == nil {
			if m, err = e.st.Meta(seq); errors.Is(err, store.ErrNotFound) {
				continue // dropped since the branch was read
			} else if err != nil {
				return found{}, 0, false, err
			}
		}
		st.Confirmed++
		hits.metas = append(hits.metas, m)
		if !p.countOnly {
			hits.texts = append(hits.texts, text)
		}
		if p.limit > 0 && len(hits.metas) == p.limit {
			// More only if a later member may still match.
			return hits, seq, k < n-1, nil
		}
	}
	return hits, 0, false, nil
}

// pastCursor returns the parts of ascending ranges after seq after (before
// it when newest is set), in place.
func pastCursor(ranges []store.SeqRange, after uint64, newest bool) []store.SeqRange {
	out := ranges[:0]
	for _, r := range ranges {
		switch {
		case !newest && r.Hi > after:
			r.Lo = max(r.Lo, after+1)
		case newest && r.Lo < after:
			r.Hi = min(r.Hi, after-1)
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}

// inOrder returns a function that gives the seqs of ascending ranges one
// by one, oldest first or newest first; it must not be called more times
// than the ranges hold seqs.
func inOrder(ranges []store.SeqRange, newest bool) func() uint64 {
	j, at := 0, uint64(0) // the range and the seqs of it given
	return func() uint64 {
		r := ranges[j]
		if newest {
			r = ranges[len(ranges)-1-j]
		}
		seq := r.Lo + at
		if newest {
			seq = r.Hi - at
		}
		if at++; at > r.Hi-r.Lo {
			j, at = j+1, 0
		}
		return seq
	}
}
