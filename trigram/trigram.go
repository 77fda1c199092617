// Package trigram enumerates the rune trigrams of a text and keeps a small
// per-entry sketch of them.
//
// The index finds candidate blocks of entries by trigram; a sketch lets
// search skip the entries of a candidate block that cannot hold the
// needle without reading their texts. A sketch is a two-hash Bloom filter
// of an entry's distinct trigrams, four to eight bits per trigram: an entry
// whose sketch lacks any trigram of the needle cannot contain the needle,
// while one whose sketch has them all may (it is confirmed against the
// text). A sketch also keeps a smaller two-hash Bloom filter of the
// entry's 4-grams (two overlapping trigrams), which rules out the texts
// that hold every trigram of a needle but not its 4-grams: most of the
// texts a needle of common trigrams (an English phrase) used to read in
// vain. The older formats (4-grams with one bit each; trigrams only, two
// bits or one) are still read. A Filter holds the bytes of many texts (a
// chunk of entries: their byte trigrams, pairs and bytes), so that a chunk
// without a needle's is ruled out whole.
package trigram

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"unicode/utf8"
)

// Sep separates texts inside one buffer (an index block). 0xFF never occurs
// in valid UTF-8, and no trigram spans it.
const Sep = 0xFF

// Each calls fn for every rune trigram of b, repeats included, with a key
// unique to the trigram and its byte span in b. Invalid UTF-8 decodes as
// U+FFFD one byte at a time, as utf8.DecodeRune does.
func Each(b []byte, fn func(key uint64, start, end int)) {
	var r [3]rune
	var pos [4]int
	n := 0
	for i := 0; i < len(b); {
		if b[i] == Sep {
			n = 0
			i++
			continue
		}
		c, size := rune(b[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRune(b[i:])
		}
		r[0], r[1], r[2] = r[1], r[2], c
		pos[0], pos[1], pos[2], pos[3] = pos[1], pos[2], pos[3], i
		i += size
		n++
		if n >= 3 {
			fn(Key(r[0], r[1], r[2]), pos[1], i)
		}
	}
}

// Key is the key Each reports for the trigram abc.
func Key(a, b, c rune) uint64 {
	return uint64(a)<<42 | uint64(b)<<21 | uint64(c)
}

// Roll is the key of the trigram that ends in r, given key, the key of
// the one before it (a rune is 21 bits, a key three of them): loops over
// long texts roll keys themselves rather than pay Each's call per trigram
// (a stepping iterator, not inlined, halved their speed).
func Roll(key uint64, r rune) uint64 { return (key<<21 | uint64(r)) & (1<<63 - 1) }

// Distinct returns the distinct trigrams of s (as strings of three runes) in
// first-seen order.
func Distinct(s string) []string {
	var out []string
	seen := map[uint64]bool{}
	Each([]byte(s), func(key uint64, start, end int) {
		if !seen[key] {
			seen[key] = true
			out = append(out, s[start:end])
		}
	})
	return out
}

// Window is how many consecutive trigrams one window of a text holds when
// an index keeps only selected trigrams: of every Window consecutive
// trigrams (within one text, between separators), the one of least Rank
// is selected. A needle that holds a whole window selects, from it, the
// same trigram as every text that holds the needle, so an index of the
// selected trigrams misses no text that a needle's own selected trigrams
// find. Over the benchmark's texts a block keeps half its trigrams
// (windows of 4), and so costs Bleve half the postings.
const Window = 4

// Rank orders trigrams for selection (see Window). It never changes: an
// index built with it is read with it. It is a bijection (each step of
// the SplitMix64 finalizer can be undone), so distinct trigrams never tie.
func Rank(key uint64) uint64 { return mix(key) }

// Selected returns, in first-seen order and each once, the trigrams that
// the windows lying wholly in s select (see Window): those an index of
// selected trigrams holds for every text that contains s. It is empty when
// no run of s (a stretch without separators) holds Window trigrams.
func Selected(s string) []string {
	var out []string
	seen := map[uint64]bool{}
	var w Winnower
	Each([]byte(s), func(key uint64, start, end int) {
		if w.Push(key, start, end) {
			k, a, b := w.Min()
			if !seen[k] {
				seen[k] = true
				out = append(out, s[a:b])
			}
		}
	})
	return out
}

// Winnower holds the last Window trigrams of a run and picks the one a
// full window selects. Feed it every trigram of a text in order, as Each
// reports them: Each does not report where a run ends, so Push notices
// the gap between spans (consecutive trigrams of one run overlap).
type Winnower struct {
	keys   [Window]uint64
	ranks  [Window]uint64
	starts [Window]int
	ends   [Window]int
	n      int // trigrams of the current run pushed so far
}

// Push adds the next trigram of the text, with its span, and reports
// whether a full window now ends at it. A trigram that does not start
// inside the previous one's span begins a new run.
func (w *Winnower) Push(key uint64, start, end int) bool {
	if w.n > 0 {
		prev := (w.n - 1) % Window
		if start <= w.starts[prev] || start >= w.ends[prev] {
			w.n = 0
		}
	}
	i := w.n % Window
	w.keys[i], w.ranks[i], w.starts[i], w.ends[i] = key, Rank(key), start, end
	w.n++
	return w.n >= Window
}

// Min returns the trigram the window ending at the last push selects: the
// least rank (a tie is the same trigram twice). Valid when Push reported
// true.
func (w *Winnower) Min() (key uint64, start, end int) {
	b := 0
	for i := 1; i < Window; i++ {
		if w.ranks[i] < w.ranks[b] {
			b = i
		}
	}
	return w.keys[b], w.starts[b], w.ends[b]
}

const (
	minSketchBits = 64
	maxSketchBits = 1 << 16
)

// mix spreads a trigram key over 64 bits (the SplitMix64 finalizer), so
// that its low bits pick a sketch bit.
func mix(k uint64) uint64 {
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	return k
}

// Sketch formats, named by the last byte:
//
//   - none (the first format): a bit set of a power-of-two number of bytes,
//     one bit per trigram, about one bit per distinct trigram;
//   - 2 (sketchHashes): a bit set of a power-of-two number of bytes, two
//     bits per trigram, at least four bits per distinct trigram;
//   - 3 (formatSplit): a trigram bit set as in format 2 (at least three
//     bits per distinct trigram), then a bit set of the 4-grams (one bit
//     each, at least 1.5 bits per distinct 4-gram), then a byte holding
//     log2 of the trigram set's size in bytes;
//   - 4 (formatFour2, what Sketch writes): as format 3, but each 4-gram
//     sets two bits, at least two bits per distinct 4-gram.
//
// On the benchmark's million entries, format 3 took 317 bytes an entry
// against 258 and cut the p99 of first pages of 3-5 and 6-12 character
// needles 1.8 to 2.7 times; format 4 takes about 40 bytes more and cut
// the texts read in vain by a quarter more (see "Two bits per 4-gram" in
// docs/measurements/2026-11-30-sketch-formats.md).
const (
	sketchHashes    = 2 // bits each trigram sets; also format 2's byte
	formatSplit     = 3 // the last byte of a format-3 sketch
	formatFour2     = 4 // the last byte of a format-4 sketch
	splitBitsPerTri = 3 // formats 3 and 4: bits per distinct trigram, at least
	bitsPer4        = 2 // format 4: bits per distinct 4-gram, at least
)

// Sketch returns the sketch of text, of format 4: its trigrams' bit set
// and its 4-grams', two bits each, each a power of two between 64 and
// 65,536 bits holding at least splitBitsPerTri or bitsPer4 bits per
// distinct item where that fits. A text with no trigrams gets empty sets,
// which no needle of three characters or more passes.
func Sketch(text []byte) []byte { return sketchSplit(text, bitsPer4, 2, formatFour2) }

// sketchSplit writes a sketch of format 3 or 4 (the format byte given):
// the trigram set as Sketch does, then the 4-gram set, hashes4 bits each
// and at least per4 bits per distinct 4-gram where that fits.
func sketchSplit(text []byte, per4 float64, hashes4 int, format byte) []byte {
	runes := float64(utf8.RuneCount(text))
	tri := make([]uint64, startBits(runes*splitBitsPerTri)/64)
	four := make([]uint64, startBits(runes*per4)/64)
	tmask, fmask := uint64(len(tri)*64-1), uint64(len(four)*64-1)
	// each4, written out (a sketch is made of every text stored): keys roll
	// (Roll), and a 4-gram is every trigram after the first since the
	// text's start or the last separator.
	var key, prev uint64
	n := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c == Sep {
			n = 0
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(text[i:])
		}
		i += size
		key = Roll(key, r)
		if n++; n < 3 {
			continue
		}
		h := mix(key)
		b1, b2 := h&tmask, (h>>32)&tmask
		tri[b1/64] |= 1 << (b1 % 64)
		tri[b2/64] |= 1 << (b2 % 64)
		if n > 3 {
			h4 := mix(prev ^ (h + fourSalt))
			b1, b2 = h4&fmask, (h4>>32)&fmask
			four[b1/64] |= 1 << (b1 % 64)
			if hashes4 == 2 {
				four[b2/64] |= 1 << (b2 % 64)
			}
		}
		prev = h
	}
	tri = shrink(tri, sketchHashes, splitBitsPerTri)
	four = shrink(four, hashes4, per4)
	out := make([]byte, 0, 8*(len(tri)+len(four))+2)
	for _, w := range tri {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	for _, w := range four {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return append(out, byte(bits.Len(uint(len(tri)*8))-1), format)
}

// startBits is the size a bit set starts from: a power of two no smaller
// than need (the bits the items may need, counting every one as distinct),
// within the sketch bounds, so that the share of bits set estimates how
// many are distinct.
func startBits(need float64) int {
	m := minSketchBits
	if n := int(need); n > m {
		m = min(1<<bits.Len(uint(n-1)), maxSketchBits)
	}
	return m
}

// shrink folds halves of a Bloom filter with k bits per item together
// while the half still holds perItem bits per distinct item (estimated
// from the bits set). Folding keeps every item's bits, because a bit is
// picked by the low bits of (a part of) the mixed key.
func shrink(words []uint64, k int, perItem float64) []uint64 {
	m, set := len(words)*64, 0
	for _, w := range words {
		set += bits.OnesCount64(w)
	}
	// With k bits per item, d distinct items leave a share e^(-k*d/m) of
	// the m bits clear.
	distinct := float64(m)
	if set < m {
		distinct = -float64(m) / float64(k) * math.Log(1-float64(set)/float64(m))
	}
	for len(words) > minSketchBits/64 && float64(len(words)*64/2) >= perItem*distinct {
		half := len(words) / 2
		for i := range half {
			words[i] |= words[half+i]
		}
		words = words[:half]
	}
	return words
}

// fourSalt keys a 4-gram by its two trigrams' mixed keys.
const fourSalt = 0x632be59bd9b4e019

// each4 calls fn with the mixed key of every trigram of b (is4 false) and
// of every 4-gram (is4 true): two trigrams one rune apart, keyed by both.
func each4(b []byte, fn func(h uint64, is4 bool)) {
	var prev uint64
	prevEnd := -1
	Each(b, func(key uint64, start, end int) {
		h := mix(key)
		fn(h, false)
		if prevEnd > start { // overlapping: no separator between them
			fn(mix(prev^(h+fourSalt)), true)
		}
		prev, prevEnd = h, end
	})
}

// split returns the trigram and 4-gram bit sets of a sketch of format 3 or
// 4, and whether its 4-grams set two bits each (format 4).
func split(sk []byte) (tri, four []byte, two4, ok bool) {
	n := len(sk)
	if n < 2 || (sk[n-1] != formatSplit && sk[n-1] != formatFour2) || sk[n-2] > 13 {
		return nil, nil, false, false
	}
	t := 1 << sk[n-2]
	f := n - 2 - t
	if t < minSketchBits/8 || f < minSketchBits/8 || f > maxSketchBits/8 || f&(f-1) != 0 {
		return nil, nil, false, false
	}
	return sk[:t], sk[t : n-2], sk[n-1] == formatFour2, true
}

// Probe tests sketches for one needle.
type Probe struct {
	keys  []uint64 // mixed keys of the needle's distinct trigrams
	keys4 []uint64 // and of its distinct 4-grams
	grams []uint32 // the Filter bits of its byte trigrams (see PassFilter)
	long  []uint32 // and of its runs of LongGram bytes (up to RunsMax; see Runs)
	short uint32   // a needle of one or two bytes (see shortOf)
	// filterRun counts the filters in a row that passed, over every copy
	// of the probe (see FilterWorthIt).
	filterRun *atomic.Int32
	memo      *atomic.Value // see Memo
}

// Memo is a slot for what a store works out about the probe once and
// reuses for the rest of a search (the order in which to test its
// trigrams), shared by its ordered copies; nil for a Probe not made by
// NewProbe. What is stored in it must not change afterwards: a search may
// read it on several goroutines.
func (p *Probe) Memo() *atomic.Value { return p.memo }

// NewProbe returns the probe of needle. A needle shorter than three
// characters has no trigrams: its probe passes every sketch.
func NewProbe(needle []byte) *Probe {
	sh := new(probeShared)
	p := &Probe{grams: filterPositions(needle), long: longPositions(needle), short: shortOf(needle), filterRun: &sh.filterRun, memo: &sh.memo}
	var seen, seen4 map[uint64]bool
	each4(needle, func(h uint64, is4 bool) {
		if is4 {
			p.keys4 = appendNew(p.keys4, &seen4, h)
		} else {
			p.keys = appendNew(p.keys, &seen, h)
		}
	})
	return p
}

// probeShared is what a probe's copies share, in one allocation.
type probeShared struct {
	filterRun atomic.Int32
	memo      atomic.Value
}

// appendNew appends h to keys unless keys holds it already. A short list
// is searched; from probeListMax keys on (a needle of up to 4 KB has
// thousands), *seen is made and kept instead. Two maps for every search
// were a tenth of the allocations of a branch-scope first page, whose
// memory is seldom in cache.
func appendNew(keys []uint64, seen *map[uint64]bool, h uint64) []uint64 {
	if *seen == nil {
		if slices.Contains(keys, h) {
			return keys
		}
		if len(keys) < probeListMax {
			return append(keys, h)
		}
		*seen = make(map[uint64]bool, 2*len(keys))
		for _, k := range keys {
			(*seen)[k] = true
		}
	}
	if (*seen)[h] {
		return keys
	}
	(*seen)[h] = true
	return append(keys, h)
}

// probeListMax is the most keys appendNew searches one by one.
const probeListMax = 32

// Empty reports whether the probe has no trigrams (passes everything).
func (p *Probe) Empty() bool { return len(p.keys) == 0 }

// Pass reports whether an entry with sketch sk may contain the needle:
// false means it certainly does not. A sketch of a form Sketch never makes
// passes (it cannot be read, so it cannot rule anything out).
func (p *Probe) Pass(sk []byte) bool {
	if tri, four, two4, ok := split(sk); ok {
		return p.passFour(four, two4) && p.passTwo(tri, uint64(len(tri)*8-1))
	}
	if set, ok := triSet(sk); ok { // format 2
		return p.passTwo(set, uint64(len(set)*8-1))
	}
	// Otherwise the first format, whose length is a power of two.
	n := len(sk) * 8
	if n < minSketchBits || n > maxSketchBits || n&(n-1) != 0 {
		return true
	}
	mask := uint64(n - 1)
	for _, k := range p.keys {
		if b := k & mask; sk[b/8]&(1<<(b%8)) == 0 {
			return false
		}
	}
	return true
}

// PassBits is Pass for a sketch the caller knows to be of format 2, given
// without its format byte. It does not read
// that byte: for a sketch of a few hundred bytes, the byte sits on a cache
// line of its own, and a scan over many sketches in memory paid a miss on
// it for every one (about a tenth of a long scan's time).
func (p *Probe) PassBits(bits []byte) bool {
	return p.passTwo(bits, uint64(len(bits)*8-1))
}

// shapeTwo4 is the bit of a Shape that says the 4-grams set two bits each.
const shapeTwo4 = 0x80

// Shape describes a sketch of format 3 or 4 in one byte, for PassShaped:
// log2 of its trigram set's size in bytes, plus a bit when it is of
// format 4.
func Shape(sk []byte) uint8 {
	if sk[len(sk)-1] == formatFour2 {
		return sk[len(sk)-2] | shapeTwo4
	}
	return sk[len(sk)-2]
}

// ShapeTriBytes returns the size in bytes of the trigram set of a sketch
// of the given Shape.
func ShapeTriBytes(shape uint8) int { return 1 << (shape &^ shapeTwo4) }

// ShapeIsCurrent reports whether a sketch of the given Shape is of the
// format Sketch writes now.
func ShapeIsCurrent(shape uint8) bool { return shape&shapeTwo4 != 0 }

// PassShaped is Pass for a sketch of format 3 or 4 whose Shape the caller
// keeps, so that the test does not read the sketch's last bytes, a cache
// miss of their own when sketches are tested by the thousand. When
// trigrams is false the trigram set is taken as passed (a Row no wider
// than SliceBits is that set, and the row positions were tested): only
// the 4-grams are tested.
func (p *Probe) PassShaped(sk []byte, shape uint8, trigrams bool) bool {
	// The 4-grams first: an entry tested here has mostly passed its row,
	// so its trigram bits are likely set, and a needle's 4-grams rule out
	// more for fewer reads (a first page of an all-common needle of 6-14
	// characters 5-20% faster).
	t := ShapeTriBytes(shape)
	if !p.passFour(sk[t:len(sk)-2], shape&shapeTwo4 != 0) {
		return false
	}
	return !trigrams || p.passTwo(sk[:t], uint64(t*8-1))
}

// FirstRead returns the offset in a sketch of n bytes, of the given Shape
// (0 when the caller keeps none), of the byte PassShaped reads first: a
// bit of the needle's first 4-gram, or of its first trigram when it has
// no 4-gram. A scan that knows which sketches it will test can ask for
// their first lines together (see store.chunkSketches.test) instead of
// waiting on each in turn.
func (p *Probe) FirstRead(n int, shape uint8) int {
	if shape == 0 {
		return 0
	}
	t := ShapeTriBytes(shape)
	if len(p.keys4) > 0 {
		if four := n - 2 - t; four > 0 {
			return t + int(p.keys4[0]&uint64(four*8-1))/8
		}
	}
	if len(p.keys) > 0 {
		return int(p.keys[0]&uint64(t*8-1)) / 8
	}
	return 0
}

// passFour tests each 4-gram's bits in a 4-gram bit set: two each when
// two is true (format 4), else one.
func (p *Probe) passFour(four []byte, two bool) bool {
	mask := uint64(len(four)*8 - 1)
	for _, k := range p.keys4 {
		b1, b2 := k&mask, (k>>32)&mask
		if four[b1/8]&(1<<(b1%8)) == 0 || (two && four[b2/8]&(1<<(b2%8)) == 0) {
			return false
		}
	}
	return true
}

// passTwo tests the two bits of each trigram in a bit set of mask+1 bits.
func (p *Probe) passTwo(sk []byte, mask uint64) bool {
	for _, k := range p.keys {
		b1, b2 := k&mask, (k>>32)&mask
		if sk[b1/8]&(1<<(b1%8)) == 0 || sk[b2/8]&(1<<(b2%8)) == 0 {
			return false
		}
	}
	return true
}

// SliceBits is the width of the rows that let a chunk of sketches be tested
// together: each sketch folded (or repeated) to this many bits, stored as
// columns of one bit per entry, so that a probe tests a thousand entries
// with a few word-wide ANDs before looking at any single sketch. Rows of
// 1,024 bits (128 MB of columns per million entries) halved the time of
// scans through the sketches of a million entries against 512-bit rows,
// whose folds of large sketches passed too many entries on to their own
// sketch test.
const SliceBits = 1024

// Row writes into row the sketch sk folded to SliceBits bits, such that an
// entry whose sketch passes a probe has every one of the probe's
// SlicePositions set in its row: a sketch of n ≥ SliceBits bits is folded
// (bit q of the row is the OR of the sketch's bits q, q+SliceBits, …), a
// smaller one repeated (bit q is the sketch's bit q mod n); of a sketch
// of format 3 or 4, its trigram set. Row reports false, leaving row
// unspecified, for a sketch of the first format, which a row cannot stand
// for.
func Row(sk []byte, row *[SliceBits / 64]uint64) bool {
	set, ok := triSet(sk)
	if ok {
		fold(set, row[:])
	}
	return ok
}

// triSet returns the trigram bit set of a sketch of format 2, 3 or 4, and
// false for the first format (or what is no sketch).
func triSet(sk []byte) ([]byte, bool) {
	if tri, _, _, ok := split(sk); ok {
		return tri, true
	}
	n := len(sk) - 1
	if n >= minSketchBits/8 && n <= maxSketchBits/8 && n&(n-1) == 0 && sk[n] == sketchHashes {
		return sk[:n], true
	}
	return nil, false
}

// fold writes set (a power of two of bytes) into row: ORed onto it a row's
// width at a time when larger, repeated to fill it when smaller.
func fold(set []byte, row []uint64) {
	clear(row)
	words := len(set) / 8
	for i := range words {
		w := binary.LittleEndian.Uint64(set[i*8:])
		if words >= len(row) {
			row[i%len(row)] |= w
		} else {
			for j := i; j < len(row); j += words {
				row[j] = w
			}
		}
	}
}

// WideBits is the width of the second, wider rows that sketches whose
// trigram set is at least WideBits bits large also get. Folded into
// SliceBits, such a set sets nearly every bit of its row (at 4096 bits
// and more, 93-100% of them), so the row passes almost any needle and the
// sketch itself must be read: a cache miss per entry, 56% of the time of
// a scan through a million sketches for a needle of common trigrams.
// Folded into WideBits, the same sets are exact (4096 bits) or set 74%
// of the bits (8192).
const WideBits = 4096

// WideRow writes into row the trigram set of sk folded to WideBits bits,
// as Row does to SliceBits, when that set has at least WideBits bits, and
// reports whether it did (false for a smaller set or a sketch of the first
// format). An entry whose sketch passes a probe has every one of the
// probe's WidePositions set in its wide row.
func WideRow(sk []byte, row *[WideBits / 64]uint64) bool {
	set, ok := triSet(sk)
	if !ok || len(set) < WideBits/8 {
		return false
	}
	fold(set, row[:])
	return true
}

// WidePositions returns the wide-row positions (see WideRow) that every
// entry passing the probe has set: both bits of each of the needle's
// trigrams, taken modulo WideBits.
func (p *Probe) WidePositions() []uint16 { return p.positions(WideBits) }

// WideFourRow writes into row the 4-gram set of sk folded (or repeated) to
// WideBits bits, as WideRow does with its trigram set, and reports whether
// it did: only for a sketch of format 4 (two bits per 4-gram) whose
// trigram set has a wide row. The entries that pass a wide row for their
// trigrams are mostly large texts that do hold each of a needle's common
// trigrams somewhere, and only its 4-grams tell them apart; tested on
// their own sketches, they took a fifth of a scan's time (a cache miss or
// more each).
func WideFourRow(sk []byte, row *[WideBits / 64]uint64) bool {
	tri, four, two4, ok := split(sk)
	if !ok || !two4 || len(tri) < WideBits/8 {
		return false
	}
	fold(four, row[:])
	return true
}

// WideFourPositions returns the positions of a wide 4-gram row (see
// WideFourRow) that every entry passing the probe has set: both bits of
// each of the needle's 4-grams, taken modulo WideBits.
func (p *Probe) WideFourPositions() []uint16 {
	var seen [WideBits / 64]uint64
	var out []uint16
	const mask = WideBits - 1
	for _, k := range p.keys4 {
		for _, b := range [2]uint16{uint16(k & mask), uint16((k >> 32) & mask)} {
			if bit := uint64(1) << (b % 64); seen[b/64]&bit == 0 {
				seen[b/64] |= bit
				out = append(out, b)
			}
		}
	}
	return out
}

// Layout describes a sketch for a caller that tests many: its format (1
// to 4) and the size in bytes of its trigram set (0 for the first
// format), read once so that each test need not read it again.
func Layout(sk []byte) (format int, triBytes int) {
	if tri, _, two4, ok := split(sk); ok {
		if two4 {
			return 4, len(tri)
		}
		return 3, len(tri)
	}
	if tri, ok := triSet(sk); ok {
		return 2, len(tri)
	}
	return 1, 0
}

// rowBits returns the two row positions of the trigram with mixed key k:
// its two sketch bits, taken modulo SliceBits.
func rowBits(k uint64) (uint16, uint16) {
	const mask = SliceBits - 1
	return uint16(k & mask), uint16((k >> 32) & mask)
}

// SlicePositions returns the row positions (see Row) that every entry
// passing the probe has set: both bits of each of the needle's trigrams.
func (p *Probe) SlicePositions() []uint16 { return p.positions(SliceBits) }

// positions returns, once each, both bits of each of the needle's trigrams
// taken modulo width (a power of two, 64 to WideBits).
func (p *Probe) positions(width int) []uint16 {
	var seen [WideBits / 64]uint64 // on the stack: a search asks per window
	var out []uint16
	mask := uint64(width - 1)
	for _, k := range p.keys {
		for _, b := range [2]uint16{uint16(k & mask), uint16((k >> 32) & mask)} {
			if bit := uint64(1) << (b % 64); seen[b/64]&bit == 0 {
				seen[b/64] |= bit
				out = append(out, b)
			}
		}
	}
	return out
}

// Ordered returns a probe that tests the same trigrams as p, in ascending
// order of cost(q1, q2), where q1 and q2 are a trigram's two row positions
// (see SlicePositions). Given how many entries have those bits set, the
// trigrams that most entries lack come first, and Pass stops sooner.
func (p *Probe) Ordered(cost func(q1, q2 uint16) int) *Probe {
	type kc struct {
		k uint64
		c int
	}
	ks := make([]kc, len(p.keys))
	for i, k := range p.keys {
		ks[i] = kc{k, cost(rowBits(k))}
	}
	slices.SortStableFunc(ks, func(a, b kc) int { return cmp.Compare(a.c, b.c) })
	o := &Probe{keys: make([]uint64, len(ks)), keys4: p.keys4, grams: p.grams, long: p.long, short: p.short, filterRun: p.filterRun, memo: p.memo}
	for i, x := range ks {
		o.keys[i] = x.k
	}
	return o
}
