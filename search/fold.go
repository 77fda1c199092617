package search

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// foldFinder finds an ignore-case literal without the regex engine, which
// took most of an ignore-case count's time confirming its candidates (see
// docs/decisions/180-ignore-case-and-regex.md). It looks for an anchor, a character of the needle whose
// every case is one ASCII byte (not k or s, whose cases include the
// Kelvin sign and the long s), in either case, steps back over the
// characters before it in the needle, and compares each character there
// with the needle's as strings.EqualFold does. Matches are leftmost
// first and do not overlap, as regexp's FindAllIndex gives them for the
// same expression.
//
// Backing over a byte that is not UTF-8 could land where reading forward
// would not: a text with one near a candidate is left to the regex (ok
// false), which reads it as the regex always does.
type foldFinder struct {
	runes  []rune // the needle's characters
	anchor int    // the index in runes of the anchor
	lo, up byte   // the anchor in lower and upper case (the same byte when it has no case)
}

// newFoldFinder returns the foldFinder of needle, nil when no character
// of it can anchor one.
func newFoldFinder(needle string) *foldFinder {
	f := &foldFinder{runes: []rune(needle), anchor: -1}
	best := 1 << 30
	for i, r := range f.runes {
		if r >= utf8.RuneSelf || r == 'k' || r == 'K' || r == 's' || r == 'S' {
			continue
		}
		lo := byte(unicode.ToLower(r))
		if rank := min(byteRank[lo], byteRank[byte(unicode.ToUpper(r))]); rank < best {
			best, f.anchor = rank, i
		}
	}
	if f.anchor < 0 {
		return nil
	}
	r := f.runes[f.anchor]
	f.lo, f.up = byte(unicode.ToLower(r)), byte(unicode.ToUpper(r))
	return f
}

// next returns the first match in text starting at or after from, as
// [s, e); s is -1 when there is none. ok is false when a byte that is not
// UTF-8 lies where a candidate is checked: the caller must ask the regex.
func (f *foldFinder) next(text []byte, from int) (s, e int, ok bool) {
	nextLo, nextUp := -1, -1 // the next occurrence of each case at or after q, once found
	for q := from + f.anchor; q < len(text); {
		if nextLo < q {
			if nextLo = indexByteFrom(text, q, f.lo); nextLo < 0 {
				nextLo = len(text)
			}
		}
		if nextUp < q {
			if nextUp = indexByteFrom(text, q, f.up); nextUp < 0 {
				nextUp = len(text)
			}
		}
		if q = min(nextLo, nextUp); q >= len(text) {
			break
		}
		s, ok := f.back(text, q)
		if !ok {
			return -1, 0, false
		}
		if s >= from {
			e, match, ok := f.matchAt(text, s)
			if !ok {
				return -1, 0, false
			}
			if match {
				return s, e, true
			}
		}
		q++
	}
	return -1, 0, true
}

// back returns where the needle would start in text if its anchor lay at
// q: as many characters before q as the needle has before its anchor
// (-1 when the text has fewer).
func (f *foldFinder) back(text []byte, q int) (int, bool) {
	s := q
	for k := 0; k < f.anchor; k++ {
		if s == 0 {
			return -1, true
		}
		r, sz := utf8.DecodeLastRune(text[:s])
		if r == utf8.RuneError && sz == 1 {
			return 0, false
		}
		s -= sz
	}
	return s, true
}

// matchAt reports whether the needle matches text from s, and where the
// match ends.
func (f *foldFinder) matchAt(text []byte, s int) (int, bool, bool) {
	at := s
	for _, nr := range f.runes {
		if at >= len(text) {
			return 0, false, true
		}
		r, sz := rune(text[at]), 1
		if r >= utf8.RuneSelf {
			if r, sz = utf8.DecodeRune(text[at:]); r == utf8.RuneError && sz == 1 {
				return 0, false, false
			}
		}
		if !foldEqual(r, nr) {
			return 0, false, true
		}
		at += sz
	}
	return at, true, true
}

// foldEqual reports whether r and nr are one character under simple case
// folding (strings.EqualFold's test of each pair).
func foldEqual(r, nr rune) bool {
	if r == nr {
		return true
	}
	if r < utf8.RuneSelf && nr < utf8.RuneSelf {
		lr, ln := r|0x20, nr|0x20
		return lr == ln && 'a' <= lr && lr <= 'z'
	}
	for g := unicode.SimpleFold(nr); g != nr; g = unicode.SimpleFold(g) {
		if g == r {
			return true
		}
	}
	return false
}

// indexByteFrom is bytes.IndexByte of text from at, as an offset into
// text.
func indexByteFrom(text []byte, at int, c byte) int {
	if i := bytes.IndexByte(text[at:], c); i >= 0 {
		return at + i
	}
	return -1
}
