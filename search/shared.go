package search

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/pi-history/pi-history/store"
)

// A list of the index's candidates of at most sharedMax
// seqs is read by two goroutines at once, each taking the next seq in
// request order in turn (see scanShared). Longer lists are read in order,
// split in halves once the search has read Options.ParallelAfter texts.
const sharedMax = 16384

// scanShared confirms the entries of ranges (ascending, disjoint, at most
// sharedMax seqs) in request order, reading their texts with two
// goroutines: this one and a helper take the next seqs in turn, so a
// candidate list is read in about half the time (each text costs Pebble a
// block to decompress), and when the page fills, at most the texts each
// goroutine was reading are wasted. This goroutine offers the results in
// order, so hits, cursor and counts are exactly those of one scan.
func (c *collector) scanShared(ctx context.Context, ranges []store.SeqRange) error {
	seqs := make([]uint64, 0, store.Count(ranges))
	for _, r := range ranges {
		for s := r.Lo; s <= r.Hi; s++ {
			seqs = append(seqs, s)
		}
	}
	if c.p.req.NewestFirst {
		slices.Reverse(seqs)
	}
	slots := make([]sharedSlot, len(seqs))
	var next atomic.Int64 // the first seq not yet taken
	var stop atomic.Bool
	// take reads the next seq not taken yet into its slot, and reports
	// false once none is left or the scan was stopped.
	slab := c.slabSize()
	take := func(r *store.TextReader, ar *arena, seen seenTexts, rc *recorder) (bool, error) {
		if stop.Load() {
			return false, nil
		}
		j := int(next.Add(1)) - 1
		if j >= len(seqs) {
			return false, nil
		}
		s := &slots[j]
		return true, s.read(c.p, r, seqs[j], ar, seen, func() (err error) {
			s.m, err = rc.readHit(c.e.st, seqs[j], slab, &c.p.filter)
			return err
		})
	}

	done := make(chan error, 1)
	// Both readers are opened here: the helper must not touch the
	// collector.
	helper, r := c.reader(1), c.reader(0)
	go func() {
		var ar arena           // the helper's own
		seen := c.seenTexts(1) // the helper's own (see scanHalves)
		for {
			more, err := take(helper, &ar, seen, &c.recs[1])
			if err != nil || !more {
				done <- err
				return
			}
		}
	}()
	finish := func(err error) error {
		stop.Store(true)
		if herr := <-done; err == nil {
			err = herr
		}
		return err
	}

	k := 0 // the next slot to offer
	// offer hands on the ready slots from k in order, and reports false
	// once the page is full.
	offer := func() (bool, error) {
		for ; k < len(slots) && slots[k].ready.Load(); k++ {
			s := &slots[k]
			if !s.has {
				continue
			}
			c.n++
			if c.n%1024 == 0 && ctx.Err() != nil {
				return false, ctx.Err()
			}
			if !s.unread {
				c.st.Scanned++
				c.st.BytesScanned += int64(s.size)
			}
			if !s.isHit {
				continue
			}
			c.acceptRecorded(seqs[k], s.hit, s.m)
			if c.full() {
				return false, nil
			}
		}
		return true, nil
	}
	for {
		more, err := take(r, &c.arena, c.seenTexts(0), &c.recs[0])
		if err != nil {
			return finish(err)
		}
		if !more {
			break
		}
		if ok, err := offer(); err != nil || !ok {
			return finish(err)
		}
	}
	// Nothing is left to take: wait for the helper's last seqs.
	if err := <-done; err != nil {
		return err
	}
	_, err := offer()
	return err
}

// sharedSlot is what scanShared's reading of one seq found; ready is set
// once the rest is written.
type sharedSlot struct {
	ready  atomic.Bool
	has    bool        // the seq has a text
	unread bool        // what it holds was known (see seenTexts)
	size   int         // its length
	isHit  bool        // it holds the needle
	hit    hitText     // what the hit keeps of it
	m      *store.Meta // a hit's record (nil: the entry is gone, or filtered out)
}

// read fills s with what the text of seq holds for p, read with r (a text
// stored once is taken from seen when known there), keeping a hit's parts
// in ar; for a hit, record reads its record into s.m.
func (s *sharedSlot) read(p *prepared, r *store.TextReader, seq uint64, ar *arena, seen seenTexts, record func() error) error {
	text, ref, ok, err := r.Lookup(seq)
	if err != nil {
		return err
	}
	if ref != nil {
		st, read, err := p.sharedText(seen, ref, r.Shared, ar)
		if err != nil {
			return err
		}
		s.has, s.unread, s.size, s.isHit, s.hit = true, !read, st.size, st.isHit, st.hit
	} else if ok {
		s.has, s.size = true, len(text)
		if at := p.find.index(text); at >= 0 {
			s.isHit, s.hit = true, p.keep(ar, text, at)
		}
	}
	if s.isHit {
		if err := record(); err != nil {
			return err
		}
	}
	s.ready.Store(true)
	return nil
}
