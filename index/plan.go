package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"

	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/pi-history/pi-history/trigram"
)

// Plan is how the index would answer a needle.
type Plan struct {
	// Trigrams are the distinct trigrams of the needle the plan uses: the
	// uncommon ones that the index's blocks hold (in an index of selected
	// trigrams, those the needle's windows select), or the first of them
	// when those were selective enough (see planEnough).
	Trigrams []string
	// AllCommon is set when every trigram of the needle is common (see
	// common.go): the index cannot narrow the needle down, so the caller
	// scans, testing each entry's sketch.
	AllCommon bool
	Zero      string // a trigram no document has: nothing indexed can match
	Rarest    uint64 // document frequency of the rarest trigram

	// Direct is set when the rarest trigram was rare enough for PlanNeedle
	// to intersect the postings of every trigram itself: Blocks then holds,
	// in ascending order, the start of every block holding all the
	// trigrams, as of an index state at least as new as the mark read
	// before the call. Window selects from it what Candidates would return.
	Direct bool
	Blocks []uint64
	// Broad is set instead of Direct when the intersection found more
	// blocks than the bound given to PlanNeedleWithin: it stopped there,
	// and the caller is to scan rather than test that many blocks.
	Broad bool
}

// directMax bounds the document frequency of a needle's rarest trigram for
// which PlanNeedle intersects postings over the whole index at once (the
// work is proportional to it); above it, Candidates intersects one window
// of seqs at a time (the documents of the window, from the block starts
// the index keeps per segment, with the trigrams' postings). At a million
// entries, needles whose rarest trigram is in ~3,000 blocks took 7-10 ms
// warm with this bound against 9-12 ms at 2,048 (when windows were range
// queries on a numeric seq field).
const directMax = 8192

// A plan stops looking up trigrams once it has planAtLeast of them and one
// is in at most planEnough blocks. Each lookup opens a reader on every
// segment, which was the largest allocation of a selective search; a
// word-long needle has a dozen trigrams or more.
const (
	planAtLeast = 4
	planEnough  = 64
)

// ErrNoTrigrams means the needle is shorter than three characters: the
// index cannot narrow it down and the caller must scan.
var ErrNoTrigrams = errors.New("needle has fewer than 3 characters")

// ErrNoWindow means the needle holds no whole window of trigrams (it is
// shorter than trigram.Window+2 characters), and the index holds only the
// trigrams windows select: the index cannot narrow it down and the caller
// must scan.
var ErrNoWindow = fmt.Errorf("needle has fewer than %d characters, the shortest the index can narrow down", trigram.Window+2)

// needleTrigrams returns the trigrams of needle that blocks holding it
// hold under the index's scheme (before common ones are left out), or why
// there are none. The caller holds mu.
func (x *Index) needleTrigrams(needle string) ([]string, error) {
	trs := trigram.Distinct
	if x.scheme == schemeSelected {
		trs = trigram.Selected
	}
	switch out := trs(needle); {
	case len(out) > 0:
		return out, nil
	case utf8.RuneCountInString(needle) < 3:
		return nil, ErrNoTrigrams
	}
	return nil, ErrNoWindow
}

// PlanNeedle looks up the document frequency of the needle's trigrams and,
// when the rarest is rare enough, the candidate blocks (see Plan.Direct).
func (x *Index) PlanNeedle(needle string) (Plan, error) {
	return x.PlanNeedleContext(context.Background(), needle)
}

// PlanNeedleContext is PlanNeedle with a context for the intersection.
func (x *Index) PlanNeedleContext(ctx context.Context, needle string) (Plan, error) {
	return x.PlanNeedleWithin(ctx, needle, 0)
}

// PlanNeedleWithin is PlanNeedleContext that stops intersecting once more
// than maxBlocks blocks hold every trigram and answers Broad (0: no bound).
func (x *Index) PlanNeedleWithin(ctx context.Context, needle string, maxBlocks int) (Plan, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var p Plan
	var err error
	if p.Trigrams, err = x.needleTrigrams(needle); err != nil {
		return p, err
	}
	rd, common, err := x.snapshot()
	if err != nil {
		return p, err
	}
	defer rd.Close()
	if p.Trigrams = common.uncommon(p.Trigrams); len(p.Trigrams) == 0 {
		p.AllCommon = true
		return p, nil
	}
	tfrs := make([]bindex.TermFieldReader, 0, len(p.Trigrams))
	defer func() {
		for _, t := range tfrs {
			t.Close()
		}
	}()
	p.Rarest = ^uint64(0)
	for i, t := range p.Trigrams {
		tfr, err := rd.TermFieldReader(ctx, []byte(t), fieldText, false, false, false)
		if err != nil {
			return p, err
		}
		tfrs = append(tfrs, tfr)
		c := tfr.Count()
		if c == 0 {
			p.Zero, p.Rarest = t, 0
			return p, nil
		}
		if c < p.Rarest {
			p.Rarest = c
		}
		if len(tfrs) >= planAtLeast && p.Rarest <= planEnough && i+1 < len(p.Trigrams) {
			// Enough to narrow the needle to a few blocks: the sketches
			// test the other trigrams for less than their readers cost.
			p.Trigrams = p.Trigrams[:i+1]
			break
		}
	}
	if p.Rarest > directMax {
		return p, nil
	}
	blocks, err := intersect(ctx, x.starts.forSnapshot(rd), tfrs, maxBlocks)
	if err != nil {
		return p, fmt.Errorf("index: search: %w", err)
	}
	if maxBlocks > 0 && len(blocks) > maxBlocks {
		p.Broad = true
		return p, nil
	}
	p.Direct, p.Blocks = true, blocks
	return p, nil
}

// leapfrog walks term readers forward together, as Bleve's conjunction
// does, without the search machinery around it: each reader is moved to
// its first document at or after a target, and remembers where it stands.
type leapfrog struct {
	rs      []bindex.TermFieldReader
	docs    []bindex.TermFieldDoc // one each: a reader keeps its doc's ID
	cur     []uint64
	started []bool
	target  bindex.IndexInternalID
}

func newLeapfrog(rs []bindex.TermFieldReader) *leapfrog {
	n := len(rs)
	return &leapfrog{rs: rs, docs: make([]bindex.TermFieldDoc, n), cur: make([]uint64, n),
		started: make([]bool, n), target: bindex.NewIndexInternalID(nil, 0)}
}

// seek moves reader i to its first document at or after t; ok is false
// when it has none.
func (l *leapfrog) seek(i int, t uint64) (doc uint64, ok bool, err error) {
	if l.started[i] && l.cur[i] >= t {
		return l.cur[i], true, nil
	}
	l.target.SetValue(t)
	d, err := l.rs[i].Advance(l.target, &l.docs[i])
	if err != nil || d == nil {
		return 0, false, err
	}
	l.started[i], l.cur[i] = true, d.ID.Value()
	return l.cur[i], true, nil
}

// align seeks the readers from the one numbered from on to document t: it
// returns t when they all hold it, else the first document past t of the
// first one that does not (no document before it can be in all of them);
// ok is false once a reader has no document left at or after t.
func (l *leapfrog) align(t uint64, from int) (next uint64, ok bool, err error) {
	for i := from; i < len(l.rs); i++ {
		v, ok, err := l.seek(i, t)
		if err != nil || !ok || v != t {
			return v, ok, err
		}
	}
	return t, true, nil
}

// intersect returns, ascending, the block starts of the documents in every
// postings list of tfrs, leapfrogging from the rarest list; ids turns
// document numbers into block starts. With limit > 0 it stops at limit+1
// blocks.
func intersect(ctx context.Context, ids *resolver, tfrs []bindex.TermFieldReader, limit int) ([]uint64, error) {
	rs := slices.Clone(tfrs)
	slices.SortStableFunc(rs, func(a, b bindex.TermFieldReader) int { return cmp.Compare(a.Count(), b.Count()) })
	l := newLeapfrog(rs)
	// At most the rarest reader's documents match: sized once instead of
	// grown (growing them was ~8% of the CPU of slow index-planned
	// first pages, in a profile of 50 of them).
	out := make([]uint64, 0, min(rs[0].Count(), 1<<16))
	for t, steps := uint64(0), 0; limit <= 0 || len(out) <= limit; steps++ {
		if steps%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v, ok, err := l.seek(0, t)
		if err == nil && ok {
			t = v
			v, ok, err = l.align(t, 1)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if v != t {
			t = v
			continue
		}
		if out, err = appendStart(out, ids, t); err != nil {
			return nil, err
		}
		t++
	}
	slices.Sort(out)
	return out, nil
}

// intersectWithin returns, ascending, the block starts of the documents
// of within (ascending global numbers) that every reader of tfrs holds:
// the leapfrog of intersect, led by the list.
func intersectWithin(ctx context.Context, ids *resolver, tfrs []bindex.TermFieldReader, within []uint64) ([]uint64, error) {
	l := newLeapfrog(tfrs)
	var out []uint64
	for j, steps := 0, 0; j < len(within); steps++ {
		if steps%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		t := within[j]
		v, ok, err := l.align(t, 0)
		if err != nil {
			return nil, err
		}
		if !ok {
			break // a reader is done: nothing more
		}
		if v != t {
			// Skip the documents of the list before v.
			j += sort.Search(len(within)-j, func(k int) bool { return within[j+k] >= v })
			continue
		}
		if out, err = appendStart(out, ids, t); err != nil {
			return nil, err
		}
		j++
	}
	slices.Sort(out)
	return out, nil
}

// appendStart appends the block start of document num to out, unless its
// ID is not a block's.
func appendStart(out []uint64, ids *resolver, num uint64) ([]uint64, error) {
	b, ok, err := ids.start(num)
	if err != nil || !ok {
		return out, err
	}
	return append(out, b), nil
}

// Window returns what Candidates(ctx, p.Trigrams, lo, hi) returns, from a
// Direct plan's blocks: the blocks overlapping [lo, hi], clipped to it, in
// ascending order. hi must not exceed the mark read before PlanNeedle.
func (p *Plan) Window(lo, hi uint64) []Block {
	if lo > hi {
		return nil
	}
	first, _ := blockOf(lo)
	i, _ := slices.BinarySearch(p.Blocks, first)
	j, _ := slices.BinarySearch(p.Blocks[i:], hi+1)
	out := make([]Block, 0, j)
	for ; i < len(p.Blocks) && p.Blocks[i] <= hi; i++ {
		b := p.Blocks[i]
		blk := Block{Lo: max(b, lo), Hi: min(b+BlockSize-1, hi)}
		if blk.Lo <= blk.Hi {
			out = append(out, blk)
		}
	}
	return out
}

// Candidates returns, in ascending order, the blocks overlapping [lo, hi]
// whose indexed text holds every trigram of the needle, clipped to
// [lo, hi]. hi is capped at the mark. trigrams that have become common
// since the plan was made are dropped; when none is left, the whole range
// is one candidate. The window's documents are found by their block
// starts (see resolver.docsIn), so block documents need no seq field.
func (x *Index) Candidates(ctx context.Context, trigrams []string, lo, hi uint64) ([]Block, error) {
	if m := x.through.Load(); hi > m {
		hi = m
	}
	if lo > hi || len(trigrams) == 0 {
		return nil, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	rd, common, err := x.snapshot()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if trigrams = common.uncommon(trigrams); len(trigrams) == 0 {
		return []Block{{Lo: lo, Hi: hi}}, nil
	}
	tfrs := make([]bindex.TermFieldReader, 0, len(trigrams))
	defer func() {
		for _, t := range tfrs {
			t.Close()
		}
	}()
	for _, t := range trigrams {
		tfr, err := rd.TermFieldReader(ctx, []byte(t), fieldText, false, false, false)
		if err != nil {
			return nil, fmt.Errorf("index: search: %w", err)
		}
		tfrs = append(tfrs, tfr)
	}
	first, _ := blockOf(lo)
	ids := x.starts.forSnapshot(rd)
	within, err := ids.docsIn(ctx, first, hi)
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	starts, err := intersectWithin(ctx, ids, tfrs, within)
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	out := make([]Block, 0, len(starts))
	for _, b := range starts {
		if blk := (Block{Lo: max(b, lo), Hi: min(b+BlockSize-1, hi)}); blk.Lo <= blk.Hi {
			out = append(out, blk)
		}
	}
	return out, nil
}
