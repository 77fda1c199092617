package index

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/pi-history/pi-history/trigram"
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
func Trigrams(s string) []string { return trigram.Distinct(s) }

func (trigramTokenizer) Tokenize(input []byte) analysis.TokenStream {
	seen := make(map[uint64]struct{}, len(input)/2+1)
	ts := make(analysis.TokenStream, 0, len(input)/3+1)
	toks := make([]analysis.Token, 0, len(input)/3+1)
	trigram.Each(input, func(key uint64, start, end int) {
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
