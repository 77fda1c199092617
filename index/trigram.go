package index

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
)

// AnalyzerName names the trigram analyzer saved in the index mapping. The
// index can only be opened by a binary that registers the same name, so the
// name carries a version: a change to the tokenizer gets a new name and a
// reindex.
//
// v2 marks indexes that leave common trigrams out of later blocks (see
// common.go): a binary that only knows v1 would ask them for those
// trigrams and miss blocks, so it must not open them. v3 marks indexes
// whose blocks hold only the trigrams that windows select (see
// trigram.Window): a binary that knows v2 would ask them for trigrams no
// block holds. This binary opens v1 and v2 indexes too, and reads them as
// they were made (every trigram; every uncommon trigram) until
// 'pi-history reindex' rebuilds them.
const AnalyzerName = "pihist-trigram-v3"

const (
	analyzerV1 = "pihist-trigram-v1"
	analyzerV2 = "pihist-trigram-v2"
)

// olderAnalyzers are the names of earlier versions this binary still reads.
var olderAnalyzers = []string{analyzerV2, analyzerV1}

// trigramTokenizer emits each distinct rune trigram of its input once
// (with winnow, each trigram a window selects), case preserved. Positions
// are meaningless: search never uses phrases.
type trigramTokenizer struct{ winnow bool }

func (t trigramTokenizer) Tokenize(input []byte) analysis.TokenStream {
	set := trigramSet{winnow: t.winnow}
	spans := set.distinct(input)
	toks := make([]analysis.Token, len(spans))
	ts := make(analysis.TokenStream, len(spans))
	for i, sp := range spans {
		toks[i] = analysis.Token{Term: input[sp[0]:sp[1]], Start: int(sp[0]), End: int(sp[1]), Position: i + 1, Type: analysis.AlphaNumeric}
		ts[i] = &toks[i]
	}
	return ts
}

type trigramAnalyzer struct{ winnow bool }

func (a trigramAnalyzer) Analyze(input []byte) analysis.TokenStream {
	return trigramTokenizer(a).Tokenize(input)
}

func init() {
	for _, name := range append([]string{AnalyzerName}, olderAnalyzers...) {
		a := trigramAnalyzer{winnow: name == AnalyzerName}
		err := registry.RegisterAnalyzer(name, func(map[string]interface{}, *registry.Cache) (analysis.Analyzer, error) {
			return a, nil
		})
		if err != nil {
			panic(err)
		}
	}
}
