package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSnippetsMarkTheNeedleAtTheirRuneOffsets: over texts of multi-byte
// runes with several matches, each snippet is the piece of the text that
// starts Offset runes in, marks the needle between MatchStart and
// MatchEnd, matches come in text order, and the snippets fit
// the budget (counted in characters).
func TestSnippetsMarkTheNeedleAtTheirRuneOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	words := []string{"ab", "é", "日本", "🙂", "x", " ", "\n", "needle", "nee"}
	cases := 0
	for range 2000 {
		var b strings.Builder
		for range r.IntN(120) {
			b.WriteString(words[r.IntN(len(words))])
		}
		text := b.String()
		needle := []string{"needle", "日本", "🙂 ", "e", "ab"}[r.IntN(5)]
		budget := 20 + r.IntN(400)
		snips, used := snippets(text, needle, budget)
		runes := []rune(text)
		total, last := 0, -1
		for i, s := range snips {
			n := utf8.RuneCountInString(s.Text)
			if s.Offset < 0 || s.Offset+n > len(runes) || string(runes[s.Offset:s.Offset+n]) != s.Text {
				t.Fatalf("text %q, needle %q: snippet %d %q is not the text at rune %d", text, needle, i, s.Text, s.Offset)
			}
			if s.Text[s.MatchStart:s.MatchEnd] != needle {
				t.Fatalf("text %q, needle %q: snippet %d marks %q", text, needle, i, s.Text[s.MatchStart:s.MatchEnd])
			}
			// Matches come in order; contexts may overlap.
			at := s.Offset + utf8.RuneCountInString(s.Text[:s.MatchStart])
			if at <= last {
				t.Fatalf("text %q, needle %q: snippet %d marks rune %d, not after the one before (%d)", text, needle, i, at, last)
			}
			last = at
			total += n
			cases++
		}
		if len(snips) > maxSnippets || total != used || used > budget {
			t.Fatalf("text %q, needle %q, budget %d: %d snippets of %d characters, reported %d", text, needle, budget, len(snips), total, used)
		}
		if strings.Contains(text, needle) && budget >= utf8.RuneCountInString(needle)+10 && len(snips) == 0 {
			t.Fatalf("text %q holds %q and got no snippet with budget %d", text, needle, budget)
		}
	}
	if cases < 1000 {
		t.Fatalf("only %d snippets checked", cases)
	}
}

// TestSnippetCutKeepsWhatSnippetsReach: a hit keeps only the start of its
// text (snippetCut), and over texts with matches near and far apart,
// multi-byte runes and every budget, snippets of that start are exactly
// the snippets of the whole text.
func TestSnippetCutKeepsWhatSnippetsReach(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	words := []string{"ab", "é", "日本", "🙂", "x", " ", "\n", "needle", "nee", strings.Repeat("filler ", 12)}
	cut := 0
	for range 3000 {
		var b strings.Builder
		for range r.IntN(200) {
			b.WriteString(words[r.IntN(len(words))])
		}
		needle := []string{"needle", "日本", "🙂 ", "e", "ab", "ller f"}[r.IntN(6)]
		text := b.String()
		if !strings.Contains(text, needle) {
			continue
		}
		k := snippetCut([]byte(text), []byte(needle))
		if k < len(text) {
			cut++
		}
		for _, budget := range []int{20, 60, 150, 600, 10000} {
			want, wantUsed := snippets(text, needle, budget)
			got, gotUsed := snippets(text[:k], needle, budget)
			if fmt.Sprint(got) != fmt.Sprint(want) || gotUsed != wantUsed {
				t.Fatalf("needle %q, budget %d, text cut at %d of %d bytes:\n got %v\nwant %v\ntext %q", needle, budget, k, len(text), got, want, text)
			}
		}
	}
	if cut < 500 {
		t.Fatalf("only %d texts were cut: the test must cut many", cut)
	}
}
