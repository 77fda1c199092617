package search

import "bytes"

// finder looks for one needle in many texts. Like ripgrep, it scans for the
// needle's rarest byte (by a fixed ranking of how common bytes are in code
// and prose) and checks the whole needle around each occurrence, which beats
// scanning for the first byte when the first byte is common (a space, 'e').
type finder struct {
	needle []byte
	rare   byte
	off    int // offset of rare in needle
}

func newFinder(needle []byte) *finder {
	f := &finder{needle: needle}
	best := 1 << 30
	for i, c := range needle {
		if r := byteRank[c]; r < best {
			best, f.rare, f.off = r, c, i
		}
	}
	return f
}

// in reports whether text contains the needle.
func (f *finder) in(text []byte) bool { return f.index(text) >= 0 }

// index returns where the needle first occurs in text, -1 when nowhere.
func (f *finder) index(text []byte) int {
	n := len(f.needle)
	if n <= 1 || len(text) < n {
		return bytes.Index(text, f.needle)
	}
	i := f.off
	for i < len(text) {
		j := bytes.IndexByte(text[i:], f.rare)
		if j < 0 {
			return -1
		}
		p := i + j - f.off
		if p >= 0 && p+n <= len(text) && bytes.Equal(text[p:p+n], f.needle) {
			return p
		}
		i += j + 1
		if i-f.off+n > len(text) {
			return -1
		}
	}
	return -1
}

// next returns where the needle next occurs in text at or after from, -1
// when nowhere.
func (f *finder) next(text []byte, from int) int {
	if from > len(text) {
		return -1
	}
	if i := f.index(text[from:]); i >= 0 {
		return from + i
	}
	return -1
}

// byteRank orders bytes from rarest (low) to most common (high) in source
// code, logs and English prose; unlisted bytes (control bytes, most of UTF-8)
// count as rare.
var byteRank = func() [256]int {
	var r [256]int
	// Most common first.
	common := " etaoinsrhldcumfpgwybvkxjqz\n\t_.,;:()=\"'/-{}[]<>0123456789ETAOINSRHLDCUMFPGWYBVKXJQZ*#&|!?+%$@\\^`~"
	for i := range r {
		r[i] = 0
	}
	for i := 0; i < len(common); i++ {
		r[common[i]] = 1000 - i
	}
	// UTF-8 lead and continuation bytes are common in non-English text.
	for c := 0x80; c < 0x100; c++ {
		r[c] = 100
	}
	return r
}()
