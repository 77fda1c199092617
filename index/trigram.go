package index

import (
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
)

// AnalyzerName names the trigram analyzer saved in the index mapping. The
// index can only be opened by a binary that registers the same name, so the
// name carries a version: a change to the tokenizer gets a new name and a
// reindex.
const AnalyzerName = "pihist-trigram-v1"

// trigramTokenizer emits each distinct rune trigram of its input once,
// case preserved. Positions are meaningless: search never uses phrases.
type trigramTokenizer struct{}

// Trigrams returns the distinct trigrams of s (as strings of three runes) in
// first-seen order.
func Trigrams(s string) []string {
	var out []string
	seen := map[uint64]bool{}
	forEachTrigram([]byte(s), func(key uint64, start, end int) {
		if !seen[key] {
			seen[key] = true
			out = append(out, s[start:end])
		}
	})
	return out
}

// forEachTrigram calls fn for every rune trigram of b (repeats included),
// with a key unique to the trigram and its byte span.
func forEachTrigram(b []byte, fn func(key uint64, start, end int)) {
	var r [3]rune
	var pos [4]int
	n := 0
	for i := 0; i < len(b); {
		if b[i] == sep {
			n = 0
			i++
			continue
		}
		c, size := utf8.DecodeRune(b[i:])
		r[0], r[1], r[2] = r[1], r[2], c
		pos[0], pos[1], pos[2], pos[3] = pos[1], pos[2], pos[3], i
		i += size
		n++
		if n >= 3 {
			key := uint64(r[0])<<42 | uint64(r[1])<<21 | uint64(r[2])
			fn(key, pos[1], i)
		}
	}
}

func (trigramTokenizer) Tokenize(input []byte) analysis.TokenStream {
	seen := make(map[uint64]struct{}, len(input)/2+1)
	ts := make(analysis.TokenStream, 0, len(input)/3+1)
	toks := make([]analysis.Token, 0, len(input)/3+1)
	forEachTrigram(input, func(key uint64, start, end int) {
		if _, ok := seen[key]; ok {
			return
		}
		seen[key] = struct{}{}
		toks = append(toks, analysis.Token{Term: input[start:end], Start: start, End: end, Position: len(toks) + 1, Type: analysis.AlphaNumeric})
	})
	for i := range toks {
		ts = append(ts, &toks[i])
	}
	return ts
}

type trigramAnalyzer struct{}

func (trigramAnalyzer) Analyze(input []byte) analysis.TokenStream {
	return trigramTokenizer{}.Tokenize(input)
}

func init() {
	err := registry.RegisterAnalyzer(AnalyzerName, func(map[string]interface{}, *registry.Cache) (analysis.Analyzer, error) {
		return trigramAnalyzer{}, nil
	})
	if err != nil {
		panic(err)
	}
}
