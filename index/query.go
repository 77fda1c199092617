package index

import (
	"errors"
	"slices"
	"sort"

	"github.com/pi-history/pi-history/store"
)

// Query is a needle's trigrams, asked about range after range. It keeps
// what it has looked up and decoded in each file, so that a search that
// asks window after window reads each container once. Not safe for
// concurrent use: one search, one goroutine.
type Query struct {
	keys []uint32 // distinct, nil when the needle has fewer than 3 bytes
	gen  uint64   // the index's file generation the cache is of
	ix   *Index
	per  map[*postingFile]*fileQuery
	// Stats is what the query has read so far.
	Stats QueryStats
}

// QueryStats is what a query has read.
type QueryStats struct {
	Containers int // containers looked up and found
	Decoded    int // offsets decoded from lists
}

// fileQuery is a query's view of one file: its trigrams' containers, the
// shortest first, and the lists decoded so far.
type fileQuery struct {
	absent bool // some trigram of the needle is in no entry of the file
	conts  []container
	lists  [][]uint16 // decoded, parallel to conts; nil until needed
	bad    bool       // the file failed a check: every entry is a candidate
}

// NewQuery returns the query of needle for x.
func (x *Index) NewQuery(needle []byte) *Query {
	q := &Query{ix: x}
	if len(needle) >= 3 {
		g := newGatherer()
		q.keys = slices.Clone(g.keys(needle))
	}
	return q
}

// Narrows says whether the query can rule entries out: a needle of fewer
// than 3 bytes has no trigram, and every entry is its candidate.
func (q *Query) Narrows() bool { return q.keys != nil }

// MayHold returns the entries of ranges (ascending, disjoint) that may
// hold the needle, as ascending, disjoint ranges appended to out: those
// whose postings hold every trigram of it, and every entry past the
// index's mark, which the postings do not cover yet. skipped is how many
// seqs of ranges were ruled out.
func (q *Query) MayHold(ranges []store.SeqRange, out []store.SeqRange) ([]store.SeqRange, int, error) {
	if !q.Narrows() {
		return append(out, ranges...), 0, nil
	}
	start := len(out)
	for _, r := range ranges {
		var err error
		if out, err = q.mayHold(r, out); err != nil {
			return out, 0, err
		}
	}
	return out, int(store.Count(ranges) - store.Count(out[start:])), nil
}

// mayHold is MayHold of one range.
func (q *Query) mayHold(r store.SeqRange, out []store.SeqRange) ([]store.SeqRange, error) {
	x := q.ix
	pos := r.Lo
	for pos <= r.Hi {
		x.fmu.RLock()
		if q.gen != x.gen || q.per == nil {
			q.per, q.gen = map[*postingFile]*fileQuery{}, x.gen
		}
		i := sort.Search(len(x.files), func(i int) bool { return x.files[i].hi() >= pos })
		if i == len(x.files) {
			x.fmu.RUnlock()
			break
		}
		f := x.files[i]
		hi := min(r.Hi, f.hi())
		var bad error
		out, bad = q.inFile(f, pos, hi, out)
		whole := q.per[f].bad
		x.fmu.RUnlock()
		if bad != nil {
			x.markBad(f, bad)
		}
		if whole {
			out = appendRange(out, pos, hi)
		}
		pos = hi + 1
	}
	if pos > r.Hi {
		return out, nil
	}
	x.bmu.RLock()
	through := x.through.Load()
	if pos <= through && pos >= x.open.lo {
		out = q.inOpen(pos, min(r.Hi, through), out)
		pos = min(r.Hi, through) + 1
	}
	x.bmu.RUnlock()
	if pos <= r.Hi {
		out = appendRange(out, pos, r.Hi) // not indexed yet
	}
	return out, nil
}

// appendRange appends [lo, hi] to out, joining it to the last range when
// they touch.
func appendRange(out []store.SeqRange, lo, hi uint64) []store.SeqRange {
	if n := len(out); n > 0 && out[n-1].Hi+1 == lo {
		out[n-1].Hi = hi
		return out
	}
	return append(out, store.SeqRange{Lo: lo, Hi: hi})
}

// view returns the query's view of f, looking its trigrams up the first
// time. A file that fails a check gives the error as bad.
func (q *Query) view(f *postingFile) (fq *fileQuery, bad error) {
	if fq = q.per[f]; fq != nil {
		return fq, nil
	}
	fq = &fileQuery{}
	q.per[f] = fq
	if q.ix.isBad(f) {
		fq.bad = true
		return fq, nil
	}
	if err := f.check(); err != nil {
		fq.bad = true
		return fq, err
	}
	for _, k := range q.keys {
		c, ok, err := f.find(k)
		if err != nil {
			fq.bad = true
			return fq, err
		}
		if !ok {
			fq.absent = true
			return fq, nil
		}
		q.Stats.Containers++
		fq.conts = append(fq.conts, c)
	}
	slices.SortFunc(fq.conts, func(a, b container) int { return a.count - b.count })
	fq.lists = make([][]uint16, len(fq.conts))
	return fq, nil
}

// list returns container i of fq decoded.
func (q *Query) list(fq *fileQuery, i int) ([]uint16, error) {
	if fq.lists[i] == nil {
		l, err := fq.conts[i].decode(make([]uint16, 0, fq.conts[i].count))
		if err != nil {
			return nil, err
		}
		q.Stats.Decoded += len(l)
		fq.lists[i] = l
	}
	return fq.lists[i], nil
}

// inFile appends the candidates of f in [lo, hi] to out. bad is why f
// failed a check on the way, when it did: its range then needs reading
// whole (fmu held).
func (q *Query) inFile(f *postingFile, lo, hi uint64, out []store.SeqRange) (_ []store.SeqRange, bad error) {
	fq, bad := q.view(f)
	if bad != nil || fq.bad {
		fq.bad = true
		return out, bad
	}
	if fq.absent {
		return out, nil
	}
	start := len(out)
	a, b := uint32(lo-f.lo), uint32(hi-f.lo)
	// Cursors into the other lists, moved forward as the driver's
	// offsets rise.
	var cur [8]int
	curs := cur[:0]
	for i := 1; i < len(fq.conts); i++ {
		curs = append(curs, 0)
		if !fq.conts[i].dense {
			l, err := q.list(fq, i)
			if err != nil {
				fq.bad = true
				return out[:start], err
			}
			curs[i-1] = sort.Search(len(l), func(j int) bool { return uint32(l[j]) >= a })
		}
	}
	test := func(off uint32) bool {
		for i := 1; i < len(fq.conts); i++ {
			c := fq.conts[i]
			if c.dense {
				if !c.has(off) {
					return false
				}
				continue
			}
			l := fq.lists[i]
			j := curs[i-1]
			for j < len(l) && uint32(l[j]) < off {
				j++
			}
			curs[i-1] = j
			if j == len(l) || uint32(l[j]) != off {
				return false
			}
		}
		return true
	}
	d := fq.conts[0]
	if d.dense {
		for off := a; off <= b; off++ {
			if d.has(off) && test(off) {
				out = appendRange(out, f.lo+uint64(off), f.lo+uint64(off))
			}
		}
		return out, nil
	}
	l, err := q.list(fq, 0)
	if err != nil {
		fq.bad = true
		return out[:start], err
	}
	for j := sort.Search(len(l), func(j int) bool { return uint32(l[j]) >= a }); j < len(l) && uint32(l[j]) <= b; j++ {
		if off := uint32(l[j]); test(off) {
			out = appendRange(out, f.lo+uint64(off), f.lo+uint64(off))
		}
	}
	return out, nil
}

// inOpen appends the candidates of the open run in [lo, hi] to out
// (bmu held).
func (q *Query) inOpen(lo, hi uint64, out []store.SeqRange) []store.SeqRange {
	run := q.ix.open
	lists := make([][]uint16, 0, len(q.keys))
	for _, k := range q.keys {
		l := run.lists[k]
		if len(l) == 0 {
			return out
		}
		lists = append(lists, l)
	}
	slices.SortFunc(lists, func(a, b []uint16) int { return len(a) - len(b) })
	a, b := uint16(lo-run.lo), uint16(hi-run.lo)
	for _, off := range lists[0] {
		if off < a || off > b {
			continue
		}
		ok := true
		for _, l := range lists[1:] {
			if _, found := slices.BinarySearch(l, off); !found {
				ok = false
				break
			}
		}
		if ok {
			out = appendRange(out, run.lo+uint64(off), run.lo+uint64(off))
		}
	}
	return out
}

// Nowhere says whether some trigram of the needle is in no entry the
// index has taken in, and no entry past its mark is asked about: then no
// entry up to the mark holds the needle.
func (q *Query) Nowhere() (bool, error) {
	if !q.Narrows() {
		return false, nil
	}
	x := q.ix
	x.fmu.RLock()
	files, gen := slices.Clone(x.files), x.gen
	x.fmu.RUnlock()
	for _, k := range q.keys {
		found := false
		for _, f := range files {
			x.fmu.RLock()
			if gen != x.gen {
				x.fmu.RUnlock()
				return false, nil // the files changed: say nothing
			}
			_, ok, err := f.find(k)
			x.fmu.RUnlock()
			if err != nil {
				if errors.Is(err, errCorrupt) {
					return false, nil
				}
				return false, err
			}
			if ok {
				found = true
				break
			}
		}
		if !found {
			x.bmu.RLock()
			found = len(x.open.lists[k]) > 0
			x.bmu.RUnlock()
		}
		if !found {
			return true, nil
		}
	}
	return false, nil
}
