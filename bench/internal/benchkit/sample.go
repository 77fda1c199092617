package benchkit

import (
	"math/rand/v2"
	"strings"
	"unicode"
)

// Sampler draws needles from the texts of stored entries.
type Sampler struct {
	Text func(seq uint64) (string, error) // an entry's searchable text
	Last uint64                           // the highest seq stored
	R    *rand.Rand
}

// At returns a plain string (see Plain) of minLen to maxLen characters
// from the text of an entry seqOf picks, or "" after many tries.
func (s *Sampler) At(seqOf func() uint64, minLen, maxLen int) string {
	for range 10000 {
		text, err := s.Text(seqOf())
		if err != nil || len(text) < maxLen {
			continue
		}
		runes := []rune(text)
		l := minLen + s.R.IntN(maxLen-minLen+1)
		if len(runes) <= l {
			continue
		}
		i := s.R.IntN(len(runes) - l)
		str := string(runes[i : i+l])
		if Plain(str) {
			return str
		}
	}
	return ""
}

// Sample returns a plain string of minLen to maxLen characters from a
// random entry.
func (s *Sampler) Sample(minLen, maxLen int) string {
	return s.At(func() uint64 { return 1 + s.R.Uint64N(s.Last) }, minLen, maxLen)
}

// NearMiss turns a sampled needle into one that matches nothing: one
// character replaced by Q and a q appended.
func (s *Sampler) NearMiss(str string) string {
	b := []rune(str)
	b[s.R.IntN(len(b))] = 'Q'
	return string(b) + "q"
}

// Plain reports whether s is written the same in JSON as in text (so
// ripgrep over the raw journal looks for the same bytes).
func Plain(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || !unicode.IsPrint(c) {
			return false
		}
	}
	return strings.TrimSpace(s) != ""
}
