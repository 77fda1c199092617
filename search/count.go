package search

import (
	"context"

	"github.com/pi-history/pi-history/store"
)

// mayHold narrows ranges to the entries the index says may hold the
// needle (see mayHoldAny) and, in all scope, whose records pass the request's
// filters, counting the others as skipped. (A scoped search filters its
// members before this.) Without the records' test, a filter that few
// entries pass (a time range, a role) was applied only to confirmed hits,
// so a search whose range held nothing read every text that held the
// needle's trigrams: seconds and a gigabyte at a million entries.
func (e *Engine) mayHold(p *prepared, ranges []store.SeqRange, st *Stats) ([]store.SeqRange, error) {
	if len(ranges) == 0 {
		return ranges, nil
	}
	if len(p.queries) > 0 {
		out, skipped, err := e.mayHoldAny(p, ranges)
		st.Skipped += skipped
		if err != nil {
			return nil, err
		}
		ranges = out
		st.Candidates += int(store.Count(ranges))
	}
	if p.scoped || p.filter.empty() {
		return ranges, nil
	}
	var out []store.SeqRange
	n := 0
	err := e.st.ScanMetaRanges(ranges, func(m *store.Meta) bool {
		n++
		if !p.filter.match(m) {
			return true
		}
		if k := len(out); k > 0 && out[k-1].Hi == m.Seq-1 {
			out[k-1].Hi = m.Seq
		} else {
			out = append(out, store.SeqRange{Lo: m.Seq, Hi: m.Seq})
		}
		return true
	})
	st.Skipped += n - int(store.Count(out))
	return out, err
}

// count counts the hits of the request without limit: every one, or with
// hasAfter those after seq after (in the request's order), as a cursor
// there would page them.
func (e *Engine) count(ctx context.Context, p *prepared, st *Stats, hasAfter bool, after uint64) (int, error) {
	q := *p
	q.limit, q.hasAfter, q.after, q.countOnly = 0, hasAfter, after, true
	var tmp Stats
	var hits found
	var err error
	if q.scoped {
		hits, _, _, err = e.scanMembers(ctx, &q, &tmp)
	} else {
		hits, _, _, err = e.searchAll(ctx, &q, &tmp)
	}
	if tmp.Plan != "" && tmp.Plan != st.Plan {
		st.Plan += "; count: " + tmp.Plan
		st.CountPlanKind = tmp.PlanKind
	}
	st.Candidates += tmp.Candidates
	st.Scanned += tmp.Scanned
	st.BytesScanned += tmp.BytesScanned
	st.Skipped += tmp.Skipped
	return len(hits.metas), err
}

// countRanges counts the hits of the request in ranges, index candidates
// that passed its filters (see restOfWindow).
func (e *Engine) countRanges(ctx context.Context, p *prepared, st *Stats, ranges []store.SeqRange) (int, error) {
	if len(ranges) == 0 {
		return 0, nil
	}
	q := *p
	q.limit, q.countOnly = 0, true
	var tmp Stats
	c := &collector{e: e, p: &q, st: &tmp}
	defer c.close()
	err := c.scanRanges(ctx, ranges)
	st.Scanned += tmp.Scanned
	st.BytesScanned += tmp.BytesScanned
	return len(c.hits), err
}
