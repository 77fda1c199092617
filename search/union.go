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
