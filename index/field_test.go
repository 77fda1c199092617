package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/trigram"
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

// TestTrigramSetFindsEachDistinctTrigramOnce: one set reused over texts
// small and large (its table grows within a text and is reused by the
// next) finds exactly the distinct trigrams, in first-seen order, that a
// plain map finds, including trigrams that differ only in their first
// rune.
//
// With winnow set, it must find what trigram.Selected's rule selects over
// the whole text: windows of each run between separators.
func TestTrigramSetFindsEachDistinctTrigramOnce(t *testing.T) {
	for _, winnow := range []bool{false, true} {
		t.Run(fmt.Sprintf("winnow=%v", winnow), func(t *testing.T) { testTrigramSetFindsEachDistinctTrigramOnce(t, winnow) })
	}
}

// selectedInOrder is what trigram.Each and a trigram.Winnower select from
// text, each trigram once, in first-seen order.
func selectedInOrder(text string) []string {
	var out []string
	seen := map[string]bool{}
	var w trigram.Winnower
	trigram.Each([]byte(text), func(key uint64, start, end int) {
		if w.Push(key, start, end) {
			_, a, b := w.Min()
			if !seen[text[a:b]] {
				seen[text[a:b]] = true
				out = append(out, text[a:b])
			}
		}
	})
	return out
}

func testTrigramSetFindsEachDistinctTrigramOnce(t *testing.T, winnow bool) {
	r := rand.New(rand.NewPCG(23, 24))
	set := &trigramSet{winnow: winnow}
	for i := range 200 {
		n := r.IntN(300)
		if i%10 == 0 {
			n = 20000 + r.IntN(20000)
		}
		var b strings.Builder
		for range n {
			// Runes varied in the first place of their trigrams, now and
			// then a separator or a byte that is not UTF-8.
			switch r.IntN(50) {
			case 0:
				b.WriteByte(trigram.Sep)
			case 1:
				b.WriteByte(0xfe)
			default:
				b.WriteRune(rune([]int{'a', 'b', 'é', '日', '🙂', '\n', ' '}[r.IntN(7)] + r.IntN(3)))
			}
		}
		text := b.String()
		var got []string
		for _, sp := range set.distinct([]byte(text)) {
			got = append(got, text[sp[0]:sp[1]])
		}
		want := trigram.Distinct(text)
		if winnow {
			want = selectedInOrder(text)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("text %d (%d bytes): %d trigrams found, want %d", i, len(text), len(got), len(want))
		}
	}
}

// benchBlocks is text shaped like an index block's: 64 blocks of 16
// lines of code, prose and numbers.
func benchBlocks() [][]byte {
	r := rand.New(rand.NewPCG(25, 26))
	words := []string{"func", "return", "err", "nil", "if", "the", "context", "window", "history", "x := ", "fmt.Errorf(", "}\n", "\t", "0x", "日本語"}
	var blocks [][]byte
	for range 64 {
		var b []byte
		for range 16 * 80 {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// BenchmarkTrigramSet and BenchmarkTrigramMap find the distinct trigrams
// of the same blocks: the indexer's set, and a Go map as the baseline.
func BenchmarkTrigramSet(b *testing.B) {
	blocks := benchBlocks()
	b.SetBytes(int64(len(slices.Concat(blocks...))))
	var set trigramSet
	for b.Loop() {
		for _, bl := range blocks {
			set.distinct(bl)
		}
	}
}

// BenchmarkTrigramSelected is BenchmarkTrigramSet for an index of
// selected trigrams (see trigram.Window).
func BenchmarkTrigramSelected(b *testing.B) {
	blocks := benchBlocks()
	b.SetBytes(int64(len(slices.Concat(blocks...))))
	set := trigramSet{winnow: true}
	for b.Loop() {
		for _, bl := range blocks {
			set.distinct(bl)
		}
	}
}

func BenchmarkTrigramMap(b *testing.B) {
	blocks := benchBlocks()
	b.SetBytes(int64(len(slices.Concat(blocks...))))
	for b.Loop() {
		for _, bl := range blocks {
			trigram.Distinct(string(bl))
		}
	}
}
