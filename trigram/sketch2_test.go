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
