package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pi-history/pi-history/trigram"
)

const (
	// sketchChunk is how many consecutive seqs the sketch cache loads and
	// drops at a time.
	sketchChunk = 1024
	// DefaultSketchCacheBytes bounds the sketches kept in memory when
	// Options.SketchCacheBytes does not: about a million entries' worth
	// (~980 bytes each over the benchmark corpus, with their records,
	// columns and chunk filters).
	DefaultSketchCacheBytes = 1 << 30
)

// chunkSketches is the sketches of one chunk of seqs: the sketch of seq
// c*sketchChunk+i is data[off[i]:off[i+1]], empty when it has none.
//
// Once a search tests a long stretch of the chunk, the chunk also holds
// its sketches bit-sliced (see trigram.Row): cols[q] has bit i set when
// entry i's row has bit q, so one AND of a column word tests 64 entries at
// once. Short stretches (a candidate block, the newest entries) of a chunk
// without columns test each sketch instead: building the columns costs
// more than that. Once the columns are there (a long stretch was tested, or
// the cache was warmed), short stretches use them too: a candidate block's
// sixteen entries then cost a few column words instead of a cache miss or
// more for each sketch (index-planned first pages, warm, in-process: p90
// 15-16 -> 11 ms, p99 25-27 -> 15 ms). open marks the entries whose
// sketch a row cannot stand for (an older format): they are always tested
// one by one. has marks the entries with a sketch.
type chunkSketches struct {
	off  [sketchChunk + 1]uint32
	data []byte
	// The entries' records (Meta, encoded) the same way: the record of
	// entry i is meta[moff[i]:moff[i+1]], empty when there is none. A
	// search's hits decode theirs from here instead of a point read
	// through Pebble each (~130 bytes an entry: ~130 MB at a million).
	moff [sketchChunk + 1]uint32
	meta []byte
	open [sketchChunk / 64]uint64
	has  [sketchChunk / 64]uint64
	// shape[i] is trigram.Shape of entry i's sketch of format 3 or 4 (with
	// 4-grams; never 0), 0 for another format, kept here so that testing a
	// sketch does not first read its last bytes.
	shape    [sketchChunk]uint8
	colsOnce sync.Once
	cols     colView
	// The wide rows (trigram.WideRow) of the entries whose sketch has
	// one, built with cols: wide lists those entries in order, and word
	// k of wideCols' column q has bit j set when the wide row of entry
	// wide[64*k+j] has bit q; wideMask[k] marks the valid bits. Columns
	// from trigram.WideBits on are the same for the entries' wide 4-gram
	// rows (trigram.WideFourRow; every bit set for an entry without one).
	wide     []uint16
	wideCols colView
	wideMask []uint64
	wideAt   [sketchChunk / 64]uint64 // the entries of wide, by index in the chunk
	nwide    int                      // entries with a wide row, counted as sketches are marked
	sliced   atomic.Bool              // cols is built
	// filter holds the bytes of the chunk's first texts (see
	// textFilter), nil until WarmFilters or a background build (see
	// filterBuilds) gives it one; set under the cache's lock.
	filter atomic.Pointer[textFilter]
	asked  atomic.Bool // a filter build was asked for (see filterBuilds)
	// texts holds the chunk's texts in memory, for the chunks at both
	// ends of the history (see chunkTexts); set under the cache's lock.
	texts atomic.Pointer[chunkTexts]
	// once marks a chunk loaded for one test, without its records, that
	// the cache does not keep (see Store.chunkToTest).
	once bool
	// owner is the slab group this chunk has a place in (see
	// sliceGroup), nil when none; set under the cache's lock.
	owner *slabGroup
}

// slabGroup accounts for the slabs a group of chunks shares: a chunk's
// place in them lives as long as any chunk of the group does, so when a
// chunk leaves the cache its share stays counted (held) until the last
// member leaves. Its fields are under the cache's lock.
type slabGroup struct {
	members int // chunks of the group the cache holds
	held    int // the shares of those that left
}

// share is what the chunk's place in its group's slabs takes.
func (c *chunkSketches) share() int { return colsBytes + 8*c.wideWords()*wideCols }

const (
	colsBytes = trigram.SliceBits * sketchChunk / 8
	// wideCols is the number of columns of the wide rows: trigrams, then
	// 4-grams.
	wideCols = 2 * trigram.WideBits
	// sliceMin is the shortest stretch of a chunk tested on its columns.
	sliceMin = 256
)

// size is what the chunk may hold, its columns included.
func (c *chunkSketches) size() int {
	// The wide rows' columns are counted before they are built, so that
	// a chunk's size does not change behind the cache's back (a filter is
	// attached under its lock, which counts it then); 24 bytes a word of
	// entries are the open, has and wideAt bitmaps.
	nw := (c.nwide + 63) / 64
	n := len(c.data) + len(c.meta) + 4*len(c.off) + 4*len(c.moff) + 64 + 24*len(c.open) + len(c.shape) + colsBytes +
		2*c.nwide + 8*nw*(wideCols+1)
	if c.filter.Load() != nil {
		n += filterBytes
	}
	if t := c.texts.Load(); t != nil {
		n += t.bytes()
	}
	return n
}

// record returns the encoded record of entry i, nil when it has none.
func (c *chunkSketches) record(i uint64) []byte {
	if a, b := c.moff[i], c.moff[i+1]; a < b {
		return c.meta[a:b]
	}
	return nil
}

// mark fills has and open from the sketches.
func (c *chunkSketches) mark() {
	for i := range sketchChunk {
		a, b := c.off[i], c.off[i+1]
		if a == b {
			continue
		}
		word, bit := i/64, uint64(1)<<(i%64)
		c.has[word] |= bit
		c.markFormat(i, c.data[a:b])
	}
}

// markFormat records the format of the sketch sk of entry i: open when a
// row cannot stand for it, its shape when it has 4-grams.
func (c *chunkSketches) markFormat(i int, sk []byte) {
	word, bit := i/64, uint64(1)<<(i%64)
	format, triBytes := trigram.Layout(sk)
	switch format {
	case 3, 4:
		c.shape[i] = trigram.Shape(sk)
	case 1:
		c.open[word] |= bit
	}
	if triBytes >= trigram.WideBits/8 { // as trigram.WideRow decides
		c.nwide++
	}
}

// colView is a chunk's view of bit-sliced columns: word k of column q is
// words[q*stride+k]. A chunk sliced on its own holds its columns alone
// (stride: its words per column); chunks warmed together share one slab
// (see sliceGroup), where column q of every chunk of the group lies in one
// run of memory, chunk after chunk. A scan through many chunks then reads
// each of the needle's columns front to back, which the processor
// prefetches, instead of a few words here and there in each chunk's own
// 128 KB.
type colView struct {
	words  []uint64
	stride int
}

// word returns word k of column q.
func (v colView) word(q uint16, k int) uint64 { return v.words[int(q)*v.stride+k] }

// slab is columns laid out for a group of chunks: column q of the group
// is words[q*stride:(q+1)*stride], each chunk's words at its own offset.
type slab struct {
	words  []uint64
	stride int
}

// view is the chunk's view of s, its words starting at off in each column.
func (s slab) view(off int) colView { return colView{words: s.words[off:], stride: s.stride} }

// columns returns the chunk's bit-sliced rows, building them (in memory of
// their own) on first use.
func (c *chunkSketches) columns() colView {
	c.colsOnce.Do(func() { c.slice(slab{}, 0, slab{}, 0) })
	return c.cols
}

// orderProbe returns p with its trigrams ordered by how many entries of
// chunk c have their bits set (fewest first), its row positions ordered
// the same way one by one (the columns AND them in any order), and its
// wide-row positions ordered by how many of c's wide rows have them.
func orderProbe(c *chunkSketches, p *trigram.Probe) (*trigram.Probe, []uint16, []uint16) {
	cols := c.columns()
	var dens [trigram.SliceBits]int
	pos := p.SlicePositions()
	for _, q := range pos {
		for k := range sketchChunk / 64 {
			dens[q] += bits.OnesCount64(cols.word(q, k))
		}
	}
	o := p.Ordered(func(q1, q2 uint16) int { return min(dens[q1], dens[q2]) })
	slices.SortStableFunc(pos, func(a, b uint16) int { return cmp.Compare(dens[a], dens[b]) })
	pos2 := p.WidePositions()
	if len(c.wideMask) > 0 {
		type qd struct{ q, d uint16 }
		wdens := make([]qd, len(pos2))
		for j, q := range pos2 {
			wdens[j].q = q
			for k := range c.wideMask {
				wdens[j].d += uint16(bits.OnesCount64(c.wideCols.word(q, k)))
			}
		}
		slices.SortStableFunc(wdens, func(a, b qd) int { return cmp.Compare(a.d, b.d) })
		for j := range wdens {
			pos2[j] = wdens[j].q
		}
	}
	return o, pos, pos2
}

// probeOrder is a probe ordered by orderProbe, with its positions.
type probeOrder struct {
	p         *trigram.Probe
	pos, pos2 []uint16
}

// orderedProbe is orderProbe(c, p), worked out once for p (kept in its
// Memo) and reused by each later call.
func orderedProbe(c *chunkSketches, p *trigram.Probe) (*trigram.Probe, []uint16, []uint16) {
	m := p.Memo()
	if m != nil {
		if o, ok := m.Load().(*probeOrder); ok {
			return o.p, o.pos, o.pos2
		}
	}
	o, pos, pos2 := orderProbe(c, p)
	if m != nil {
		m.Store(&probeOrder{p: o, pos: pos, pos2: pos2})
	}
	return o, pos, pos2
}

// slice builds cols and the wide rows' columns from the sketches: in the
// slabs given (at word offsets off and woff of each column) when they have
// words, else in memory of the chunk's own.
func (c *chunkSketches) slice(narrow slab, off int, wide slab, woff int) {
	if narrow.words == nil {
		narrow = slab{words: make([]uint64, trigram.SliceBits*sketchChunk/64), stride: sketchChunk / 64}
		off = 0
	}
	c.cols = narrow.view(off)
	// The rows of each 64 entries, then each 64-by-64 block of them
	// transposed: a row has a fifth to a third of its bits set, and
	// setting each bit in its column one by one took 4.6 of the 14 s the
	// warm-up of a million entries took (the wide rows, nearly full, 6.3).
	var rows [64][trigram.SliceBits / 64]uint64
	for word := range sketchChunk / 64 {
		n := 0
		for r := range rows {
			i := word*64 + r
			if a, b := c.off[i], c.off[i+1]; a == b || !trigram.Row(c.data[a:b], &rows[r]) {
				clear(rows[r][:])
				continue
			}
			n++
		}
		if n > 0 {
			transposeInto(c.cols, word, func(r, w int) uint64 { return rows[r][w] }, trigram.SliceBits/64)
		}
	}
	c.sliceWide(wide, woff)
	c.sliced.Store(true)
}

// wideWords is how many words of 64 entries the chunk's wide rows take,
// as counted when its sketches were marked.
func (c *chunkSketches) wideWords() int { return (c.nwide + 63) / 64 }

// sliceWide builds the columns of the chunk's wide rows, in the slab given
// (at word offset off of each column) when it has words and room for
// them, else in memory of the chunk's own.
func (c *chunkSketches) sliceWide(into slab, off int) {
	var row, four [trigram.WideBits / 64]uint64
	rows := make([][wideCols / 64]uint64, 0, c.nwide)
	c.wide = make([]uint16, 0, c.nwide)
	for i := range sketchChunk {
		if a, b := c.off[i], c.off[i+1]; a < b && trigram.WideRow(c.data[a:b], &row) {
			c.wide = append(c.wide, uint16(i))
			c.wideAt[i/64] |= 1 << (i % 64)
			if !trigram.WideFourRow(c.data[a:b], &four) {
				for w := range four {
					four[w] = ^uint64(0)
				}
			}
			var both [wideCols / 64]uint64
			copy(both[:], row[:])
			copy(both[len(row):], four[:])
			rows = append(rows, both)
		}
	}
	if len(c.wide) == 0 {
		return
	}
	nw := (len(c.wide) + 63) / 64
	c.wideMask = make([]uint64, nw)
	for j := range c.wide {
		c.wideMask[j/64] |= 1 << (j % 64)
	}
	if into.words == nil || nw > c.wideWords() {
		into = slab{words: make([]uint64, wideCols*nw), stride: nw}
		off = 0
	}
	c.wideCols = into.view(off)
	for k := range nw {
		transposeInto(c.wideCols, k, func(r, w int) uint64 {
			if j := k*64 + r; j < len(rows) {
				return rows[j][w]
			}
			return 0
		}, wideCols/64)
	}
}

// transposeInto ORs into word k of every column of v the bits of 64
// rows: bit r of column q's word k is bit q of row r, where word w of row
// r is row(r, w) and each row has words words. It goes a 64-by-64 block
// at a time.
func transposeInto(v colView, k int, row func(r, w int) uint64, words int) {
	var blk [64]uint64
	for w := range words {
		for r := range blk {
			blk[r] = row(r, w)
		}
		transpose64(&blk)
		for b, x := range blk {
			if x != 0 {
				v.words[(w*64+b)*v.stride+k] |= x
			}
		}
	}
}

// transpose64 transposes the 64-by-64 bit matrix m in place: afterwards
// bit r of m[q] is what bit q of m[r] was. Blocks of 32, 16, ... 1 bits
// swap across the diagonal in turn.
func transpose64(m *[64]uint64) {
	mask := uint64(0x00000000FFFFFFFF)
	for j := 32; j != 0; j, mask = j>>1, mask^(mask<<(j>>1)) {
		for k := range 64 {
			if k&j != 0 {
				continue
			}
			t := (m[k]>>j ^ m[k|j]) & mask
			m[k] ^= t << j
			m[k|j] ^= t
		}
	}
}

// sliceGroup builds the columns of chunks (consecutive, cached, none
// sliced yet) in two slabs they share, one for the narrow rows and one for
// the wide. Chunks the cache no longer holds, or already sliced, are left
// out. (A chunk that a search slices between that check and its turn here
// keeps its own columns; its place in the slabs stays empty, counted as
// long as the group lives.)
func (c *sketchCache) sliceGroup(ids []uint64, all []*chunkSketches) {
	g := &slabGroup{}
	var chunks []*chunkSketches
	c.mu.Lock()
	for k, ch := range all {
		if c.chunks[ids[k]] == ch && ch.owner == nil && !ch.sliced.Load() {
			ch.owner = g
			g.members++
			chunks = append(chunks, ch)
		}
	}
	c.mu.Unlock()
	if len(chunks) == 0 {
		return
	}
	narrow := slab{stride: len(chunks) * (sketchChunk / 64)}
	narrow.words = make([]uint64, trigram.SliceBits*narrow.stride)
	woffs := make([]int, len(chunks))
	var wide slab
	for k, ch := range chunks {
		woffs[k] = wide.stride
		wide.stride += ch.wideWords()
	}
	if wide.stride > 0 {
		wide.words = make([]uint64, wideCols*wide.stride)
	}
	for k, ch := range chunks {
		ch.colsOnce.Do(func() { ch.slice(narrow, k*(sketchChunk/64), wide, woffs[k]) })
	}
}

// widePass returns the entries of lo..hi whose wide row has every position of pos2
// (see trigram.Probe.WidePositions) and whose wide 4-gram row has every
// position of pos4 (trigram.Probe.WideFourPositions): the others' sketches
// fail the probe. (It returns those that pass, not those that fail: nearly
// all fail, and marking each took a third of its time.) It may also mark
// entries just outside lo..hi. Only the words of wide that hold entries
// of lo..hi are tested, so a stretch over part of a chunk (a branch's
// entries, the newest of a window) costs its share of the chunk's words.
func (c *chunkSketches) widePass(pos2, pos4 []uint16, lo, hi uint64, live uint16) (pass [sketchChunk / 64]uint64) {
	from, to := c.wideBefore(lo)/64, (c.wideBefore(hi+1)+63)/64
	for k := from; k < min(to, len(c.wideMask)); k++ {
		if live != ^uint16(0) {
			// Words the run index ruled out are not tested: skip the
			// wide rows whose entries lie in those alone.
			a, b := c.wide[k*64]/64, c.wide[min(k*64+63, len(c.wide)-1)]/64
			if live>>a&(1<<(b-a+1)-1) == 0 {
				continue
			}
		}
		acc := c.wideMask[k]
		for _, q := range pos2 {
			if acc &= c.wideCols.word(q, k); acc == 0 {
				break
			}
		}
		for _, q := range pos4 {
			if acc == 0 {
				break
			}
			acc &= c.wideCols.word(trigram.WideBits+q, k)
		}
		for v := acc; v != 0; v &= v - 1 {
			i := c.wide[k*64+bits.TrailingZeros64(v)]
			pass[i/64] |= 1 << (i % 64)
		}
	}
	return pass
}

// wideBefore returns how many of the chunk's entries before entry i
// (i <= sketchChunk) have a wide row: the place in wide of the first at
// or after i.
func (c *chunkSketches) wideBefore(i uint64) int {
	n := 0
	for w := range i / 64 {
		n += bits.OnesCount64(c.wideAt[w])
	}
	if i%64 != 0 {
		n += bits.OnesCount64(c.wideAt[i/64] & (1<<(i%64) - 1))
	}
	return n
}

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

// MayHold narrows ranges (ascending, disjoint) to the seqs whose text may
// hold the needle of probe p: those whose trigram sketch passes it, and
// those stored before sketches were kept. Seqs with neither text nor
// sketch drop out. The result is ascending, with adjacent seqs joined into
// one range; skipped counts the sketched entries ruled out. Where the
// sketches pass nearly every entry, only a sample of them is read (see
// sketchOdds), so the result may also hold entries whose sketch fails:
// never one fewer than the sketches pass.
//
// Over long stretches, entries are tested 64 at a time on the chunk's
// bit-sliced rows first; only those that pass are tested on their own
// sketch, and not even that when the row was the whole sketch.
//
// A chunk with a filter of its texts' bytes (see WarmFilters) is first
// tested on it, and its entries are skipped at once when it lacks the
// needle's. A probe without trigrams (a needle of one or two characters)
// is tested on the filters alone: every entry with a sketch in a chunk
// that passes is kept.
//
// Ranges spanning holdSplitMin seqs or more are tested in two halves at
// once, the upper half on another goroutine.
func (s *Store) MayHold(ranges []SeqRange, p *trigram.Probe) (out []SeqRange, skipped int, err error) {
	if !wellFormed(ranges) || Count(ranges) < holdSplitMin {
		return s.mayHold(ranges, p)
	}
	lower, upper := Split(ranges)
	var (
		uout  []SeqRange
		uskip int
		uerr  error
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		uout, uskip, uerr = s.mayHold(upper, p)
	}()
	out, skipped, err = s.mayHold(lower, p)
	<-done
	if err == nil {
		err = uerr
	}
	if err != nil {
		return nil, 0, err
	}
	if n := len(out); n > 0 && len(uout) > 0 && out[n-1].Hi+1 == uout[0].Lo {
		out[n-1].Hi = uout[0].Hi
		uout = uout[1:]
	}
	return append(out, uout...), skipped + uskip, nil
}

// holdSplitMin is the fewest seqs MayHold tests on two goroutines. A
// search for a needle made of common trigrams tests the sketches of the
// whole history a growing window at a time (a first page that tested a
// million sketches and read 124 texts took 25 ms); windows of this size
// and more are split.
var holdSplitMin uint64 = 64 * sketchChunk

// wellFormed reports whether every range has Lo <= Hi.
func wellFormed(ranges []SeqRange) bool {
	for _, r := range ranges {
		if r.Lo > r.Hi {
			return false
		}
	}
	return true
}

// filterVerdict is what a chunk's filter said of a probe.
type filterVerdict uint8

const (
	untested filterVerdict = iota // no filter, or not worth testing
	mayPass
	ruledOut
)

// mayHold is MayHold on this goroutine alone.
func (s *Store) mayHold(ranges []SeqRange, p *trigram.Probe) (out []SeqRange, skipped int, err error) {
	add := func(lo, hi uint64) {
		if n := len(out); n > 0 && out[n-1].Hi+1 == lo {
			out[n-1].Hi = hi
			return
		}
		out = append(out, SeqRange{Lo: lo, Hi: hi})
	}
	pos, pos2, pos4 := p.SlicePositions(), p.WidePositions(), p.WideFourPositions()
	ordered := len(pos) <= 2
	var held []chunkRef
	var verdicts []filterVerdict
	// tested is the last filter tested, passed its answer: the ranges of
	// candidate blocks meet one chunk many times.
	var tested *textFilter
	passed := true
	// seen is the last chunk met: the ranges of candidate blocks meet a
	// chunk many times, and it is asked for a filter once.
	var seen *chunkSketches
	from := s.sketchFrom.Load()
	var odds sketchOdds // how often the entries' own sketches have passed
	// The run index of the group met last, and the slices of it its
	// runs passed (see runIndex): the chunks of a range, and the
	// ranges, come in order.
	var runBuf [trigram.RunsMax]uint32
	runs := runBuf[:0]
	if useRunIndex {
		for _, b := range p.Runs() {
			runs = append(runs, b>>runShift)
		}
	}
	group, index, indexPass := ^uint64(0), (*runIndex)(nil), uint64(0)
	coarse, coarseIndex, coarsePass := ^uint64(0), (*chunkRuns)(nil), uint64(0)
	var lives []uint16 // the words of each chunk of a range its index leaves to test
	for k, r := range ranges {
		if r.Lo > r.Hi {
			continue
		}
		// alone says no other range meets the chunks r meets: its
		// stretch is tested on its own sketches, not the columns, whose
		// words no other stretch would read (see chunkSketches.test).
		alone := (k == 0 || ranges[k-1].Hi/sketchChunk != r.Lo/sketchChunk) &&
			(k == len(ranges)-1 || ranges[k+1].Lo/sketchChunk != r.Hi/sketchChunk)
		if r.Lo < from {
			hi := min(r.Hi, from-1)
			add(r.Lo, hi)
			if hi == r.Hi {
				continue
			}
			r.Lo = hi + 1
		}
		first := r.Lo / sketchChunk
		cached := s.sketches.getRange(first, r.Hi/sketchChunk, held[:0])
		held = cached
		// The filters of the range's cached chunks are tested first, in
		// a loop of their own. Each test is a cache miss or more (the
		// filter's sets span 200 KB); with nothing else between them
		// the processor has several in flight at once, where the work on
		// each chunk kept them one after another.
		verdicts, lives = verdicts[:0], lives[:0]
		for k := range cached {
			ref, v := &cached[k], untested
			c := first + uint64(k)
			base := c * sketchChunk
			if f := ref.filter; f != nil && len(runs) > 0 && max(r.Lo, base)-base < uint64(ref.n) {
				// A long needle: the chunk's group's chunkRuns judges
				// it, then its group's run index its slices, each
				// while it was built for the chunk's filter.
				if g := c / chunkRunsGroup; g != coarse {
					coarse, coarseIndex = g, s.sketches.chunkRunsOf(g)
					if coarseIndex != nil {
						coarsePass = coarseIndex.pass(p.Runs())
					}
				}
				judged := coarseIndex != nil && coarseIndex.from[c%chunkRunsGroup] == f
				if judged && coarsePass&(1<<(c%chunkRunsGroup)) == 0 {
					verdicts, lives = append(verdicts, ruledOut), append(lives, ^uint16(0))
					continue
				}
				if g := c / runChunks; g != group {
					group, index = g, s.sketches.runIndexOf(g)
					if index != nil {
						indexPass = index.pass(runs)
					}
				}
				if index != nil && index.from[c%runChunks] == f {
					live := index.live(indexPass, c%runChunks)
					v = ruledOut
					if live != 0 {
						v = mayPass
					}
					verdicts, lives = append(verdicts, v), append(lives, live)
					continue
				}
				if judged {
					verdicts, lives = append(verdicts, mayPass), append(lives, ^uint16(0))
					continue
				}
			}
			lives = append(lives, ^uint16(0))
			if f := ref.filter; f != nil && max(r.Lo, base)-base < uint64(ref.n) && (f == tested || p.FilterWorthIt()) {
				if f != tested {
					tested, passed = f, p.PassFilter(&f.bits)
				}
				v = ruledOut
				if passed {
					v = mayPass
				}
			}
			verdicts = append(verdicts, v)
		}
		for c := first; c <= r.Hi/sketchChunk; c++ {
			base := c * sketchChunk
			lo, hi := max(r.Lo, base)-base, min(r.Hi-base, sketchChunk-1)
			ref, v, live := cached[c-first], verdicts[c-first], lives[c-first]
			cachedRef := ref.ch != nil // release has nothing to do for it
			if ref.ch == nil {
				ch, err := s.chunkToTest(c)
				if err != nil {
					return nil, 0, err
				}
				ref = refOf(ch) // loaded for this test, or cached meanwhile
			}
			ch, sf, sn := ref.ch, ref.filter, uint64(ref.n)
			if ch != seen && (sf == nil || sn < uint64(ref.known)) {
				seen = ch
				if ch.once {
					seen = nil // recycled: another chunk may come back in it
				} else if (c+1)*sketchChunk <= s.LastSeq()+1 {
					// A full chunk loaded, or filled, since the warm-up.
					s.builds.ask(c, ch)
				}
			}
			if f := sf; v == untested && f != nil && lo < sn && (f == tested || p.FilterWorthIt()) {
				// A chunk loaded for this test (or cached since the
				// range's were looked up) that has a filter.
				if f != tested {
					tested, passed = f, p.PassFilter(&f.bits)
				}
				if v = mayPass; !passed {
					v = ruledOut
				}
			}
			if v == ruledOut {
				// The chunk's filter rules out its first sn entries at
				// once: it lacks one of the needle's byte trigrams (or
				// its pair or byte; for a long needle, one of its runs).
				end := min(hi, sn-1)
				if lo == 0 && end == sn-1 {
					skipped += int(ref.ruled)
				} else {
					skipped += ch.sketched(lo, end)
				}
				if end == hi {
					if !cachedRef {
						ch.release()
					}
					continue
				}
				lo = end + 1
			}
			if p.Empty() {
				// No trigram for the sketches (a needle of one or two
				// characters, tested on the filters alone): every entry
				// with a sketch (every searchable entry) may hold it.
				ch.eachSketched(lo, hi, func(i uint64) { add(base+i, base+i) })
				ch.release()
				continue
			}
			if hi-lo+1 >= sliceMin && !ordered && !ch.once {
				// Once per search: the trigrams fewest entries of the
				// first chunk tested at length have are tested first,
				// by columns and sketches. Worked out once per call, as
				// before, it cost an exact count of 20 characters ~300 µs
				// of CPU (13%): a count calls MayHold for each of its
				// windows, each half of one on its own.
				p, pos, pos2 = orderedProbe(ch, p)
				ordered = true
			}
			skipped += ch.test(p, pos, pos2, pos4, lo, hi, live, alone, &odds, func(i uint64) { add(base+i, base+i) })
			ch.release()
		}
	}
	return out, skipped, nil
}

// test calls pass with each entry i in [lo, hi] (indices in the chunk)
// whose sketch passes p, and returns how many sketched entries it ruled
// out. pos are p's row positions, pos2 and pos4 its wide-row positions
// (trigrams, 4-grams). Stretches of sliceMin entries or more, and any
// stretch once the columns are built, are tested on the columns first,
// except in a chunk loaded for one test (once), whose columns would cost
// more than they save; in a long stretch, the entries
// with a wide row are tested on the wide rows' columns (widePass) instead,
// before any of their sketches is read. (A candidate block's few entries
// would not repay the wide columns' cost.) Their narrow rows, folded from
// 4,096 bits or more, have nearly every bit set and ruled out almost
// nothing, but kept a word's columns from running dry: with them, the
// columns of ~23 of a 26-position needle's positions were read for each
// 64 entries; without them, ~5.5 (all-common needles of 13+ characters
// scanned 42% faster). A stretch of up to aloneMax entries that is alone
// in its chunk (no other range of the call meets it: the scattered
// candidates of first occurrences) is tested on its sketches even when
// the chunk has columns, whose words, a line each, nothing else would
// read. Once the entries' own sketches pass nearly every entry the columns
// pass on to them (see sketchOdds), test tests only a sample of them and
// passes the others on unread.
func (c *chunkSketches) test(p *trigram.Probe, pos, pos2, pos4 []uint16, lo, hi uint64, live uint16, alone bool, odds *sketchOdds, pass func(i uint64)) (skipped int) {
	if c.once || hi-lo+1 < sliceMin && (!c.sliced.Load() || alone && hi-lo+1 <= aloneMax) {
		for i := lo; i <= hi; i++ {
			if a, b := c.off[i], c.off[i+1]; a < b {
				if live&(1<<(i/64)) != 0 && c.pass(p, i, a, b, false) {
					pass(i)
				} else {
					skipped++
				}
			}
		}
		return skipped
	}
	cols := c.columns()
	var widePass, wide [sketchChunk / 64]uint64
	if hi-lo+1 >= sliceMin && len(c.wideMask) > 0 {
		widePass, wide = c.widePass(pos2, pos4, lo, hi, live), c.wideAt
	}
	// First, for every word, the entries with a sketch (ms) and those of
	// them the columns pass on to their own sketch test (accs). The lines
	// those tests read first are asked for as they are found, before any
	// is tested: each is a cache miss of its own, mostly to memory on a
	// machine whose last-level cache is small beside the history (32 MB
	// here), and the test waited on each in turn.
	var ms, accs [sketchChunk / 64]uint64
	ask := !odds.skim() // decided once for the lines asked for; the tests decide word by word
	for w := lo / 64; w <= hi/64; w++ {
		first, last := max(lo, w*64), min(hi, w*64+63)
		m := ^uint64(0) >> (63 - (last - first)) << (first % 64) & c.has[w]
		if live&(1<<w) == 0 {
			// The run index rules the word out (see runIndex).
			skipped += bits.OnesCount64(m)
			continue
		}
		acc := m &^ wide[w]
		for _, q := range pos {
			if acc == 0 {
				break
			}
			acc &= cols.word(q, int(w))
		}
		acc |= m & (c.open[w] | widePass[w])
		ms[w], accs[w] = m, acc
		if !ask {
			continue // a sample of them is tested: not worth asking for
		}
		for v := acc; v != 0; v &= v - 1 {
			i := w*64 + uint64(bits.TrailingZeros64(v))
			if a, b := c.off[i], c.off[i+1]; a < b {
				prefetch(&c.data[a+uint32(p.FirstRead(int(b-a), c.shape[i]))])
			}
		}
	}
	for w := lo / 64; w <= hi/64; w++ {
		n := 0
		skim, weight := odds.skim(), 1 // weight: the entries a test stands for
		if skim {
			weight = skimEvery
		}
		for v := accs[w]; v != 0; v &= v - 1 {
			i := w*64 + uint64(bits.TrailingZeros64(v))
			if skim && !odds.sample() {
				pass(i)
				n++
				continue
			}
			a, b := c.off[i], c.off[i+1]
			ok := c.pass(p, i, a, b, true)
			if odds.count(ok, weight); ok {
				pass(i)
				n++
			}
		}
		skipped += bits.OnesCount64(ms[w]) - n
	}
	return skipped
}

// sketchOdds counts, over one MayHold call (on one goroutine), how many of
// the entries the columns passed on to their own sketch that sketch
// passed, so that test can stop reading sketches that rule out almost
// nothing. For a needle found in a fifth of the history (a line of the
// license header that heads every Go source file, read by thousands of
// tool calls), the columns passed 213,919 of 990,874 entries and their
// sketches 212,041 of those: each such test reads up to one line of the
// sketch for each of the needle's grams, 42% of the time of the count,
// and the text read after it holds the needle within its first lines.
//
// Once skimAfter tests have been counted and skimShare of them passed,
// only one entry in skimEvery is tested, and counts for the skimEvery
// entries it stands for: the others go on to have their texts read. The
// counts are halved every skimWindow entries, so that where the sketches
// start to rule entries out again (a later stretch of history), a few
// samples that fail turn the tests back on.
type sketchOdds struct {
	tested, passed int
	seen           int // entries met while skimming, for sample
}

const (
	skimAfter  = 1024
	skimShare  = 0.9
	skimEvery  = 16
	skimWindow = 2048
)

// skim reports whether sketches are to be sampled, not each tested.
func (o *sketchOdds) skim() bool {
	return o.tested >= skimAfter && float64(o.passed) >= skimShare*float64(o.tested)
}

// sample reports whether the entry met next while skimming is tested.
func (o *sketchOdds) sample() bool {
	o.seen++
	return o.seen%skimEvery == 0
}

// count records a test's answer, standing for n entries.
func (o *sketchOdds) count(pass bool, n int) {
	o.tested += n
	if pass {
		o.passed += n
	}
	if o.tested >= skimWindow {
		o.tested, o.passed = o.tested/2, o.passed/2
	}
}

// aloneMax is the longest stretch test takes to the sketches directly
// when no other stretch of the same call meets its chunk.
const aloneMax = 8

// pass tests entry i's sketch, data[a:b], on p. The chunk's marks already
// say each sketch's format, so its last bytes are not read. rowed says the
// entry's row has passed p's row positions: a row is the whole of a
// format-2 sketch no larger than it and, of a format-3 or -4 sketch whose
// trigram set is no larger, that set, so only the 4-grams are left.
func (c *chunkSketches) pass(p *trigram.Probe, i uint64, a, b uint32, rowed bool) bool {
	bit := uint64(1) << (i % 64)
	switch {
	case c.shape[i] != 0:
		sh := c.shape[i]
		return p.PassShaped(c.data[a:b], sh, !rowed || trigram.ShapeTriBytes(sh) > trigram.SliceBits/8)
	case c.open[i/64]&bit != 0:
		return p.Pass(c.data[a:b])
	case rowed && int(b-a)-1 <= trigram.SliceBits/8:
		return true
	}
	return p.PassBits(c.data[a : b-1])
}

// WarmStats says what WarmSketches brought into memory.
type WarmStats struct {
	Chunks int   // chunks of sketchChunk seqs loaded (or found loaded)
	Bytes  int64 // their share of the sketch cache, columns included
	Full   bool  // stopped early: the cache bound would have been passed
}

// WarmSketches brings the sketches (and records) of every stored entry into
// the sketch cache, with the bit-sliced columns of each full chunk, so
// that the first searches through the whole history test sketches in
// memory instead of reading them from Pebble. It loads the newest chunks
// first and stops at the cache's bound, leaving room for each loaded
// chunk's filter (see WarmFilters): what does not fit is the oldest
// history, which then loads on each use (see sketchCache.put). It stops
// when ctx ends. Searches and writes may run meanwhile; a server calls it
// once in the background after it starts.
func (s *Store) WarmSketches(ctx context.Context) (WarmStats, error) {
	var ws WarmStats
	last, from := s.LastSeq(), s.sketchFrom.Load()
	if last < from {
		return ws, nil
	}
	// Chunks are loaded a group at a time, newest group first and newest
	// chunk first within it, and the full ones of a group get their
	// columns in slabs they share (see colView), laid out oldest first as
	// scans read them.
	firstChunk, lastChunk := from/sketchChunk, last/sketchChunk
	for g := lastChunk / slabChunks; ; g-- {
		var full []*chunkSketches
		var ids []uint64
		for ci := int64(min((g+1)*slabChunks-1, lastChunk)); ci >= int64(max(g*slabChunks, firstChunk)); ci-- {
			c := uint64(ci)
			if err := ctx.Err(); err != nil {
				return ws, err
			}
			if s.sketches.room() < warmChunkBytes+filterBytes*(ws.Chunks+1) {
				ws.Full = true
				break
			}
			ch, err := s.chunkFor(c)
			if err != nil {
				return ws, fmt.Errorf("load the sketches of seqs %d-%d: %w", c*sketchChunk, c*sketchChunk+sketchChunk-1, err)
			}
			if cached, _ := s.sketches.get(c); cached != ch {
				// Not kept: the bound was nearer than warmChunkBytes
				// (or a writer raced the load).
				ws.Full = cached == nil && s.sketches.room() < ch.size()
				if ws.Full {
					break
				}
				continue
			}
			if (c+1)*sketchChunk-1 <= last {
				full = append(full, ch)
				ids = append(ids, c)
			}
			ws.Chunks++
			ws.Bytes += int64(ch.size())
		}
		slices.Reverse(full)
		slices.Reverse(ids)
		s.sketches.sliceGroup(ids, full)
		if ws.Full || g == 0 || g*slabChunks <= firstChunk {
			return ws, nil
		}
	}
}

// slabChunks is how many chunks WarmSketches slices into one pair of
// slabs: 8 MB of narrow columns, and the wide rows' columns. A first
// page that tests every sketch of a million entries reads ~6 columns of
// each chunk; with each chunk's columns in memory of their own, each read
// was a cache miss of its own. A throwaway program with 977 chunks of
// random columns, 36 positions by density: 1.0-1.3 ms a scan apart,
// 0.33-0.40 ms in one slab.
var slabChunks uint64 = 64

// warmChunkBytes is the room WarmSketches wants before loading one more
// chunk: a chunk of larger-than-average sketches (~300 bytes each) with
// its columns, so that warming seldom loads a chunk that the cache, at
// its bound, does not keep.
const warmChunkBytes = sketchChunk*300 + colsBytes + wideColsBytes

// wideColsBytes is what the wide rows' columns of a chunk take when up to
// 256 of its entries have one (at a million picorpus entries, 14% do).
const wideColsBytes = wideCols * 8 * 4

// room is how many more bytes the cache takes before it starts dropping
// chunks.
func (c *sketchCache) room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max - c.bytes
}
