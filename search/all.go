package search

import (
	"context"
	"errors"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/store"
	"github.com/pi-history/pi-history/trigram"
)

// broadShare: when the index leaves more than one indexed block in
// broadShare as candidates for a needle of broadMinRunes characters or
// more, the search scans the sketches of every entry instead. A candidate
// block is tested on its own (its column words and sketches out of cache);
// a long stretch is tested 64 entries at a time, and a long needle's many
// trigrams and 4-grams rule out nearly every entry. Measured at a million
// entries (two runs each of `bench/search -only chars -rg 0 -each`, with
// and without the rule; sums of per-needle medians over the needles whose
// plan it changes): 13-40 characters 104.1 against 144.6 ms (19 needles),
// 9-12 characters 41.8 against 50.6 (8), 6-8 characters 29.7 against 31.2
// (7), 3-5 characters 61.0 against 32.1 (12: a short needle passes many
// sketches, so the scan reads many texts). The share was chosen before
// the 9-character floor, in-process and alternating over the 166
// index-planned needles of the benchmark's samples: sums of medians 453
// against 499 ms with a bound of 3,000 blocks (1 in 21), 472 against 503
// with 1,500, 483 against 523 with 2,000, 526 against 517 with 5,000.
//
// broadShareFiltered is the share in a store whose chunks have filters (a
// server after its warm-up): a filter's long set rules out nine chunks in
// ten for a needle of 8 bytes or more before any sketch is read, so a scan
// costs far less than before, and a scan pays from fewer candidates on.
// In-process, alternating against 20, over the benchmark's needles
// (median of per-needle ratios; sums of medians): 13-40 characters 0.93
// (0.88) with 60, 0.96 (0.91) with 100, 1.01 (0.92) with 200; exact counts
// of 20 characters 0.98 (0.98), 1.03 (1.03), 1.00 (1.03).
const (
	broadShare         = 20
	broadShareFiltered = 60
	broadMinRunes      = 9
)

// Below broadMinBlocks indexed blocks (65,536 entries) the index is always
// used: either way costs little there, and the rule was measured at a
// million. (A variable for tests.)
var broadMinBlocks uint64 = 4096

// broadBound returns the most candidate blocks the index may leave a
// needle of runes characters before a scan pays better (see broadShare),
// through being the index's mark and filtered whether the store's chunks
// have filters; 0 when the index is to be used however many it leaves.
func broadBound(through uint64, runes int, filtered bool) int {
	n := through / index.BlockSize
	if runes < broadMinRunes || n < broadMinBlocks {
		return 0
	}
	if filtered {
		return int(n / broadShareFiltered)
	}
	return int(n / broadShare)
}

// searchAll answers an all-scope search: index windows for what is indexed,
// a scan for what is not.
//
// One piece (157 lines): it is the all-scope plan, read top to bottom
// as the order in which a page is answered (the first occurrences, then
// the index or a scan of the indexed range, then the unindexed tail), and
// each step decides from what the one before found (answered, from, the
// index's plan) whether the next runs at all.
func (e *Engine) searchAll(ctx context.Context, p *prepared, st *Stats) (found, uint64, bool, error) {
	last := e.st.LastSeq()
	c := &collector{e: e, p: p, st: st}
	defer c.close()
	if p.pat != nil && p.lit != nil {
		// A pattern answered as its one required literal says so.
		defer func() { st.Plan += "; " + p.pat.describe() }()
	}
	// from is where the rest of an oldest-first search starts: past the
	// cursor, and past what the first occurrences answered for.
	from := uint64(1)
	if p.hasAfter {
		from = p.after + 1
	}
	// An oldest-first page starts from the first occurrences of the
	// needle's grams (see store.Heads) when they answer for enough seqs
	// (headsMinSpan for a needle shorter than six characters, which the
	// index cannot narrow; headsLongSpan for a longer one) or for the
	// whole history. answered is set when the lists hold the whole page.
	var answered bool
	var note string // what the plan says of a part answered from the lists
	defer func() {
		if !answered {
			st.Plan += note
		}
	}()
	// A long needle's candidates from the lists are tested on their
	// sketches first (see scanHeads).
	long := utf8.RuneCount(p.lit) >= trigram.Window+2
	heads := func() error {
		if p.req.NewestFirst || p.req.Count || p.limit <= 0 || !useHeads {
			return nil
		}
		w, ok := e.st.Heads(p.lit, from-1, last)
		span := headsMinSpan
		if long {
			span = headsLongSpan
		}
		if !ok || w.Bound() < from+span && w.Bound() < last {
			return nil
		}
		err := c.scanHeads(ctx, w, long)
		if err == nil && !c.full() && w.Bound() < last {
			from = w.Bound() + 1
			note = fmt.Sprintf("; first, the first occurrences of its grams (through seq %d)", w.Bound())
			return nil
		}
		answered = true
		st.Plan, st.PlanKind = fmt.Sprintf("first occurrences of its grams (through seq %d)", w.Bound()), pihistory.PlanFirstOccurrences
		return err
	}
	if err := heads(); err != nil || answered {
		return c.result(err)
	}
	through := uint64(0)
	var plan index.Plan
	useIndex := false
	switch {
	case p.pat != nil && p.lit == nil && p.probes != nil:
		st.Plan, st.PlanKind = "scan through sketches ("+p.pat.describe()+")", pihistory.PlanSketches
		if e.ix == nil {
			break
		}
		through = min(e.ix.IndexedThrough(), last)
		plans, ok, err := e.planEach(ctx, p.pat.lits, through)
		if err != nil {
			return found{}, 0, false, err
		}
		if ok {
			c.plans = plans
			useIndex = true
			st.Plan, st.PlanKind = fmt.Sprintf("index (the candidates of each of %d literals); %s", len(p.pat.lits), p.pat.describe()), pihistory.PlanIndex
		}
	case p.pat != nil && p.lit == nil:
		st.Plan, st.PlanKind = "scan ("+p.pat.describe()+")", pihistory.PlanScan
	case e.ix != nil:
		through = min(e.ix.IndexedThrough(), last)
		var err error
		bound := broadBound(through, utf8.RuneCount(p.lit), e.st.Filtered())
		plan, err = e.ix.PlanNeedleWithin(ctx, string(p.lit), bound)
		switch {
		case errors.Is(err, index.ErrNoTrigrams) && e.byFilters(p):
			st.Plan, st.PlanKind = "scan (needle shorter than 3 characters; chunks ruled out by its bytes)", pihistory.PlanScan
		case errors.Is(err, index.ErrNoTrigrams):
			st.Plan, st.PlanKind = "scan (needle shorter than 3 characters)", pihistory.PlanScan
		case errors.Is(err, index.ErrNoWindow):
			st.Plan, st.PlanKind = fmt.Sprintf("scan through sketches (needle shorter than %d characters)", trigram.Window+2), pihistory.PlanSketches
		case err != nil:
			return found{}, 0, false, err
		case plan.AllCommon:
			st.Plan, st.PlanKind = "scan through sketches (every trigram of the needle is common)", pihistory.PlanSketches
		case plan.Zero != "":
			st.Plan, st.PlanKind = fmt.Sprintf("index: trigram %q occurs nowhere", plan.Zero), pihistory.PlanNowhere
			useIndex = true
		case plan.Broad:
			st.Plan, st.PlanKind = fmt.Sprintf("scan through sketches, the index too broad (more than %d of %d blocks are candidates)", bound, through/index.BlockSize), pihistory.PlanSketches
		default:
			st.Plan, st.PlanKind = fmt.Sprintf("index (rarest trigram in %d blocks)", plan.Rarest), pihistory.PlanIndex
			useIndex = true
		}
	default:
		st.Plan, st.PlanKind = "scan (no index)", pihistory.PlanScan
	}
	c.plan = &plan
	if !useIndex {
		lo, hi := from, last
		if p.hasAfter && p.req.NewestFirst {
			lo, hi = 1, p.after-1
		}
		if p.countOnly && useHeads && countFromHeads && lo <= hi {
			// A count the index cannot narrow would test every sketch
			// in its range. When a gram of the needle is held by fewer
			// entries than a list keeps, that list is every entry that
			// can hold the needle, and the count confirms those alone.
			if w, ok := e.st.Heads(p.lit, lo-1, hi); ok && w.Bound() >= hi {
				st.Plan, st.PlanKind = fmt.Sprintf("counted from the first occurrences of its grams (through seq %d)", w.Bound()), pihistory.PlanFirstOccurrences
				err := c.scanHeads(ctx, w, long)
				return c.result(err)
			}
		}
		err := c.scan(ctx, lo, hi)
		return c.result(err)
	}
	// Indexed range [1, through], then the unindexed tail (through, last].
	if !p.req.NewestFirst {
		lo := from
		if plan.Zero == "" {
			if err := eachWindow(lo, through, c.window(), false, c.full, c.grow, func(a, b uint64) error {
				return c.candidates(ctx, a, b)
			}); err != nil {
				return c.result(err)
			}
		}
		if !c.full() {
			err := c.scan(ctx, max(lo, through+1), last)
			return c.result(err)
		}
		return c.result(nil)
	}
	hi := last
	if p.hasAfter {
		hi = p.after - 1
	}
	if hi > through {
		if err := c.scan(ctx, through+1, hi); err != nil || c.full() {
			return c.result(err)
		}
		hi = through
	}
	if plan.Zero == "" {
		err := eachWindow(1, hi, c.window(), true, c.full, c.grow, func(a, b uint64) error {
			return c.candidates(ctx, a, b)
		})
		return c.result(err)
	}
	return c.result(nil)
}

// useHeads says whether oldest-first pages start from the first
// occurrences of their needle's grams (see store.Heads).
var useHeads = true

// countFromHeads says whether a count that would scan every sketch of its
// range counts from a list of the needle's first occurrences instead, when
// that list is complete through the range (see searchAll); tests turn it
// off to compare with the scan.
var countFromHeads = true

// headsMinSpan is the fewest seqs the first occurrences must answer for
// before a search starts from them: for a needle whose every trigram is
// common, the lists end within the first few hundred entries, and walking
// them would only delay the scan.
var headsMinSpan uint64 = 1024

// headsLongSpan is the same for a needle of six characters or more: the
// lists do not answer for much of a needle whose every 4-gram is common,
// and a search that goes on past a part they answered starts its windows
// over from small ones. In-process, alternating, against the sketches
// alone (every list of the needle's trigrams and 4-grams walked then):
// 6-12 characters median ratio 0.953 (p50 415 -> 239 us) and 13-40 0.972
// with 16,384; 1.060 and 1.000 with 131,072. Planned first, and
// started from the lists only when the plan was to scan the sketches,
// they did less well (against that, 6-12 characters 0.965, 13-40 0.962).
var headsLongSpan uint64 = 16384

// headsBatch is how many candidates of the first occurrences are read at
// a time (see scanHeads): about what a dense page needs.
const headsBatch = 64

// scanHeads confirms the candidates w yields, in order, until the page is
// full or w has no more. With sketches, they are tested on their sketches
// first: the candidates of a long needle are the entries that hold one of
// its 4-grams and that the other lists could not rule out, mostly
// spread through the history where texts are not held in memory. (Those
// of a short needle mostly hold it: with their sketches tested, first
// pages of 3-5 characters gave a median ratio of 0.818 against the
// sketches alone, 0.768 without, with trigram lists alone.)
func (c *collector) scanHeads(ctx context.Context, w *store.HeadWalk, sketches bool) error {
	var buf []store.SeqRange
	exact := !sketches && c.p.filter.empty()
	for n := headsBatch; ; n = 4 * headsBatch {
		buf = w.Next(buf[:0], n)
		if len(buf) == 0 {
			return nil
		}
		ranges := buf
		if !exact {
			var err error
			if ranges, err = c.e.mayHold(c.p, buf, c.st); err != nil {
				return err
			}
		}
		if err := c.scanRanges(ctx, ranges); err != nil || c.full() {
			return err
		}
	}
}
