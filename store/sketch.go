package store

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

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
