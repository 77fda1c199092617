package store

import (
	"math/bits"

	"github.com/pi-history/pi-history/trigram"
)

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
