// Package trigram enumerates the rune trigrams of a text and keeps a small
// per-entry sketch of them.
//
// The index finds candidate blocks of entries by trigram; a sketch lets
// search skip the entries of a candidate block that cannot hold the
// needle without reading their texts. A sketch is a two-hash Bloom filter
// of an entry's distinct trigrams, four to eight bits per trigram: an entry
// whose sketch lacks any trigram of the needle cannot contain the needle,
// while one whose sketch has them all may (it is confirmed against the
// text). Each trigram of the needle that the entry lacks lets it through
// with odds of 1 in 6 to 1 in 20, so a needle missing a few is ruled out
// almost surely. The first format (one hash, about one bit per trigram) is
// still read.
package trigram

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
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

// Sketch formats. A sketch is a bit set of a power-of-two number of bytes,
// optionally followed by one byte naming how many bits each trigram sets.
// Sketches without that byte set one bit per trigram (the first format,
// about one bit per distinct trigram); Sketch now writes two bits per
// trigram in about four bits per distinct trigram, which rules out several
// times more entries for the same needle.
const (
	sketchHashes     = 2 // bits each trigram sets
	sketchBitsPerTri = 4 // a sketch keeps at least this many bits per distinct trigram
)

// Sketch returns the sketch of text: a bit set of a power-of-two size
// between 64 and 65,536 bits, at least sketchBitsPerTri bits per distinct
// trigram where that fits, with the bits of each trigram set, followed by
// the format byte. A text with no trigrams gets an empty sketch, which no
// needle passes.
func Sketch(text []byte) []byte {
	// Start from a size no smaller than the bits the trigrams may need,
	// so that the share of bits set estimates how many are distinct; then
	// fold halves together while the half still has room for them.
	// Folding keeps every trigram's bits, because a bit is picked by the
	// low bits of (a part of) the mixed key.
	m := minSketchBits
	if n := utf8.RuneCount(text) * sketchBitsPerTri; n > m {
		m = min(1<<bits.Len(uint(n-1)), maxSketchBits)
	}
	words := make([]uint64, m/64)
	mask := uint64(m - 1)
	Each(text, func(key uint64, _, _ int) {
		h := mix(key)
		b1, b2 := h&mask, (h>>32)&mask
		words[b1/64] |= 1 << (b1 % 64)
		words[b2/64] |= 1 << (b2 % 64)
	})
	set := 0
	for _, w := range words {
		set += bits.OnesCount64(w)
	}
	// With k bits per trigram, d distinct trigrams leave a share
	// e^(-k*d/m) of the m bits clear.
	distinct := float64(m)
	if set < m {
		distinct = -float64(m) / sketchHashes * math.Log(1-float64(set)/float64(m))
	}
	for len(words) > minSketchBits/64 && float64(len(words)*64/2) >= sketchBitsPerTri*distinct {
		half := len(words) / 2
		for i := range half {
			words[i] |= words[half+i]
		}
		words = words[:half]
	}
	out := make([]byte, len(words)*8+1)
	for i, w := range words {
		binary.LittleEndian.PutUint64(out[i*8:], w)
	}
	out[len(out)-1] = sketchHashes
	return out
}

// Probe tests sketches for one needle.
type Probe struct {
	keys []uint64 // mixed keys of the needle's distinct trigrams
}

// NewProbe returns the probe of needle. A needle shorter than three
// characters has no trigrams: its probe passes every sketch.
func NewProbe(needle []byte) *Probe {
	p := &Probe{}
	seen := map[uint64]bool{}
	Each(needle, func(key uint64, _, _ int) {
		if !seen[key] {
			seen[key] = true
			p.keys = append(p.keys, mix(key))
		}
	})
	return p
}

// Empty reports whether the probe has no trigrams (passes everything).
func (p *Probe) Empty() bool { return len(p.keys) == 0 }

// Pass reports whether an entry with sketch sk may contain the needle:
// false means it certainly does not. A sketch of a form Sketch never makes
// passes (it cannot be read, so it cannot rule anything out).
func (p *Probe) Pass(sk []byte) bool {
	hashes := 1
	if IsRowFormat(sk) {
		sk, hashes = sk[:len(sk)-1], sketchHashes
	}
	// Otherwise the first format, whose length is a power of two.
	n := len(sk) * 8
	if n < minSketchBits || n > maxSketchBits || n&(n-1) != 0 {
		return true
	}
	mask := uint64(n - 1)
	if hashes == 1 {
		for _, k := range p.keys {
			b := k & mask
			if sk[b/8]&(1<<(b%8)) == 0 {
				return false
			}
		}
		return true
	}
	return p.passTwo(sk, mask)
}

// PassBits is Pass for a sketch the caller knows to be of the current
// format (IsRowFormat), given without its format byte. It does not read
// that byte: for a sketch of a few hundred bytes, the byte sits on a cache
// line of its own, and a scan over many sketches in memory paid a miss on
// it for every one (about a tenth of a long scan's time).
func (p *Probe) PassBits(bits []byte) bool {
	return p.passTwo(bits, uint64(len(bits)*8-1))
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
// smaller one repeated (bit q is the sketch's bit q mod n). Row reports
// false, leaving row unspecified, for a sketch of another format, which a
// row cannot stand for.
func Row(sk []byte, row *[SliceBits / 64]uint64) bool {
	if !IsRowFormat(sk) {
		return false
	}
	n := len(sk) - 1
	sk = sk[:n]
	*row = [SliceBits / 64]uint64{}
	words := n / 8
	for i := range words {
		w := binary.LittleEndian.Uint64(sk[i*8:])
		if words >= len(row) {
			row[i%len(row)] |= w
		} else {
			for j := i; j < len(row); j += words {
				row[j] = w
			}
		}
	}
	return true
}

// IsRowFormat reports whether Row can fold sk: a sketch of the current
// format.
func IsRowFormat(sk []byte) bool {
	n := len(sk) - 1
	return n >= minSketchBits/8 && n <= maxSketchBits/8 && n&(n-1) == 0 && sk[n] == sketchHashes
}

// rowBits returns the two row positions of the trigram with mixed key k:
// its two sketch bits, taken modulo SliceBits.
func rowBits(k uint64) (uint16, uint16) {
	const mask = SliceBits - 1
	return uint16(k & mask), uint16((k >> 32) & mask)
}

// SlicePositions returns the row positions (see Row) that every entry
// passing the probe has set: both bits of each of the needle's trigrams.
func (p *Probe) SlicePositions() []uint16 {
	var seen [SliceBits / 64]uint64
	var out []uint16
	for _, k := range p.keys {
		q1, q2 := rowBits(k)
		for _, b := range [2]uint16{q1, q2} {
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
	o := &Probe{keys: make([]uint64, len(ks))}
	for i, x := range ks {
		o.keys[i] = x.k
	}
	return o
}
