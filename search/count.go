package search

import (
	"context"
	"errors"

	"github.com/pi-history/pi-history/store"
)

// byFilters reports whether p's needle, if it has no trigram, is tested on
// the chunks' filters: it has bytes to test, and the store builds filters
// (a server, after its warm-up has begun).
func (e *Engine) byFilters(p *prepared) bool { return p.probe.Filters() && e.st.Filtered() }

// mayHold narrows ranges to the entries whose trigram sketch passes the
// needle's probe and, in all scope, whose records pass the request's
// filters, counting the others as skipped. (A scoped search filters its
// members before this.) Without the records' test, a filter that few
// entries pass (a time range, a role) was applied only to confirmed hits,
// so a search whose range held nothing read every text that held the
// needle's trigrams: seconds and a gigabyte at a million entries.
func (e *Engine) mayHold(p *prepared, ranges []store.SeqRange, st *Stats) ([]store.SeqRange, error) {
	if len(ranges) == 0 {
		return ranges, nil
	}
	if !p.probe.Empty() || e.byFilters(p) && p.probe.FilterWorthIt() {
		// A needle of one or two characters has no trigram for the
		// sketches, but its bytes are in the chunks' filters (as byte
		// trigrams, a pair or a byte), where chunks have them (a server
		// after its warm-up): a rare one read every text of the history
		// (280 ms at a million entries). Once the filters have stopped
		// ruling chunks out for it (a dense needle), and in a process
		// without filters, its windows are read whole, as before filters
		// (sending them through MayHold there only loaded sketches).
		out, skipped, err := e.mayHoldAny(p, ranges)
		st.Skipped += skipped
		if err != nil {
			return nil, err
		}
		ranges = out
	}
	if p.scoped || p.filter.empty() {
		return ranges, nil
	}
	var out []store.SeqRange
	for _, r := range ranges {
		for seq := r.Lo; seq <= r.Hi; seq++ {
			m, err := e.st.Meta(seq)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !p.filter.match(m) {
				st.Skipped++
				continue
			}
			if n := len(out); n > 0 && out[n-1].Hi == seq-1 {
				out[n-1].Hi = seq
			} else {
				out = append(out, store.SeqRange{Lo: seq, Hi: seq})
			}
		}
	}
	return out, nil
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

// countRanges counts the hits of the request in ranges, entries that
// passed its sketches and filters (see restOfWindow).
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
