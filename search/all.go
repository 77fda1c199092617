package search

import (
	"context"
	"fmt"

	pihistory "github.com/pi-history/pi-history"
)

// searchAll answers an all-scope search: the windows of its range in
// request order, each narrowed to the index's candidates (see
// collector.scan), until the page is full.
func (e *Engine) searchAll(ctx context.Context, p *prepared, st *Stats) (found, uint64, bool, error) {
	last := e.st.LastSeq()
	c := &collector{e: e, p: p, st: st}
	defer c.close()
	lo, hi := uint64(1), last
	if p.hasAfter {
		if p.req.NewestFirst {
			hi = p.after - 1
		} else {
			lo = p.after + 1
		}
	}
	if p.hasAfter && p.after == 0 && p.req.NewestFirst {
		return c.result(nil)
	}
	switch {
	case p.pat != nil && len(p.pat.lits) > 0 && p.queries == nil:
		st.Plan, st.PlanKind = "scan (a literal the pattern requires is shorter than a trigram; "+p.pat.describe()+")", pihistory.PlanScan
	case p.pat != nil && p.queries == nil:
		st.Plan, st.PlanKind = "scan ("+p.pat.describe()+")", pihistory.PlanScan
	case e.ix == nil:
		st.Plan, st.PlanKind = "scan (no index)", pihistory.PlanScan
	case p.queries == nil:
		st.Plan, st.PlanKind = "scan (needle shorter than 3 bytes)", pihistory.PlanScan
	default:
		// The mark is read before the postings are asked: every entry up
		// to it is in them by then.
		through := e.ix.IndexedThrough()
		if e.nowhere(p) {
			st.Plan, st.PlanKind = "index: no entry holds every trigram of the needle", pihistory.PlanNowhere
			lo = max(lo, through+1) // only entries the index has not taken in can hold it
		} else {
			st.Plan, st.PlanKind = "index (trigram postings)", pihistory.PlanIndex
			if len(p.queries) > 1 {
				st.Plan = fmt.Sprintf("index (the candidates of each of %d literals)", len(p.queries))
			}
		}
		if p.pat != nil {
			st.Plan += "; " + p.pat.describe()
		}
	}
	err := c.scan(ctx, lo, hi)
	return c.result(err)
}

// nowhere says whether, for each of p's queries, no entry the index has
// taken in holds every trigram of its literal.
func (e *Engine) nowhere(p *prepared) bool {
	for _, q := range p.queries {
		if !q.Nowhere() {
			return false
		}
	}
	return len(p.queries) > 0
}
