package store

import (
	"encoding/binary"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// loadChunk reads the sketches and records of one chunk from Pebble.
func (s *Store) loadChunk(chunk uint64) (*chunkSketches, error) {
	ch, err := s.loadSketches(chunk, &chunkSketches{})
	if err != nil {
		return nil, err
	}
	if err := s.loadRecords(ch, chunk*sketchChunk); err != nil {
		return nil, err
	}
	return ch, nil
}

// loadSketches reads the sketches of one chunk from Pebble into ch (of
// zero value but for its data's capacity), and marks them.
func (s *Store) loadSketches(chunk uint64, ch *chunkSketches) (*chunkSketches, error) {
	lo := chunk * sketchChunk
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagSketch, lo), UpperBound: seqKey(tagSketch, lo+sketchChunk)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	next := 0 // next offset slot to fill
	for ok := it.First(); ok; ok = it.Next() {
		i := int(binary.BigEndian.Uint64(it.Key()[1:]) - lo)
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		for ; next <= i; next++ {
			ch.off[next] = uint32(len(ch.data))
		}
		ch.data = append(ch.data, v...)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	for ; next <= sketchChunk; next++ {
		ch.off[next] = uint32(len(ch.data))
	}
	ch.mark()
	return ch, nil
}

// loadRecords reads the records of the chunk starting at seq lo into ch.
func (s *Store) loadRecords(ch *chunkSketches, lo uint64) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagEntry, lo), UpperBound: seqKey(tagEntry, lo+sketchChunk)})
	if err != nil {
		return err
	}
	defer it.Close()
	next := 0
	for ok := it.First(); ok; ok = it.Next() {
		i := int(binary.BigEndian.Uint64(it.Key()[1:]) - lo)
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		for ; next <= i; next++ {
			ch.moff[next] = uint32(len(ch.meta))
		}
		ch.meta = append(ch.meta, v...)
	}
	if err := it.Error(); err != nil {
		return err
	}
	for ; next <= sketchChunk; next++ {
		ch.moff[next] = uint32(len(ch.meta))
	}
	return nil
}

// chunkFor returns the sketches of a chunk, from the cache or Pebble.
func (s *Store) chunkFor(chunk uint64) (*chunkSketches, error) {
	ch, gen := s.sketches.get(chunk)
	if ch != nil {
		return ch, nil
	}
	ch, err := s.loadChunk(chunk)
	if err != nil {
		return nil, err
	}
	s.sketches.put(chunk, ch, gen)
	return ch, nil
}

// chunkToTest is chunkFor for MayHold: a chunk the cache would not keep
// (at its bound, older than every chunk it holds; see put) is loaded
// without its records (hits read theirs from Pebble) and marked once, so
// that test tests its sketches one by one instead of building columns
// for one use (the warm-up loads and slices a chunk in ~13 ms: 631 in
// 8.4 s at a million entries).
func (s *Store) chunkToTest(chunk uint64) (*chunkSketches, error) {
	if s.sketches.wouldKeep(chunk) {
		ch, err := s.chunkFor(chunk)
		if err != nil {
			return nil, err
		}
		if cached, _ := s.sketches.get(chunk); cached != ch {
			// The estimate was wrong (or a writer raced the load): put
			// did not keep it, so it is used once all the same.
			ch.once = true
		}
		return ch, nil
	}
	ch, _ := oncePool.Get().(*chunkSketches)
	if ch == nil {
		ch = &chunkSketches{}
	}
	ch, err := s.loadSketches(chunk, ch)
	if err != nil {
		return nil, err
	}
	ch.once = true
	return ch, nil
}

// oncePool recycles the chunks loaded for one test (see chunkToTest): a
// search past the cache's bound loads hundreds, and growing each one's
// sketches afresh took most of its CPU, half of it in the collector.
var oncePool sync.Pool

// release gives a chunk used for one test back for the next, once its
// test is over (nothing else holds it: the cache did not keep it); other
// chunks it leaves alone.
func (c *chunkSketches) release() {
	if c.once {
		*c = chunkSketches{data: c.data[:0]}
		oncePool.Put(c)
	}
}

// wouldKeep reports whether put would likely keep chunk if it were loaded
// now: the cache has room for a chunk of the size of those it holds, or
// holds an older chunk.
func (c *sketchCache) wouldKeep(chunk uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.chunks) == 0 || c.bytes+c.bytes/len(c.chunks) <= c.max || c.oldest() < chunk
}
