package search

import (
	"bytes"
	"context"
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
		snips, used := snippets(nil, []segment{{text: []byte(text)}}, newFinder([]byte(needle)), budget)
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

// TestSnippetSegmentsKeepWhatSnippetsReach: a hit keeps only parts of its
// text (snippetSegments), and over texts with matches near and far apart,
// multi-byte runes and every budget, snippets of those parts are exactly
// the snippets of the whole text.
func TestSnippetSegmentsKeepWhatSnippetsReach(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	words := []string{"ab", "é", "日本", "🙂", "x", " ", "\n", "needle", "nee", strings.Repeat("filler ", 12)}
	late, split := 0, 0
	for range 3000 {
		var b strings.Builder
		for range r.IntN(200) {
			b.WriteString(words[r.IntN(len(words))])
		}
		// A needle longer than a snippet's context: a match found in a
		// stretch the segments' search skipped then reaches further.
		needle := []string{"needle", "日本", "🙂 ", "e", "ab", "ller f", strings.Repeat("filler ", 11)}[r.IntN(7)]
		text := b.String()
		if !strings.Contains(text, needle) {
			continue
		}
		segs := snippetSegments([]byte(text), []byte(needle))
		kept := 0
		for i, s := range segs {
			kept += len(s.text)
			if at := len(string([]rune(text)[:s.runes])); !strings.HasPrefix(text[at:], string(s.text)) {
				t.Fatalf("text %q: segment %d %q does not lie %d runes in", text, i, s.text, s.runes)
			}
		}
		if len(segs) > 0 && segs[0].runes > 0 {
			late++
		}
		if len(segs) > 1 {
			split++
		}
		for _, budget := range []int{20, 60, 150, 600, 10000} {
			want, wantUsed := snippets(nil, []segment{{text: []byte(text)}}, newFinder([]byte(needle)), budget)
			got, gotUsed := snippets(nil, segs, newFinder([]byte(needle)), budget)
			if fmt.Sprint(got) != fmt.Sprint(want) || gotUsed != wantUsed {
				t.Fatalf("needle %q, budget %d, %d bytes kept of %d in %d segments:\n got %v\nwant %v\ntext %q", needle, budget, kept, len(text), len(segs), got, want, text)
			}
		}
	}
	if late < 500 || split < 300 {
		t.Fatalf("only %d texts were kept from after their start and %d in several parts: the test must have many of both", late, split)
	}
}

// TestHitPartsFindWhatSeparateSearchesFind: hitParts finds the snippets'
// parts and counts the matches in one pass; over texts where matches
// overlap (the count skips some that a snippet's search finds), its parts
// are those of searching for each snippet's match apart, and its count is
// bytes.Count's.
func TestHitPartsFindWhatSeparateSearchesFind(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	words := []string{"a", "aa", "ab", "b", "é", "日本", " ", strings.Repeat("x", 70), strings.Repeat("a", 90)}
	needles := []string{"a", "aa", "aaa", "aba", "aab", "日本日", "ab", strings.Repeat("a", 85)}
	overlapped := 0
	for range 5000 {
		var b strings.Builder
		for range r.IntN(120) {
			b.WriteString(words[r.IntN(len(words))])
		}
		text, needle := []byte(b.String()), []byte(needles[r.IntN(len(needles))])
		first := bytes.Index(text, needle)
		if first < 0 {
			continue
		}
		want, wantMatches := fmt.Sprint(segmentsApart(text, needle)), bytes.Count(text, needle)
		segs, matches := hitParts(nil, text, newFinder(needle), first)
		if matches != wantMatches {
			t.Fatalf("needle %q in %q: %d matches, bytes.Count says %d", needle, text, matches, wantMatches)
		}
		// The parts are copies: snippets share their bytes, so the
		// text's buffer (a reader's, reused) must not be.
		saved := bytes.Clone(text)
		clear(text)
		if fmt.Sprint(segs) != want {
			t.Fatalf("needle %q in %q:\n got %v\nwant %v", needle, saved, segs, want)
		}
		text = saved
		if bytes.Count(text, needle) < countOverlapping(text, needle) && len(segs) > 0 {
			overlapped++
		}
	}
	if overlapped < 500 {
		t.Fatalf("only %d texts had matches the count skips: the test needs many", overlapped)
	}
}

// TestIsASCIIFindsEveryHighByte: isASCII agrees with a byte-by-byte check
// wherever a byte of 0x80 or more sits, at every length around its 32-
// and 8-byte steps.
func TestIsASCIIFindsEveryHighByte(t *testing.T) {
	for n := 0; n <= 72; n++ {
		b := bytes.Repeat([]byte{'a'}, n)
		if !isASCII(b) {
			t.Fatalf("isASCII(%q) = false", b)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				b[i] = c
				if isASCII(b) {
					t.Fatalf("isASCII(%q) = true with byte %#x at %d", b, c, i)
				}
				b[i] = 0x7f
				if !isASCII(b) {
					t.Fatalf("isASCII(%q) = false with only ASCII", b)
				}
				b[i] = 'a'
			}
		}
	}
}

// segmentsApart is what hitParts keeps, found the plain way: a search for
// each snippet's match in turn.
func segmentsApart(text, needle []byte) []segment {
	type span struct{ a, b int }
	var spans []span
	from := 0
	for range maxSnippets {
		i := bytes.Index(text[from:], needle)
		if i < 0 {
			break
		}
		m := from + i
		a := runesBack(text, m, maxContext)
		from = runesOn(text, m+len(needle), maxContext)
		b := runesOn(text, min(len(text), from+len(needle)), maxContext)
		if n := len(spans); n > 0 && a <= spans[n-1].b {
			spans[n-1].b = b
		} else {
			spans = append(spans, span{a, b})
		}
		if from >= len(text) {
			break
		}
	}
	segs := make([]segment, len(spans))
	runes, at := 0, 0
	for k, sp := range spans {
		runes += utf8.RuneCount(text[at:sp.a])
		segs[k] = segment{text: text[sp.a:sp.b], runes: runes}
		runes += utf8.RuneCount(text[sp.a:sp.b])
		at = sp.b
	}
	return segs
}

// countOverlapping counts every match, overlapping ones too.
func countOverlapping(text, needle []byte) int {
	n := 0
	for i := 0; i+len(needle) <= len(text); i++ {
		if bytes.Equal(text[i:i+len(needle)], needle) {
			n++
		}
	}
	return n
}

// TestHitSnippetsPointIntoTheWholeText: a search's hits keep only part of
// their texts, yet each snippet is the piece of the entry's whole text
// that starts Offset runes in, also when the first match lies further in
// than any snippet's context reaches back.
func TestHitSnippetsPointIntoTheWholeText(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(31, 32))
	e.importFile(t, writeJournal(t, t.TempDir(), "snip0000", r, 400, ""))
	e.catchUp(t)
	deep := 0
	for _, needle := range []string{"ErrCartEmpty", "日本語", "🚀x", "naïve", "return nil"} {
		req := Request{Needle: needle, Scope: ScopeAll, Limit: 200}
		resp, err := e.eng.Search(context.Background(), &req)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range resp.Hits {
			text, err := e.st.Text(h.Seq)
			if err != nil {
				t.Fatal(err)
			}
			runes := []rune(text)
			if utf8.RuneCountInString(text[:strings.Index(text, needle)]) > maxContext {
				deep++
			}
			for i, s := range h.Snippets {
				n := utf8.RuneCountInString(s.Text)
				if s.Offset < 0 || s.Offset+n > len(runes) || string(runes[s.Offset:s.Offset+n]) != s.Text {
					t.Fatalf("needle %q, entry %s: snippet %d %q is not the text at rune %d", needle, h.Entry, i, s.Text, s.Offset)
				}
			}
		}
	}
	if deep < 20 {
		t.Fatalf("only %d hits had their first match more than %d runes in: the test must have many", deep, maxContext)
	}
}

// TestRunesOnAndBackStepByRunes: stepping n runes forward or back from a
// rune boundary lands where decoding rune by rune does, over ASCII,
// multi-byte runes and stray continuation bytes, at every boundary and for
// every n up to beyond the text's ends.
func TestRunesOnAndBackStepByRunes(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	pieces := []string{"a", "bc", " ", "é", "日本", "🙂", "\x80", strings.Repeat("x", 90)}
	for range 300 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := []byte(b.String())
		for at := 0; at <= len(text); at++ {
			if at < len(text) && !utf8.RuneStart(text[at]) && text[at] != 0x80 {
				continue
			}
			for _, n := range []int{0, 1, 2, 5, 80, 200} {
				want := at
				for k := 0; k < n && want < len(text); k++ {
					_, sz := utf8.DecodeRune(text[want:])
					want += sz
				}
				if got := runesOn(text, at, n); got != want {
					t.Fatalf("runesOn(%q, %d, %d) = %d, want %d", text, at, n, got, want)
				}
				want = at
				for k := 0; k < n && want > 0; k++ {
					_, sz := utf8.DecodeLastRune(text[:want])
					want -= sz
				}
				if got := runesBack(text, at, n); got != want {
					t.Fatalf("runesBack(%q, %d, %d) = %d, want %d", text, at, n, got, want)
				}
			}
		}
	}
}

// runeCount counts what utf8.RuneCount counts, invalid bytes included, at
// every alignment of ASCII runs and multi-byte runes.
func TestRuneCountAgreesWithUTF8(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", "é", "abcdefgé", "abcdefghé", "日本語のテキスト and more ASCII after it",
		"🙂🙂🙂🙂", "\xff", "abcdefg\xff", "abcdefgh\xc3", "\xc3(abcdefghijklmnop", strings.Repeat("x", 100) + "→" + strings.Repeat("y", 17), strings.Repeat("x", 70) + "é" + strings.Repeat("y", 70) + "\xff" + strings.Repeat("z", 33)} {
		for cut := 0; cut <= len(s); cut++ {
			if got, want := runeCount([]byte(s[cut:])), utf8.RuneCount([]byte(s[cut:])); got != want {
				t.Errorf("runeCount(%q) = %d, want %d", s[cut:], got, want)
			}
		}
	}
}

func FuzzRuneCountAgreesWithUTF8(f *testing.F) {
	f.Add([]byte("abcdefgh\xe2\x86\x92ijklmnop\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := runeCount(b), utf8.RuneCount(b); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", b, got, want)
		}
	})
}

// TestArenaHandsOutEachByteOnce: what an arena hands out never overlaps
// what it handed out before (snippets share those bytes), each piece has
// exactly the room asked for, and a large piece is memory of its own.
func TestArenaHandsOutEachByteOnce(t *testing.T) {
	var a arena
	var pieces [][]byte
	for i, n := range []int{1, 100, 5000, 0, 3000, arenaBytes / 4, arenaBytes/4 + 1, 16, 7000, 9000} {
		b := a.bytesFor(n)
		if len(b) != 0 || cap(b) != n {
			t.Fatalf("piece %d: len %d cap %d, want 0 and %d", i, len(b), cap(b), n)
		}
		b = append(b, bytes.Repeat([]byte{byte('a' + i)}, n)...)
		pieces = append(pieces, b)
	}
	for i, b := range pieces {
		if bytes.Count(b, []byte{byte('a' + i)}) != len(b) {
			t.Fatalf("piece %d was written over by a later one", i)
		}
	}
	s1, s2 := a.segsFor(3), a.segsFor(2)
	s1[2].runes = 7
	if s2[0].runes != 0 || len(s1) != 3 || cap(s1) != 3 || len(s2) != 2 {
		t.Fatalf("segments overlap or are sized wrong: %v %v", s1, s2)
	}
	var none *arena // a nil arena allocates each piece itself
	if b := none.bytesFor(10); cap(b) != 10 {
		t.Fatalf("nil arena: cap %d, want 10", cap(b))
	}
}
