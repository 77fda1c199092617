package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/pi-history/pi-history/trigram"
)

// textFilter is the trigram.Filter of a cached chunk's texts: those of its
// entries 0 to n-1, n being one past the last entry the chunk had a sketch
// for when the filter was built. Entries appended later (a live writer's)
// are not in it and are tested on their sketches as before; a chunk whose
// stored entries change is dropped from the cache, and its filter with it.
//
// A filter is built from texts read after the chunk's sketches were, so
// every entry the chunk knows has its text in it (an entry's sketch and
// text are written in one batch).
type textFilter struct {
	bits trigram.Filter
	n    uint64
}

// filterBytes is what a chunk's filter adds to the sketch cache.
const filterBytes = int(unsafe.Sizeof(textFilter{}))

// sketched counts the entries in [lo, hi] (indices in the chunk) that have
// a sketch: what a filter that rules them out skips.
func (c *chunkSketches) sketched(lo, hi uint64) int {
	n := 0
	for w := lo / 64; w <= hi/64; w++ {
		n += bits.OnesCount64(c.has[w] & wordMask(w, lo, hi))
	}
	return n
}

// wordMask marks the entries of word w (entries 64w to 64w+63) that lie in
// [lo, hi].
func wordMask(w, lo, hi uint64) uint64 {
	first, last := max(lo, w*64), min(hi, w*64+63)
	return ^uint64(0) >> (63 - (last - first)) << (first % 64)
}

// eachSketched calls fn with each entry in [lo, hi] (indices in the chunk)
// that has a sketch, in order.
func (c *chunkSketches) eachSketched(lo, hi uint64, fn func(i uint64)) {
	for w := lo / 64; w <= hi/64; w++ {
		for v := c.has[w] & wordMask(w, lo, hi); v != 0; v &= v - 1 {
			fn(w*64 + uint64(bits.TrailingZeros64(v)))
		}
	}
}

// known is one past the last entry of the chunk with a sketch, 0 when none
// has one.
func (c *chunkSketches) known() uint64 {
	for w := len(c.has) - 1; w >= 0; w-- {
		if v := c.has[w]; v != 0 {
			return uint64(w*64+63-bits.LeadingZeros64(v)) + 1
		}
	}
	return 0
}

// FilterStats says what WarmFilters built.
type FilterStats struct {
	Chunks int  // chunks that got a filter
	Loaded int  // of those, how many had it read from the store, not built
	Full   bool // stopped early: the cache bound would have been passed
	// RunGroups counts the groups of 4 chunks whose texts' runs were
	// then indexed by slices of 64 entries (see runIndex).
	RunGroups int
}

// A full chunk's filter is kept in the store once built (under
// tagFilter), so that a restart reads it instead of hashing every byte of
// the chunk's texts again (at a million entries 15-17 s of CPU at each
// start). Nothing has to remember to drop a kept filter when a chunk's
// texts change: it is used only when its record of them still holds.
// It holds the number of entries it covers and a 64-bit xxhash of their
// seqs and texts, and the chunk's texts are read and hashed again before
// it is used (fast: no trigram is hashed): a rewritten, added or dropped
// text, written by any version of pi-history, makes the filter be built
// anew. The format is storedFilterFormat, n (8 bytes), the hash (8), then
// trigram.Filter's encoding. Format 1, before the filter had its long set,
// is not read: its chunks are built again and kept as format 2.
const (
	storedFilterFormat = 2
	storedFilterBytes  = 1 + 8 + 8 + trigram.FilterEncodedBytes
)

// storedFilter returns chunk c's kept filter when it covers the n entries
// ch knows and their texts are still those it was built from; nil
// otherwise, also when what is kept cannot be decoded (it is built again,
// and kept over it).
func (s *Store) storedFilter(c uint64, ch *chunkSketches) (*textFilter, error) {
	v, err := s.get(seqKey(tagFilter, c))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := ch.known()
	if len(v) != storedFilterBytes || v[0] != storedFilterFormat || binary.BigEndian.Uint64(v[1:]) != n || n == 0 {
		return nil, nil
	}
	sum, err := s.textsSum(c, n, nil)
	if err != nil || sum != binary.BigEndian.Uint64(v[9:]) {
		return nil, err
	}
	f := &textFilter{n: n}
	if f.bits.UnmarshalBinary(v[17:]) != nil {
		return nil, nil
	}
	return f, nil
}

// textsSum hashes the texts of chunk c's first n entries (each present
// seq, the length of its text, the text) and, when f is not nil, adds
// each text to it on the way.
func (s *Store) textsSum(c, n uint64, f *trigram.Filter) (uint64, error) {
	d := xxhash.New()
	var head [16]byte
	base := c * sketchChunk
	err := s.ScanTexts(base, base+n-1, false, func(seq uint64, text []byte) bool {
		binary.BigEndian.PutUint64(head[:8], seq)
		binary.BigEndian.PutUint64(head[8:], uint64(len(text)))
		d.Write(head[:])
		d.Write(text)
		if f != nil {
			f.Add(text)
		}
		return true
	})
	return d.Sum64(), err
}

// keepFilter stores f, chunk c's filter whose texts hash to sum, when
// every seq of the chunk has been given (a chunk still filling would be
// built again at the next start anyway). Failing to store it costs only
// the next start's rebuild, so the error is dropped.
func (s *Store) keepFilter(c uint64, f *textFilter, sum uint64) {
	if (c+1)*sketchChunk-1 > s.LastSeq() {
		return
	}
	v := make([]byte, 17, storedFilterBytes)
	v[0] = storedFilterFormat
	binary.BigEndian.PutUint64(v[1:], f.n)
	binary.BigEndian.PutUint64(v[9:], sum)
	v, _ = f.bits.AppendBinary(v)
	if s.writable() != nil {
		return
	}
	b := s.db.NewBatch()
	defer b.Close()
	if b.Set(seqKey(tagFilter, c), v, nil) == nil {
		_ = s.commitBatch(b, pebble.NoSync)
	}
}

// WarmFilters gives every chunk in the sketch cache that has none a filter
// of its texts' byte trigrams (see trigram.Filter), so that a search for a
// needle rules out whole chunks whose texts lack one of its trigrams. It
// reads each chunk's texts once (cheaply after WarmTexts). It stops at the
// cache's bound and when ctx ends; searches and writes may run meanwhile.
// A full chunk's filter kept by an earlier run is read back instead of
// built when the chunk's texts are still those it was built from (see
// storedFilter). A server calls it once in the background after it
// starts, after the sketches.
func (s *Store) WarmFilters(ctx context.Context) (FilterStats, error) {
	var fs FilterStats
	s.builds.start(s)
	last, from := s.LastSeq(), s.sketchFrom.Load()
	if last < from || last == 0 {
		return fs, nil
	}
	for c := from / sketchChunk; c <= last/sketchChunk; c++ {
		if err := ctx.Err(); err != nil {
			return fs, err
		}
		ch, _ := s.sketches.get(c)
		if ch == nil || ch.filter.Load() != nil {
			continue
		}
		if s.sketches.room() < filterBytes {
			fs.Full = true
			return fs, nil
		}
		f, err := s.storedFilter(c, ch)
		if err != nil {
			return fs, fmt.Errorf("read the kept text filter of seqs %d-%d: %w", c*sketchChunk, c*sketchChunk+sketchChunk-1, err)
		}
		loaded := f != nil
		if !loaded {
			if f, err = s.buildFilter(c, ch); err != nil {
				return fs, fmt.Errorf("build the text filter of seqs %d-%d: %w", c*sketchChunk, c*sketchChunk+sketchChunk-1, err)
			}
		}
		if f != nil && s.sketches.attach(c, ch, f) {
			fs.Chunks++
			if loaded {
				fs.Loaded++
			}
		}
	}
	n, err := s.indexAllRuns(ctx)
	fs.RunGroups = n
	if err != nil {
		return fs, fmt.Errorf("index the runs of the chunks' texts: %w", err)
	}
	return fs, nil
}

// Filtered reports whether chunks get filters in this process (once
// WarmFilters has been called, until Close): only then is a needle
// without trigrams worth sending through MayHold.
func (s *Store) Filtered() bool { return s.builds.on.Load() }

// filterBuilds builds, on one goroutine of its own, the filters of full
// chunks that a search found without one: chunks loaded after the
// warm-up (dropped by a rewrite, evicted, or filled by a live writer
// since, also in a store that was empty when it started). It starts with
// the first WarmFilters, so that a process that only imports or answers
// one search builds none, and stops with the store.
type filterBuilds struct {
	mu      sync.Mutex // over started and closed
	started bool
	closed  bool
	on      atomic.Bool // started and not stopped
	queue   chan uint64
	done    chan struct{}
	wg      sync.WaitGroup
}

// start starts b's goroutine for store s, unless it runs already or b was
// stopped.
func (b *filterBuilds) start(s *Store) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started || b.closed {
		return
	}
	b.started = true
	b.queue, b.done = make(chan uint64, 64), make(chan struct{})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.done:
				return
			case c := <-b.queue:
				s.buildAsked(c)
			}
		}
	}()
	b.on.Store(true)
}

// ask asks b for the filter of chunk c, cached as ch, unless it was asked
// already or b is not running; a full queue drops the request (a later
// search asks again).
func (b *filterBuilds) ask(c uint64, ch *chunkSketches) {
	if !b.on.Load() || !ch.asked.CompareAndSwap(false, true) {
		return
	}
	select {
	case b.queue <- c:
	default:
		ch.asked.Store(false)
	}
}

// stop ends b's goroutine, if it runs, and waits for it; b starts no
// more.
func (b *filterBuilds) stop() {
	b.mu.Lock()
	b.closed = true
	if b.on.Swap(false) {
		close(b.done)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// buildAsked builds the filter of chunk c if it is still cached without
// one and the cache has room.
func (s *Store) buildAsked(c uint64) {
	ch, _ := s.sketches.get(c)
	if ch == nil || s.sketches.room() < filterBytes {
		return
	}
	if f := ch.filter.Load(); f != nil && f.n >= ch.known() {
		return
	}
	if f, err := s.buildFilter(c, ch); err == nil && f != nil {
		// A failed read leaves the chunk as it was: searches test its
		// sketches, as before filters.
		if s.sketches.attach(c, ch, f) {
			// A failed read leaves the group's index as it was: the
			// chunk is tested on its own filter.
			s.indexChunkRuns(c / chunkRunsGroup)
			_, _ = s.indexRuns(c / runChunks)
		}
	}
}

// buildFilter builds the filter of chunk c, whose cached sketches are ch,
// from the texts of the entries ch knows, and keeps it in the store when
// the chunk is full (see keepFilter). It returns nil when ch knows none.
func (s *Store) buildFilter(c uint64, ch *chunkSketches) (*textFilter, error) {
	n := ch.known()
	if n == 0 {
		return nil, nil
	}
	f := &textFilter{n: n}
	sum, err := s.textsSum(c, n, &f.bits)
	if err != nil {
		return nil, err
	}
	s.keepFilter(c, f, sum)
	return f, nil
}

// attach gives ch, the cached chunk c, its filter f, counting it in the
// cache's size; it reports false (and attaches nothing) when c is no
// longer cached as ch, or has a filter covering as many entries.
func (c *sketchCache) attach(chunk uint64, ch *chunkSketches, f *textFilter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := ch.filter.Load()
	if c.chunks[chunk] != ch || old != nil && old.n >= f.n {
		return false
	}
	ch.filter.Store(f)
	c.setRef(chunk, refOf(ch))
	if old == nil {
		c.bytes += filterBytes
	}
	return true
}
