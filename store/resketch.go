package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
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
// rebuilt from the stored texts; nothing else changes. It works through the
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
	if s.sketchFrom.Load() > 1 {
		// Every searchable entry has a sketch now.
		key := append([]byte{tagMeta}, "sketch_from"...)
		if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, 1), pebble.Sync); err != nil {
			return st, fmt.Errorf("store: record that every entry is sketched in %s: %w", s.dir, err)
		}
		s.sketchFrom.Store(1)
	}
	return st, nil
}

// resketchChunk rewrites the sketches of one chunk that are missing or of
// an older format, with the write lock held.
func (s *Store) resketchChunk(c uint64, st *ResketchStats) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	lo, hi := c*sketchChunk, (c+1)*sketchChunk
	var current [sketchChunk / 64]uint64 // entries whose sketch is of the current format
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagSketch, lo), UpperBound: seqKey(tagSketch, hi)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		i := binary.BigEndian.Uint64(it.Key()[1:]) - lo
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if trigram.IsSplit(v) {
			current[i/64] |= 1 << (i % 64)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}

	// The records say which entries are searchable (each has a text);
	// only the texts whose sketch is missing or old are read.
	var stale []uint64
	it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagEntry, lo), UpperBound: seqKey(tagEntry, hi)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		seq := binary.BigEndian.Uint64(it.Key()[1:])
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if len(v) < 2 || v[0] != metaVersion {
			it.Close()
			return fmt.Errorf("entry seq %d: %w", seq, errCorruptMeta)
		}
		if v[1]&FlagSearchable == 0 {
			continue
		}
		st.Checked++
		if i := seq - lo; current[i/64]&(1<<(i%64)) == 0 {
			stale = append(stale, seq)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}

	b := s.db.NewBatch()
	defer b.Close()
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
	if err := b.Commit(pebble.Sync); err != nil {
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
