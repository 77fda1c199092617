package index

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPrecomputedFieldIndexesWhatTheAnalyzerEmits: the field built for a
// block must give Bleve exactly the terms the registered analyzer gives,
// since queries and older indexes rely on the analyzer's terms.
func TestPrecomputedFieldIndexesWhatTheAnalyzerEmits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	words := []string{"func", "return nil", "日本語", "🙂", "naïve", "\t", "\n", "{", "}", "x", "ErrCartEmpty", "\xff"}
	set := &trigramSet{}
	for i := range 300 {
		var b strings.Builder
		for range r.IntN(400) {
			b.WriteString(words[r.IntN(len(words))])
		}
		text := []byte(b.String())
		var want []string
		for _, tok := range (trigramAnalyzer{}).Analyze(text) {
			want = append(want, string(tok.Term))
		}
		f := &trigramField{value: text}
		if i%2 == 0 {
			set.analyze(f, nil) // reused table, as the indexer does
		} else {
			f.Analyze() // fresh table, as deletions do
		}
		var got []string
		for term, tf := range f.AnalyzedTokenFrequencies() {
			if term != string(tf.Term) {
				t.Fatalf("map key %q holds term %q", term, tf.Term)
			}
			got = append(got, term)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("text %d: field terms %q, analyzer terms %q", i, got, want)
		}
		if f.AnalyzedLength() != len(want) {
			t.Fatalf("text %d: analysed length %d, want %d", i, f.AnalyzedLength(), len(want))
		}
	}
}
