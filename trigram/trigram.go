// Package trigram enumerates the rune trigrams of a text and keeps a small
// per-entry sketch of them.
//
// The index finds candidate blocks of entries by trigram; a sketch lets
// search skip the entries of a candidate block that cannot hold the
// needle without reading their texts. A sketch is a one-hash Bloom filter
// of an entry's distinct trigrams, about one bit per trigram: an entry whose
// sketch lacks any trigram of the needle cannot contain the needle, while
// one whose sketch has them all may (it is confirmed against the text).
// The longer the needle, the sharper the test: with half the bits set, a
// needle of n trigrams passes a non-matching entry with odds of 2^-n.
package trigram

import (
	"math"
	"math/bits"
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

// Sketch returns the sketch of text: a bit set of a power-of-two size
// between 64 and 65,536 bits, about one bit per distinct trigram, with the
// bit of each trigram set. Its length says its size. A text with no
// trigrams gets an empty sketch of 64 bits, which no needle passes.
func Sketch(text []byte) []byte {
	// Start from a size no smaller than the number of trigrams, so that
	// the share of bits set estimates how many are distinct; then fold
	// halves together down to about one bit per distinct trigram. Folding
	// keeps every trigram's bit, because a bit is picked by the low bits of
	// the mixed key.
	m := minSketchBits
	if n := utf8.RuneCount(text); n > m {
		m = min(1<<bits.Len(uint(n-1)), maxSketchBits)
	}
	words := make([]uint64, m/64)
	mask := uint64(m - 1)
	Each(text, func(key uint64, _, _ int) {
		b := mix(key) & mask
		words[b/64] |= 1 << (b % 64)
	})
	set := 0
	for _, w := range words {
		set += bits.OnesCount64(w)
	}
	distinct := float64(m)
	if set < m {
		distinct = -float64(m) * math.Log(1-float64(set)/float64(m))
	}
	for len(words) > minSketchBits/64 && float64(len(words)*64/2) >= distinct {
		half := len(words) / 2
		for i := range half {
			words[i] |= words[half+i]
		}
		words = words[:half]
	}
	out := make([]byte, len(words)*8)
	for i, w := range words {
		for j := range 8 {
			out[i*8+j] = byte(w >> (8 * j))
		}
	}
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
// false means it certainly does not. A sketch of a size Sketch never makes
// passes (it cannot be read, so it cannot rule anything out).
func (p *Probe) Pass(sk []byte) bool {
	n := len(sk) * 8
	if n < minSketchBits || n > maxSketchBits || n&(n-1) != 0 {
		return true
	}
	mask := uint64(n - 1)
	for _, k := range p.keys {
		b := k & mask
		if sk[b/8]&(1<<(b%8)) == 0 {
			return false
		}
	}
	return true
}
