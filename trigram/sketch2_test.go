package trigram

import (
	"encoding/binary"
	"unicode/utf8"
)

// sketch2 returns the format-2 sketch of text (trigrams only, at least four
// bits per distinct trigram), as stores written before format 3 hold: the
// tests read both formats.
func sketch2(text []byte) []byte {
	words := make([]uint64, startBits(float64(utf8.RuneCount(text))*4)/64)
	mask := uint64(len(words)*64 - 1)
	Each(text, func(key uint64, _, _ int) {
		h := mix(key)
		b1, b2 := h&mask, (h>>32)&mask
		words[b1/64] |= 1 << (b1 % 64)
		words[b2/64] |= 1 << (b2 % 64)
	})
	words = shrink(words, sketchHashes, 4)
	out := make([]byte, 0, len(words)*8+1)
	for _, w := range words {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return append(out, sketchHashes)
}

// sketch3 returns the format-3 sketch of text (4-grams one bit each, at
// least 1.5 bits per distinct 4-gram), as stores written before format 4
// hold: the tests read it too.
func sketch3(text []byte) []byte { return sketchSplit(text, 1.5, 1, formatSplit) }

// sketchOf returns a sketch of text of one of the formats a store may hold
// with a row: the current one (i%3 == 0), format 2 or format 3.
func sketchOf(i int, text []byte) []byte {
	switch i % 3 {
	case 1:
		return sketch2(text)
	case 2:
		return sketch3(text)
	}
	return Sketch(text)
}
