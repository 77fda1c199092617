package search

import "bytes"

// finder looks for one needle in many texts. Like ripgrep, it looks for
// the needle's rarest bytes (by a fixed ranking of how common bytes are in
// code and prose) and checks the whole needle where they occur, which beats
// scanning for the first byte when the first byte is common (a space, 'e').
//
// On amd64 it looks for three of them at once, at their distances in the
// needle, 16 positions at a time (see pairScan). Elsewhere it steps from
// one occurrence of the rarest byte to the next: one call of
// bytes.IndexByte each, which for a needle of common letters ("src",
// "earl") is a call every few bytes.
//
// A third byte came later: a pair of common letters still stops the scan
// wherever both occur ("th", "er"), and most of the places a pair stopped
// at were not matches; with three, mostly none. The runs behind both are
// in docs/measurements/2026-12-02-finder-pair-scan.md and
// 2026-12-07-figures-from-code-comments.md.
type finder struct {
	needle []byte
	rare   byte
	off    int // offset of rare in needle
	// The second and third rarest bytes and their offsets (each another
	// than off and than each other; a needle of two bytes repeats rare
	// as its third); pairs is set when all three are tested by pairScan.
	rare2, rare3 byte
	off2, off3   int
	pairs        bool
	// pat, when set, is a pattern the finder finds instead of a needle
	// (which is then empty): see pattern, patternParts.
	pat *pattern
}

func newFinder(needle []byte) *finder {
	f := &finder{needle: needle}
	best, second, third := 1<<30, 1<<30, 1<<30
	for i, c := range needle {
		switch r := byteRank[c]; {
		case r < best:
			third, f.rare3, f.off3 = second, f.rare2, f.off2
			second, f.rare2, f.off2 = best, f.rare, f.off
			best, f.rare, f.off = r, c, i
		case r < second:
			third, f.rare3, f.off3 = second, f.rare2, f.off2
			second, f.rare2, f.off2 = r, c, i
		case r < third:
			third, f.rare3, f.off3 = r, c, i
		}
	}
	if len(needle) < 3 {
		f.rare3, f.off3 = f.rare, f.off
	}
	f.pairs = hasPairScan && len(needle) >= 2
	return f
}

// in reports whether text contains the needle.
func (f *finder) in(text []byte) bool { return f.index(text) >= 0 }

// index returns where the needle first occurs in text, -1 when nowhere.
func (f *finder) index(text []byte) int {
	if f.pat != nil {
		return f.pat.index(text)
	}
	n := len(f.needle)
	if n <= 1 || len(text) < n {
		return bytes.Index(text, f.needle)
	}
	if f.pairs {
		return f.indexPairs(text)
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

// indexPairs is index through pairScan: the starts whose 16-byte loads at
// both offsets stay inside text are tested in bulk, the last few one by
// one.
func (f *finder) indexPairs(text []byte) int {
	n := len(f.needle)
	last := len(text) - n // the last start the needle fits at
	p := 0
	if bulk := min(last, len(text)-16-max(f.off, f.off2, f.off3)); bulk >= 0 {
		for p <= bulk {
			c := pairScan(text, p, bulk, f.off, f.off2, f.off3, f.rare, f.rare2, f.rare3)
			if c < 0 {
				p = bulk + 1
				break
			}
			if bytes.Equal(text[c:c+n], f.needle) {
				return c
			}
			p = c + 1
		}
	}
	for ; p <= last; p++ {
		if text[p+f.off] == f.rare && text[p+f.off2] == f.rare2 && text[p+f.off3] == f.rare3 && bytes.Equal(text[p:p+n], f.needle) {
			return p
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
