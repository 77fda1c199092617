package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pi-history/pi-history/trigram"
)

// ResketchStats says what Resketch did.
type ResketchStats struct {
	Checked   int `json:"checked"`   // searchable entries looked at
	Rewritten int `json:"rewritten"` // of those, sketches written anew
}

// Resketch gives every stored searchable entry a trigram sketch of the
// format trigram.Sketch writes now: entries stored by an older version
// keep the sketch it wrote (still read, but it rules out fewer texts, so
// searches read more of them), and entries stored before sketches existed
// have none (search reads every one of their texts). Their sketches are
// rebuilt from the stored texts. The session-order keys of entries stored
// by a version that copied the record there are emptied (SessionMetas
// reads the record from the entry's key); nothing else changes. It works through the
// store one chunk at a time under the write lock, so writers wait at most
// one chunk's work, and searches go on meanwhile (an old and a new sketch
// of the same text are equally correct). Cached chunks it changes are
// reloaded, with their columns when they had them. progress, when not nil,
// is called after each chunk with the seqs done and the last seq. It stops
// when ctx ends; what it has written by then is kept.
func (s *Store) Resketch(ctx context.Context, progress func(done, last uint64)) (ResketchStats, error) {
	var st ResketchStats
	last := s.LastSeq()
	for c := uint64(0); c <= last/sketchChunk; c++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := s.resketchChunk(c, &st); err != nil {
			lo := c * sketchChunk
			return st, fmt.Errorf("store: rewrite the sketches of seqs %d-%d: %w", lo, lo+sketchChunk-1, err)
		}
		if progress != nil {
			progress(min(last, (c+1)*sketchChunk-1), last)
		}
	}
	// Every searchable entry has a sketch now, and no order key a copy.
	for _, m := range []struct {
		name string
		mark *atomic.Uint64
	}{{"sketch_from", &s.sketchFrom}, {"order_copies_below", &s.copiesBelow}} {
		if m.mark.Load() > 1 {
			if err := s.setSeqMark(m.name, m.mark, 1); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// resketchChunk rewrites the sketches of one chunk that are missing or of
// an older format, with the write lock held.
func (s *Store) resketchChunk(c uint64, st *ResketchStats) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// The chunk as the cache loads it: its records say which entries are
	// searchable (each has a text), its marks which sketches are of the
	// current format; only the texts of the others are read.
	ch, err := s.loadChunk(c)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var stale []uint64
	copies := s.copiesBelow.Load()
	for i := range uint64(sketchChunk) {
		rec := ch.record(i)
		if rec == nil {
			continue
		}
		m, err := decodeMeta(rec)
		if err != nil {
			return fmt.Errorf("entry seq %d: %w", c*sketchChunk+i, err)
		}
		if m.Seq < copies {
			// Stored by a version that copied the record under the
			// session-order key (see SessionMetas): drop the copy.
			if err := b.Set(orderKey(m.Session, m.Seq), nil, nil); err != nil {
				return err
			}
		}
		if !m.Searchable() {
			continue
		}
		st.Checked++
		if !trigram.ShapeIsCurrent(ch.shape[i]) { // 0 (no 4-grams) is not current either
			stale = append(stale, c*sketchChunk+i)
		}
	}

	for _, seq := range stale {
		text, err := s.get(seqKey(tagText, seq))
		if errors.Is(err, ErrNotFound) {
			text = nil // searchable with no text stored: sketch the empty text
		} else if err != nil {
			return err
		}
		if err := b.Set(seqKey(tagSketch, seq), trigram.Sketch(text), nil); err != nil {
			return err
		}
		st.Rewritten++
	}
	if b.Empty() {
		return nil
	}
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return err
	}
	// Searches pick up the new sketches: the chunk is dropped from the
	// cache and, if it was there, loaded again as it was.
	cached, _ := s.sketches.get(c)
	s.sketches.drop(c)
	if cached != nil {
		ch, err := s.chunkFor(c)
		if err != nil {
			return err
		}
		if cached.sliced.Load() {
			ch.columns()
		}
	}
	return nil
}
