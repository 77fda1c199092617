package store

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// sketchCache keeps the sketches of chunks in memory (the newest, when
// they do not all fit: see put), so
// that ruling out the entries of a candidate block costs a few memory
// reads instead of a trip through Pebble per entry. Writers drop the
// chunks they touch after committing; a chunk loaded while a writer was
// at work is used once and not kept.
type sketchCache struct {
	// textsHeld is set once a chunk is given its texts in memory (see
	// chunkTexts): until then, reads of texts do not look for them.
	textsHeld atomic.Bool
	mu        sync.Mutex
	chunks    map[uint64]*chunkSketches
	// refs[k] is what MayHold needs of cached chunk k before it reads the
	// chunk itself (zero when k is not cached), kept with chunks.
	refs []chunkRef
	gen  map[uint64]uint64 // bumped by drop, checked before keeping a load
	// runs holds the runIndex of groups of runChunks chunks, by group
	// number, counted in bytes like the chunks.
	runs map[uint64]*runIndex
	// chunkRuns holds the chunkRuns of groups of chunkRunsGroup chunks,
	// by group number, counted alike.
	chunkRuns map[uint64]*chunkRuns
	bytes     int
	max       int
	low       uint64 // the lowest chunk number cached, when lowOK
	lowOK     bool
}

func newSketchCache(max int) *sketchCache {
	return &sketchCache{chunks: map[uint64]*chunkSketches{}, gen: map[uint64]uint64{}, max: max}
}

func (c *sketchCache) get(chunk uint64) (*chunkSketches, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.chunks[chunk]; ch != nil {
		return ch, 0
	}
	return nil, c.gen[chunk]
}

// chunkRef is a cached chunk with what MayHold reads of it for each chunk
// it passes: its filter, how many entries that covers and how many of
// those have a sketch, and one past its last entry with a sketch. Read
// from the chunk, these cost a cache miss or two each (the chunk, the
// filter's header past its 200 KB of sets, the chunk's has): with the
// filters' long sets ruling out nine chunks in ten for a long needle,
// those misses were most of what an exact count cost.
type chunkRef struct {
	ch     *chunkSketches
	filter *textFilter
	n      uint32 // filter.n
	ruled  uint32 // ch.sketched(0, n-1): what the filter skips when it rules the chunk out
	known  uint32 // ch.known()
}

// refOf returns ch's chunkRef as it stands: under the cache's lock for
// the ref the cache keeps, without it for a chunk MayHold loaded (its
// filter is read atomically; the rest does not change once loaded).
func refOf(ch *chunkSketches) chunkRef {
	r := chunkRef{ch: ch, filter: ch.filter.Load(), known: uint32(ch.known())}
	if f := r.filter; f != nil && f.n > 0 {
		r.n, r.ruled = uint32(f.n), uint32(ch.sketched(0, f.n-1))
	}
	return r
}

// setRef keeps refs[chunk] as r (under c.mu).
func (c *sketchCache) setRef(chunk uint64, r chunkRef) {
	if chunk >= uint64(len(c.refs)) {
		if r.ch == nil {
			return
		}
		c.refs = slices.Grow(c.refs, int(chunk)+1-len(c.refs))[:chunk+1]
	}
	c.refs[chunk] = r
}

// getRange returns the refs of chunks first to last (zero where one is
// not cached), appended to out, under one lock: a scan through a million
// entries took the lock once a chunk, on two goroutines.
func (c *sketchCache) getRange(first, last uint64, out []chunkRef) []chunkRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	if first < uint64(len(c.refs)) {
		out = append(out, c.refs[first:min(last+1, uint64(len(c.refs)))]...)
	}
	for k := first + uint64(len(out)); k <= last; k++ {
		out = append(out, chunkRef{})
	}
	return out
}

// put keeps ch, the sketches of chunk loaded from Pebble, unless a write
// to the chunk since get returned gen makes the load stale, or the cache
// is at its bound and holds only newer chunks.
//
// At the bound the cache keeps the newest chunks, not the most recently
// used: a search through the whole history touches every chunk in order,
// so under least-recently-used eviction each chunk it loaded pushed out
// one the next search would need first, and every search loaded the
// chunks that did not fit again (1,000,012 entries under a bound of 500
// MB: first pages of 13-40 characters p50 1.9 -> 1,084 ms, exact counts
// 3.3 ms -> 3.8 s). Keeping the newest leaves the older chunks to load on
// each use and everything newer in memory, where the current session
// (what the Pi extension asks about) and a live writer's appends are.
func (c *sketchCache) put(chunk uint64, ch *chunkSketches, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[chunk] != gen || c.chunks[chunk] != nil {
		return
	}
	size := ch.size()
	for c.bytes+size > c.max && len(c.chunks) > 0 {
		old := c.oldest()
		if old > chunk {
			return // older than everything kept: used once
		}
		c.remove(old)
		c.unindexRuns(old)
	}
	c.insert(chunk, ch)
	c.bytes += size
}

// insert puts ch in the cache as chunk (under c.mu), keeping the lowest
// chunk number known.
func (c *sketchCache) insert(chunk uint64, ch *chunkSketches) {
	if c.lowOK && chunk < c.low {
		c.low = chunk
	}
	c.chunks[chunk] = ch
	c.setRef(chunk, refOf(ch))
}

// oldest returns the lowest chunk number cached (under c.mu; the cache is
// not empty). It is kept between calls, and looked for again only after
// that chunk left: a search past the bound asks once for each chunk it
// loads, and would otherwise pass over every cached chunk each time.
func (c *sketchCache) oldest() uint64 {
	if !c.lowOK {
		first := true
		for k := range c.chunks {
			if first || k < c.low {
				c.low, first = k, false
			}
		}
		c.lowOK = true
	}
	return c.low
}

func (c *sketchCache) drop(chunk uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[chunk]++
	if ch := c.chunks[chunk]; ch != nil {
		c.remove(chunk)
		c.unindexRuns(chunk)
	}
}

// freshSketch is the sketch of an entry stored under a new seq (nil when
// it has no searchable text), with its encoded record.
type freshSketch struct {
	seq    uint64
	sketch []byte
	meta   []byte
}

// groupFresh groups fresh sketches by chunk, ascending by seq within each;
// of two for one seq (an entry put twice within a batch), the later wins.
func groupFresh(fresh []freshSketch) map[uint64][]freshSketch {
	if len(fresh) == 0 {
		return nil
	}
	sorted := slices.Clone(fresh)
	slices.SortStableFunc(sorted, func(a, b freshSketch) int { return cmp.Compare(a.seq, b.seq) })
	out := map[uint64][]freshSketch{}
	for _, f := range sorted {
		c := f.seq / sketchChunk
		if g := out[c]; len(g) > 0 && g[len(g)-1].seq == f.seq {
			g[len(g)-1] = f
			continue
		}
		out[c] = append(out[c], f)
	}
	return out
}

// extended returns a copy of c with the sketches and records of add
// (entries of the chunk at base, ascending, none of which c holds yet)
// appended, or nil when c already holds an entry at or after the first of
// them: then the batch did not only append, and the chunk must be
// reloaded. The copy
// shares c's data where it can (appending only past what c reads, and
// only the cache extends a chunk, one writer at a time); its columns are
// built again when a long stretch needs them.
func (c *chunkSketches) extended(base uint64, add []freshSketch) *chunkSketches {
	first := int(add[0].seq - base)
	if c.off[first] != c.off[sketchChunk] || c.moff[first] != c.moff[sketchChunk] {
		return nil
	}
	n := &chunkSketches{off: c.off, open: c.open, has: c.has, shape: c.shape, nwide: c.nwide, data: c.data, moff: c.moff, meta: c.meta}
	// The filter's entries all lie before first (it covers entries up to
	// the last with a sketch), so it still stands for them.
	n.filter.Store(c.filter.Load())
	n.texts.Store(c.texts.Load()) // the same: its entries lie before first
	j := 0
	for i := first; i < sketchChunk; i++ {
		n.off[i] = uint32(len(n.data))
		n.moff[i] = uint32(len(n.meta))
		if j < len(add) && int(add[j].seq-base) == i {
			n.meta = append(n.meta, add[j].meta...)
			if sk := add[j].sketch; len(sk) > 0 {
				n.data = append(n.data, sk...)
				n.has[i/64] |= uint64(1) << (i % 64)
				n.markFormat(i, sk)
			}
			j++
		}
	}
	n.off[sketchChunk] = uint32(len(n.data))
	n.moff[sketchChunk] = uint32(len(n.meta))
	return n
}

// extend applies a committed batch's new entries of chunk to the cache:
// a cached chunk is replaced by its extension, and a load in flight is not
// kept (it may predate the batch).
func (c *sketchCache) extend(chunk uint64, add []freshSketch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[chunk]++
	ch := c.chunks[chunk]
	if ch == nil {
		return
	}
	c.remove(chunk)
	n := ch.extended(chunk*sketchChunk, add)
	if n == nil {
		return
	}
	c.insert(chunk, n)
	c.bytes += n.size()
}

// remove takes chunk out of the cache (under c.mu). What it took is no
// longer counted, except its place in its group's slabs, which is until
// the group's last chunk leaves.
func (c *sketchCache) remove(chunk uint64) {
	ch := c.chunks[chunk]
	delete(c.chunks, chunk)
	c.setRef(chunk, chunkRef{})
	if chunk == c.low {
		c.lowOK = false
	}
	c.bytes -= ch.size()
	if g := ch.owner; g != nil {
		g.members--
		g.held += ch.share()
		c.bytes += ch.share()
		if g.members == 0 {
			c.bytes -= g.held
			g.held = 0
		}
	}
}
