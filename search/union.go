package search

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/store"
)

// planEach plans each of a pattern's literals (one of which every match
// holds) in the index, indexed through through. ok is false when one of
// them cannot be narrowed by it (too short, every trigram common, too
// many candidates): then the union would be no better than the sketches.
// A literal with a trigram that occurs nowhere has no candidates and no
// plan.
func (e *Engine) planEach(ctx context.Context, lits [][]byte, through uint64) ([]*index.Plan, bool, error) {
	plans := []*index.Plan{}
	for _, l := range lits {
		pl, err := e.ix.PlanNeedleWithin(ctx, string(l), broadBound(through, utf8.RuneCount(l), e.st.Filtered()))
		switch {
		case errors.Is(err, index.ErrNoTrigrams), errors.Is(err, index.ErrNoWindow):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		case pl.AllCommon || pl.Broad:
			return nil, false, nil
		case pl.Zero != "":
			continue
		}
		plans = append(plans, &pl)
	}
	return plans, true, nil
}

// candidatesOfEach is candidates for c.plans: the blocks in [lo, hi] that
// any of them proposes, confirmed in request order.
func (c *collector) candidatesOfEach(ctx context.Context, lo, hi uint64) error {
	var ranges []store.SeqRange
	for _, pl := range c.plans {
		var blocks []index.Block
		if pl.Direct {
			blocks = pl.Window(lo, hi)
		} else {
			var err error
			if blocks, err = c.e.ix.Candidates(ctx, pl.Trigrams, lo, hi); err != nil {
				return err
			}
		}
		c.st.Candidates += len(blocks)
		rs := make([]store.SeqRange, len(blocks))
		for i, b := range blocks {
			rs[i] = store.SeqRange{Lo: b.Lo, Hi: b.Hi}
		}
		slices.SortFunc(rs, func(a, b store.SeqRange) int { return cmp.Compare(a.Lo, b.Lo) })
		ranges = unionRanges(ranges, rs)
	}
	if len(ranges) == 0 || c.full() {
		return nil
	}
	ranges, err := c.e.mayHold(c.p, ranges, c.st)
	if err != nil {
		return err
	}
	return c.scanWindow(ctx, lo, hi, ranges)
}

// mayHoldAny is store.MayHold of p's probe, or for a pattern that requires
// one of several literals, the entries whose sketch passes any of their
// probes (the union of each one's ranges; skipped counts the entries none
// passes).
func (e *Engine) mayHoldAny(p *prepared, ranges []store.SeqRange) ([]store.SeqRange, int, error) {
	if len(p.probes) < 2 {
		return e.st.MayHold(ranges, p.probe)
	}
	var out []store.SeqRange
	for _, pr := range p.probes {
		got, _, err := e.st.MayHold(ranges, pr)
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
