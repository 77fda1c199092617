package index

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/pi-history/pi-history/store"
)

// Query is a needle's keys, asked about range after range. It keeps what
// it has looked up and decoded in each file, so that a search that asks
// window after window reads each container once. Not safe for concurrent
// use: one search, one goroutine.
type Query struct {
	// keys are the needle's distinct trigrams, for a needle of 3 bytes
	// or more: an entry may hold it when it holds each.
	keys []uint32
	// short, for a needle of 1 or 2 bytes, are ranges of keys: an entry
	// may hold it when it has a key in one of them (see shortRanges).
	short []keyRange
	gen   uint64 // the index's file generation the cache is of
	ix    *Index
	per   map[*postingFile]*fileQuery
}

// maxLists is how many lists besides the smallest a file's candidates are
// tested against (see inFile).
const maxLists = 4

// keyRange is the keys lo..hi.
type keyRange struct{ lo, hi uint32 }

// shortRanges returns the key ranges of a needle of one or two bytes. A
// place the needle starts at is the start of a trigram, unless the text
// ends within two bytes of it, where its last pair or last byte is.
func shortRanges(needle []byte) []keyRange {
	switch len(needle) {
	case 2:
		p := uint32(needle[0])<<8 | uint32(needle[1])
		return []keyRange{{p << 8, p<<8 | 0xFF}, {pairKey | p, pairKey | p}}
	case 1:
		b := uint32(needle[0])
		return []keyRange{{b << 16, b<<16 | 0xFFFF}, {pairKey | b<<8, pairKey | b<<8 | 0xFF}, {lastKey | b, lastKey | b}}
	}
	return nil
}

// shortMaxContainers is the most containers a short needle's union reads
// in one file before it gives up narrowing it: a common byte is in nearly
// every entry, and reading them all costs more than the texts it would
// rule out.
const shortMaxContainers = 1024

// fileQuery is a query's view of one file.
type fileQuery struct {
	whole  bool // every entry is a candidate (the file failed a check, or a short needle's union is too broad)
	absent bool // some trigram of the needle is in no entry of the file
	conts  []container
	lists  [][]uint16 // decoded, parallel to conts; nil until needed
	union  []uint64   // a short needle's candidates, a bit per offset
}

// NewQuery returns the query of needle for x.
func (x *Index) NewQuery(needle []byte) *Query {
	q := &Query{ix: x}
	if len(needle) >= 3 {
		q.keys = make([]uint32, 0, len(needle)-2)
		for i := 0; i+3 <= len(needle); i++ {
			q.keys = append(q.keys, uint32(needle[i])<<16|uint32(needle[i+1])<<8|uint32(needle[i+2]))
		}
		slices.Sort(q.keys)
		q.keys = slices.Compact(q.keys)
	} else {
		q.short = shortRanges(needle)
	}
	return q
}

// Narrows says whether the query can rule entries out (not for an empty
// needle).
func (q *Query) Narrows() bool { return q.keys != nil || q.short != nil }

// MayHold returns the entries of ranges (ascending, disjoint) that may
// hold the needle, as ascending, disjoint ranges appended to out: those
// whose postings hold every trigram of it (or for a short needle, a key
// it may start at; for a needle of more trigrams than a file's candidates
// are tested against, a superset of those, see inFile), and every entry
// past the index's mark, which the postings do not cover yet. skipped is how many seqs of ranges were
// ruled out.
func (q *Query) MayHold(ranges []store.SeqRange, out []store.SeqRange) ([]store.SeqRange, int, error) {
	if !q.Narrows() {
		return append(out, ranges...), 0, nil
	}
	start := len(out)
	for _, r := range ranges {
		out = q.mayHold(r, out)
	}
	return out, int(store.Count(ranges) - store.Count(out[start:])), nil
}

// mayHold is MayHold of one range. Each file is read under the read lock
// alone, so that a long query does not hold up the writer.
func (q *Query) mayHold(r store.SeqRange, out []store.SeqRange) []store.SeqRange {
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
		whole := q.per[f].whole
		if r.Hi > f.hi() {
			// Passed: what was decoded of f goes, so that a count over
			// the whole history holds one file's lists at a time (a
			// later window that needs f again looks it up again).
			delete(q.per, f)
		}
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
		return out
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
	return out
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

// view returns the query's view of f, looking its keys up the first time
// (fmu held). A file that fails a check gives the error as bad.
func (q *Query) view(f *postingFile) (fq *fileQuery, bad error) {
	if fq = q.per[f]; fq != nil {
		return fq, nil
	}
	fq = &fileQuery{}
	q.per[f] = fq
	if q.ix.isBad(f) {
		fq.whole = true
		return fq, nil
	}
	err := f.check()
	if err == nil {
		if q.short != nil {
			err = q.unionOf(f, fq)
		} else {
			err = q.containersOf(f, fq)
		}
	}
	if err != nil {
		fq.whole = true
	}
	return fq, err
}

// containersOf looks up the containers of the needle's trigrams in f.
func (q *Query) containersOf(f *postingFile, fq *fileQuery) error {
	for _, k := range q.keys {
		c, ok, err := f.find(k)
		if err != nil {
			return err
		}
		if !ok {
			fq.absent = true
			return nil
		}
		fq.conts = append(fq.conts, c)
	}
	slices.SortFunc(fq.conts, func(a, b container) int { return a.count - b.count })
	fq.lists = make([][]uint16, len(fq.conts))
	return nil
}

// unionOf gathers the entries of f that have a key in the short needle's
// ranges, unless that takes more than shortMaxContainers.
func (q *Query) unionOf(f *postingFile, fq *fileQuery) error {
	fq.union = make([]uint64, (f.span+63)/64)
	n := 0
	var offs []uint16
	for _, kr := range q.short {
		i, err := f.search(kr.lo)
		if err != nil {
			return err
		}
		for ; i < f.keys && f.keyAt(i) <= kr.hi; i++ {
			if n++; n > shortMaxContainers {
				fq.whole, fq.union = true, nil
				return nil
			}
			c, err := f.entry(i)
			if err != nil {
				return err
			}
			if c.dense {
				for w := range fq.union {
					fq.union[w] |= wordAt(c.body, w)
				}
				continue
			}
			if offs, err = c.decode(offs[:0]); err != nil {
				return err
			}
			for _, o := range offs {
				fq.union[o>>6] |= 1 << (o & 63)
			}
		}
	}
	return nil
}

// wordAt returns the 64 bits of bitmap b from bit 64*w.
func wordAt(b []byte, w int) uint64 {
	var v uint64
	for i := 0; i < 8 && w*8+i < len(b); i++ {
		v |= uint64(b[w*8+i]) << (8 * i)
	}
	return v
}

// list returns container i of fq decoded.
func (q *Query) list(fq *fileQuery, i int) ([]uint16, error) {
	if fq.lists[i] == nil {
		l, err := fq.conts[i].decode(make([]uint16, 0, fq.conts[i].count))
		if err != nil {
			return nil, err
		}
		fq.lists[i] = l
	}
	return fq.lists[i], nil
}

// inFile appends the candidates of f in [lo, hi] to out (fmu held). bad
// is why f failed a check on the way, when it did; its range is then to
// be read whole (fq.whole).
func (q *Query) inFile(f *postingFile, lo, hi uint64, out []store.SeqRange) (_ []store.SeqRange, bad error) {
	fq, bad := q.view(f)
	if fq.whole || fq.absent {
		return out, bad
	}
	a, b := uint32(lo-f.lo), uint32(hi-f.lo)
	if fq.union != nil {
		return appendBits(out, fq.union, f.lo, a, b), nil
	}
	start := len(out)
	// The containers are sorted by size, lists before bitmaps. Every
	// bitmap is tested (a bit each), but of the lists only the smallest
	// maxLists after the driver: a list is decoded whole to be tested,
	// and for a long needle, whose dozens of trigrams each have a list in
	// every file, decoding the longer lists cost more than reading the few
	// candidates they would have ruled out.
	skip := func(i int) bool { return i > maxLists && !fq.conts[i].dense }
	// Cursors into the other lists, moved forward as the driver's
	// offsets rise.
	curs := make([]int, len(fq.conts))
	for i := 1; i < len(fq.conts); i++ {
		if !fq.conts[i].dense && !skip(i) {
			l, err := q.list(fq, i)
			if err != nil {
				fq.whole = true
				return out[:start], err
			}
			curs[i] = sort.Search(len(l), func(j int) bool { return uint32(l[j]) >= a })
		}
	}
	test := func(off uint32) bool {
		for i := 1; i < len(fq.conts); i++ {
			c := fq.conts[i]
			if skip(i) {
				continue
			}
			if c.dense {
				if !c.has(off) {
					return false
				}
				continue
			}
			l := fq.lists[i]
			j := curs[i]
			for j < len(l) && uint32(l[j]) < off {
				j++
			}
			curs[i] = j
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
		fq.whole = true
		return out[:start], err
	}
	for j := sort.Search(len(l), func(j int) bool { return uint32(l[j]) >= a }); j < len(l) && uint32(l[j]) <= b; j++ {
		if off := uint32(l[j]); test(off) {
			out = appendRange(out, f.lo+uint64(off), f.lo+uint64(off))
		}
	}
	return out, nil
}

// appendBits appends the seqs base+off for the set bits off of bm in
// [a, b].
func appendBits(out []store.SeqRange, bm []uint64, base uint64, a, b uint32) []store.SeqRange {
	for w := a >> 6; w <= b>>6 && int(w) < len(bm); w++ {
		v := bm[w]
		if w == a>>6 {
			v &= ^uint64(0) << (a & 63)
		}
		if w == b>>6 && b&63 != 63 {
			v &= 1<<(b&63+1) - 1
		}
		for v != 0 {
			off := uint64(w)*64 + uint64(bits.TrailingZeros64(v))
			out = appendRange(out, base+off, base+off)
			v &= v - 1
		}
	}
	return out
}

// inOpen appends the candidates of the open run in [lo, hi] to out (bmu
// held).
func (q *Query) inOpen(lo, hi uint64, out []store.SeqRange) []store.SeqRange {
	run := q.ix.open
	a, b := uint32(lo-run.lo), uint32(hi-run.lo)
	if q.short != nil {
		bm := make([]uint64, (q.ix.runSpan+63)/64)
		run.lists.order() // read as no other reader changes them
		for _, p := range run.lists.pairs {
			k, o := uint32(p>>pairShift), uint16(p)
			for _, kr := range q.short {
				if k >= kr.lo && k <= kr.hi {
					bm[o>>6] |= 1 << (o & 63)
					break
				}
			}
		}
		return appendBits(out, bm, run.lo, a, b)
	}
	lists := make([][]uint16, 0, len(q.keys))
	for _, k := range q.keys {
		l := run.lists.get(k, nil)
		if len(l) == 0 {
			return out
		}
		lists = append(lists, l)
	}
	slices.SortFunc(lists, func(a, b []uint16) int { return len(a) - len(b) })
	for _, off := range lists[0] {
		if uint32(off) < a || uint32(off) > b {
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

// Nowhere says whether no entry the index has taken in holds every
// trigram of the needle: then no entry up to the mark read before the
// call holds the needle. It looks each file up as MayHold does, into the
// same views, so a search that goes on after asking reads nothing twice.
// Always false for a short needle, and for a file that fails a check.
func (q *Query) Nowhere() bool {
	if q.keys == nil {
		return false
	}
	x := q.ix
	x.fmu.RLock()
	if q.gen != x.gen || q.per == nil {
		q.per, q.gen = map[*postingFile]*fileQuery{}, x.gen
	}
	for _, f := range x.files {
		fq, bad := q.view(f)
		if bad != nil || fq.whole || !fq.absent {
			x.fmu.RUnlock()
			if bad != nil {
				x.markBad(f, bad)
			}
			return false
		}
	}
	x.fmu.RUnlock()
	x.bmu.RLock()
	defer x.bmu.RUnlock()
	for _, k := range q.keys {
		if !x.open.lists.has(k) {
			return true
		}
	}
	return false
}
