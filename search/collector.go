package search

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync/atomic"

	"github.com/pi-history/pi-history/store"
)

// First windows of seqs: index candidates are asked for this many seqs at
// a time at first, then in windows two to four times wider each time (see
// collector.grow), so that a page that fills early costs little and one
// that does not costs few rounds. A search for every hit (a count, --all)
// has no page to fill, and starts its scan wider. A page of a dense needle
// fills within the first few hundred entries. The sizes were chosen by runs
// on the engines before the postings on disk (decision 341) and have not
// been measured again since (`docs/measurements/2026-12-07-figures-from-code-comments.md`).
const (
	indexWindow     = 16384
	scanWindow      = 256
	wholeScanWindow = 4096
)

// eachWindow calls fn on consecutive windows covering [lo, hi] in request
// order (from hi down when newest), the first w seqs wide and each next as
// wide as grow says, given the last width and how many seqs the windows
// so far covered, until fn fails or stop reports true.
func eachWindow(lo, hi, w uint64, newest bool, stop func() bool, grow func(w, covered uint64) uint64, fn func(a, b uint64) error) error {
	covered := uint64(0)
	for lo <= hi && !stop() {
		a, b := lo, hi
		if hi-lo >= w {
			if newest {
				a = hi - w + 1
			} else {
				b = lo + w - 1
			}
		}
		if err := fn(a, b); err != nil {
			return err
		}
		covered += b - a + 1
		if newest {
			if a == lo {
				return nil
			}
			hi = a - 1
		} else {
			if b == hi {
				return nil
			}
			lo = b + 1
		}
		w = grow(w, covered)
	}
	return nil
}

// fourTimes is the windows' growth when nothing tells a better one.
func fourTimes(w, _ uint64) uint64 {
	if w >= 1<<60 {
		return w
	}
	return 4 * w
}

// grow returns the width of c's next window, given the last width and the
// seqs covered so far: four times the last, unless the page's hits so far
// say it fills sooner. Then it is a quarter more than the seqs the missing
// hits should take at the density found so far, but at least twice the
// last (hits that bunch up early do not make the windows crawl): growing
// four times alone, a page of a needle of middling density filled in a
// window far wider than it needed (`docs/measurements/2026-12-07-figures-from-code-comments.md`).
func (c *collector) grow(w, covered uint64) uint64 {
	next := fourTimes(w, covered)
	h := uint64(len(c.hits))
	if c.p.limit == 0 || h == 0 || next == w {
		return next
	}
	est := (uint64(c.p.limit) - min(h, uint64(c.p.limit))) * covered / h
	return min(max(est+est/4, 2*w), next)
}

// collector gathers confirmed hits in request order until the page is full.
type collector struct {
	e     *Engine
	p     *prepared
	st    *Stats
	hits  []*store.Meta
	texts []hitText // parallel to hits: what each keeps of its text
	more  bool
	last  uint64
	n     int // entries visited, for checking ctx now and then
	rest  *restOfWindow
	// arena is where this goroutine's hits keep their parts (see
	// prepared.keep).
	arena arena
	// readers are the text readers of the search's goroutine and its
	// helper (scanShared, scanInOrder, scanHalves; stored texts through
	// TextReader.Shared), opened at first use and kept for the whole search:
	// opening a Pebble iterator costs more than reading a cached text.
	readers [2]*store.TextReader
	// seen is what each goroutine of the search (0 this one, 1 its
	// helper) remembers of the texts stored once it searched (see
	// seenTexts), kept for the whole search; each reads them through its
	// text reader (readers).
	seen [2]seenTexts
	// recs read the hits' records: 0 for this goroutine, 1 for its
	// helper, which reads the records of the hits it finds (scanHalves,
	// scanShared) so that both cores share that work too.
	recs [2]recorder
}

// seenTexts returns goroutine k's seenTexts, made at first use.
func (c *collector) seenTexts(k int) seenTexts {
	if c.seen[k] == nil {
		c.seen[k] = seenTexts{}
	}
	return c.seen[k]
}

// reader returns text reader k (see collector.readers). It is opened
// after the search took its last seq, so it sees every entry up to it.
func (c *collector) reader(k int) *store.TextReader {
	if c.readers[k] == nil {
		c.readers[k] = c.e.st.NewTextReader(0, math.MaxUint64)
	}
	return c.readers[k]
}

// close releases the collector's readers.
func (c *collector) close() {
	for k := range c.recs {
		c.recs[k].close()
	}
	for _, r := range c.readers {
		if r != nil {
			r.Close()
		}
	}
}

func (c *collector) full() bool { return c.p.limit > 0 && len(c.hits) >= c.p.limit }

func (c *collector) result(err error) (found, uint64, bool, error) {
	if err != nil {
		return found{}, 0, false, err
	}
	return found{c.hits, c.texts, c.rest}, c.last, c.more, nil
}

// offer confirms one seq whose text is in hand.
func (c *collector) offer(seq uint64, text []byte) (bool, error) {
	c.st.BytesScanned += int64(len(text))
	at := c.p.find.index(text)
	if at < 0 {
		return false, nil
	}
	return c.accept(seq, text, at)
}

// accept takes a seq whose text, in hand, holds the needle (first at at),
// if its record passes the filters; only then is the text kept (see
// prepared.keep).
func (c *collector) accept(seq uint64, text []byte, at int) (bool, error) {
	m, ok, err := c.admit(seq)
	if m != nil {
		c.add(seq, m, c.p.keep(&c.arena, text, at))
	}
	return ok, err
}

// acceptKept is accept for a hit whose text was kept already (by a helper
// goroutine, before its reader moved on).
func (c *collector) acceptKept(seq uint64, text hitText) (bool, error) {
	m, ok, err := c.admit(seq)
	if m != nil {
		c.add(seq, m, text)
	}
	return ok, err
}

// countedHit stands in the hits of a count with no filter (see countOnce)
// for records nobody reads.
var countedHit = &store.Meta{}

// admit reads the record of a seq whose text holds the needle: ok when it
// passes the filters (and counts as confirmed), m when the page still has
// room for it.
func (c *collector) admit(seq uint64) (m *store.Meta, ok bool, err error) {
	rc := &c.recs[0]
	m, err = rc.read(c.e.st, seq, c.slabSize())
	if err != nil || m == nil {
		return nil, false, err // m nil: dropped since the index saw it
	}
	if m, ok = c.judge(m); m == nil {
		rc.unread()
	}
	return m, ok, nil
}

// judge decides on a hit whose record m is read: ok when it passes the
// filters (and counts as confirmed), m when the page still has room for
// it, else nil.
func (c *collector) judge(m *store.Meta) (*store.Meta, bool) {
	if !c.p.filter.match(m) {
		return nil, false
	}
	return c.confirm(m)
}

// confirm is judge for a hit m that passed the filters: counted as
// confirmed, and m when the page still has room for it.
func (c *collector) confirm(m *store.Meta) (*store.Meta, bool) {
	c.st.Confirmed++
	if c.full() {
		c.more = true
		return nil, true
	}
	return m, true
}

// acceptRecorded is accept for a hit whose text was kept and whose
// record was read, and filtered, already (m nil: gone or filtered out;
// see readHit).
func (c *collector) acceptRecorded(seq uint64, text hitText, m *store.Meta) bool {
	if m == nil {
		return false
	}
	m, ok := c.confirm(m)
	if m != nil {
		c.add(seq, m, text)
	}
	return ok
}

// slabSize is how many records a recorder's slab takes at once: a page's
// at most.
func (c *collector) slabSize() int {
	if c.p.limit > 0 {
		return min(slabMetas, c.p.limit+1)
	}
	return slabMetas
}

// slabMetas is the most records a slab holds (see recorder).
const slabMetas = 64

// recorder reads the records of one goroutine's hits, decoded into a
// slab allocated for many at once instead of one allocation a hit.
// unread gives back the place read took last, for a record that does not
// go on the page; nothing else ever takes one back, so every hit's record
// stays as it was decoded.
type recorder struct {
	r    *store.MetaReader // made at the first read
	slab []store.Meta
}

// read returns the record of seq, nil when the entry is gone.
func (rc *recorder) read(st *store.Store, seq uint64, slab int) (*store.Meta, error) {
	if len(rc.slab) == cap(rc.slab) {
		rc.slab = make([]store.Meta, 0, slab)
	}
	if rc.r == nil {
		rc.r = st.NewMetaReader()
	}
	rc.slab = rc.slab[:len(rc.slab)+1]
	m := &rc.slab[len(rc.slab)-1]
	if err := rc.r.MetaInto(seq, m); err != nil {
		rc.unread()
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return m, nil
}

// readHit is read for a hit a helper goroutine found: its record when
// the entry is still there and passes f, else nil, the place given back
// (so that a filtered count keeps no record a find).
func (rc *recorder) readHit(st *store.Store, seq uint64, slab int, f *filter) (*store.Meta, error) {
	m, err := rc.read(st, seq, slab)
	if m != nil && !f.match(m) {
		rc.unread()
		m = nil
	}
	return m, err
}

// unread gives back the place read took last.
func (rc *recorder) unread() { rc.slab = rc.slab[:len(rc.slab)-1] }

func (rc *recorder) close() {
	if rc.r != nil {
		rc.r.Close()
		rc.r = nil
	}
}

// add puts the admitted hit seq on the page.
func (c *collector) add(seq uint64, m *store.Meta, text hitText) {
	if c.hits == nil && c.p.limit > 0 && !c.p.countOnly {
		// Room for the page at its first hit: growing both lists a hit
		// at a time reallocated each seven times on a page of 50.
		n := min(c.p.limit, slabMetas)
		c.hits, c.texts = make([]*store.Meta, 0, n), make([]hitText, 0, n)
	}
	c.hits = append(c.hits, m)
	if !c.p.countOnly {
		c.texts = append(c.texts, text)
	}
	c.last = seq
	if c.full() {
		c.more = true // possibly; the next page may come back empty
	}
}

// scan confirms every searchable entry in [lo, hi] in request order. The
// index is asked for candidates a window at a time (growing), so that a
// page that fills early asks about few entries.
func (c *collector) scan(ctx context.Context, lo, hi uint64) error {
	if lo > hi || lo == 0 && hi == 0 {
		return nil
	}
	if len(c.p.queries) == 0 {
		// Nothing to narrow: every text is read (mayHold applies the
		// filters alone).
		ranges, err := c.e.mayHold(c.p, []store.SeqRange{{Lo: lo, Hi: hi}}, c.st)
		if err != nil {
			return err
		}
		return c.scanRanges(ctx, ranges)
	}
	w := uint64(cmp.Or(c.p.firstWindow, scanWindow))
	if c.p.limit == 0 {
		w = math.MaxUint64 // every hit: the candidates of the whole range at once
	}
	return eachWindow(lo, hi, w, c.p.req.NewestFirst, c.full, c.grow, func(a, b uint64) error {
		ranges, err := c.e.mayHold(c.p, []store.SeqRange{{Lo: a, Hi: b}}, c.st)
		if err != nil {
			return err
		}
		return c.scanWindow(ctx, a, b, ranges)
	})
}

// scanWindow confirms ranges, the index's candidates in window [a, b]
// that passed the filters, and keeps what a count would still have to read when the
// page fills among them (see restOfWindow).
func (c *collector) scanWindow(ctx context.Context, a, b uint64, ranges []store.SeqRange) error {
	if err := c.scanRanges(ctx, ranges); err != nil || !c.full() || c.rest != nil {
		return err
	}
	rest := &restOfWindow{end: b}
	newest := c.p.req.NewestFirst
	if newest {
		rest.end = a
	}
	for _, r := range ranges {
		switch {
		case !newest && r.Hi > c.last:
			r.Lo = max(r.Lo, c.last+1)
		case newest && r.Lo < c.last:
			r.Hi = min(r.Hi, c.last-1)
		default:
			continue
		}
		rest.ranges = append(rest.ranges, r)
	}
	c.rest = rest
	return nil
}

// scanRanges confirms every searchable entry of ranges (ascending,
// disjoint) in request order, until the page is full. Lists of candidates
// are read by two goroutines taking turns (see scanShared), long scans in
// two halves at once (see scanHalves).
func (c *collector) scanRanges(ctx context.Context, ranges []store.SeqRange) error {
	n := store.Count(ranges)
	switch {
	case c.p.countOnly && c.p.filter.empty():
		return c.countOnce(ctx, ranges)
	case (c.st.Scanned >= c.e.opts.ParallelAfter || c.p.firstWindow > 0) && n >= c.e.opts.ParallelMin:
		first, second := store.Split(ranges)
		if c.p.req.NewestFirst {
			first, second = second, first
		}
		return c.scanHalves(ctx, first, second)
	case n >= 2 && n <= sharedMax && len(c.p.queries) > 0:
		// The index's candidates: sparse, and most read
		// through a block of their own. (A needle without trigrams
		// reads every entry in order, where one iterator stepping on is
		// cheaper than two seeking.)
		return c.scanShared(ctx, ranges)
	}
	return c.scanInOrder(ctx, ranges)
}

// scanInOrder is scanRanges on this goroutine alone.
func (c *collector) scanInOrder(ctx context.Context, ranges []store.SeqRange) error {
	seen, shared := c.seenTexts(0), c.reader(0)
	return c.e.st.ScanTextRefs(ranges, c.p.req.NewestFirst, func(seq uint64, text []byte, ref *store.TextRef) (bool, error) {
		c.n++
		if c.n%1024 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		if ref == nil {
			c.st.Scanned++
			_, err := c.offer(seq, text)
			return !c.full(), err
		}
		st, read, err := c.p.sharedText(seen, ref, shared.Shared, &c.arena)
		if err != nil {
			return false, err
		}
		if read {
			c.st.Scanned++
			c.st.BytesScanned += int64(st.size)
		}
		if st.isHit {
			_, err = c.acceptKept(seq, st.hit)
		}
		return !c.full(), err
	})
}

// scanHalves reads first (in request order, on this goroutine) and second
// (on another) at once: texts are decompressed by Pebble one block each,
// the larger part of a long scan, and a second core halves it. The other
// goroutine only finds the texts that hold the needle and reads their
// records (those a page can still take); they are offered after first, in
// order, so hits, order, cursor and counts are exactly those of one scan.
// When first fills the page, second is stopped and its finds dropped: its
// work then was the price of asking it.
func (c *collector) scanHalves(ctx context.Context, first, second []store.SeqRange) error {
	type find struct {
		seq  uint64
		text hitText
		m    *store.Meta // its record, when the helper read it
	}
	var (
		stop    atomic.Bool
		finds   []find
		scanned int
		nbytes  int64
		done    = make(chan error, 1)
	)
	// The helper's own: the collector's goroutine never touches them,
	// and the helper is waited for before scanHalves returns.
	seen, shared, rc := c.seenTexts(1), c.reader(1), &c.recs[1]
	slab := c.slabSize()
	// A page takes at most limit hits: the records of finds past as many
	// that pass the filters are left to this goroutine, which reads at
	// most one of them (once the page is full, the rest are not offered).
	recordMax := math.MaxInt
	if c.p.limit > 0 {
		recordMax = c.p.limit
	}
	go func() {
		var ar arena // this goroutine's, for what its finds keep
		n := 0
		found := func(seq uint64, text hitText) error {
			f := find{seq: seq, text: text}
			if len(finds) < recordMax {
				m, err := rc.readHit(c.e.st, seq, slab, &c.p.filter)
				if err != nil || m == nil {
					return err // m nil: gone since the index saw it, or filtered out
				}
				f.m = m
			}
			finds = append(finds, f)
			return nil
		}
		err := c.e.st.ScanTextRefs(second, c.p.req.NewestFirst, func(seq uint64, text []byte, ref *store.TextRef) (bool, error) {
			if n++; n%256 == 0 && (stop.Load() || ctx.Err() != nil) {
				return false, nil
			}
			if ref == nil {
				scanned++
				nbytes += int64(len(text))
				if at := c.p.find.index(text); at >= 0 {
					return true, found(seq, c.p.keep(&ar, text, at))
				}
				return true, nil
			}
			st, read, err := c.p.sharedText(seen, ref, shared.Shared, &ar)
			if err != nil {
				return false, err
			}
			if read {
				scanned++
				nbytes += int64(st.size)
			}
			if st.isHit {
				return true, found(seq, st.hit)
			}
			return true, nil
		})
		if err == nil {
			err = ctx.Err()
		}
		done <- err
	}()
	err := c.scanInOrder(ctx, first)
	if err != nil || c.full() {
		stop.Store(true)
		<-done
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	c.st.Scanned += scanned
	c.st.BytesScanned += nbytes
	for _, f := range finds {
		if f.m != nil {
			c.acceptRecorded(f.seq, f.text, f.m)
		} else if _, err := c.acceptKept(f.seq, f.text); err != nil {
			return err
		}
		if c.full() {
			break
		}
	}
	return nil
}
