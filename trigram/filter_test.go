package trigram

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// A filter of many texts passes every needle any one of them holds, at any
// byte offset (a needle may start inside a rune: the filter is of bytes),
// and also after more texts are added.
func TestFilterPassesEveryNeedleItsTextsHold(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for round := range 20 {
		var f Filter
		var texts [][]byte
		for range 300 {
			text := randomText(r, 1+r.IntN(3000))
			texts = append(texts, text)
			f.Add(text)
		}
		for range 500 {
			text := texts[r.IntN(len(texts))]
			a := r.IntN(len(text))
			b := min(len(text), a+1+r.IntN(40))
			needle := text[a:b]
			if !NewProbe(needle).PassFilter(&f) {
				t.Fatalf("round %d: needle %q is in a text but the filter rules it out", round, needle)
			}
		}
	}
}

// A filter rules out nearly every needle whose byte trigrams its texts
// lack, a needle of one trigram included, at the fill of a chunk of the
// benchmark's corpus.
func TestFilterRulesOutAbsentNeedles(t *testing.T) {
	var f Filter
	// ~45,000 distinct byte trigrams over the bytes 'a'..'z' and 'A'..'Z'
	// with digits: what a chunk of a thousand entries holds.
	r := rand.New(rand.NewPCG(13, 14))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
	text := make([]byte, 60000)
	for i := range text {
		text[i] = alphabet[r.IntN(len(alphabet))]
	}
	f.Add(text)
	set := 0
	for _, w := range f.tri {
		set += bits.OnesCount64(w)
	}
	fill := float64(set) / FilterBits
	t.Logf("fill %.3f", fill)
	if fill > 0.35 {
		t.Fatalf("the filter is %.0f%% set: the test's texts are not what a chunk holds", 100*fill)
	}
	for _, tc := range []struct {
		name   string
		length int
		most   float64
	}{{"one byte", 1, 0}, {"one pair", 2, 0}, {"one trigram", 3, 0.01}, {"two trigrams", 4, 0.0005}, {"six trigrams", 7, 0}, {"three runs", 10, 0.0005}, {"thirteen runs", 20, 0}} {
		passed, tried := 0, 0
		for range 20000 {
			needle := make([]byte, tc.length)
			for i := range needle {
				needle[i] = "0123456789_-*"[r.IntN(13)]
			}
			if bytes.Contains(text, needle) {
				continue
			}
			tried++
			if NewProbe(needle).PassFilter(&f) {
				passed++
			}
		}
		rate := float64(passed) / float64(tried)
		t.Logf("%s: %d of %d absent needles passed", tc.name, passed, tried)
		if rate > tc.most {
			t.Errorf("%s: %d of %d absent needles passed (%.4f, want at most %.4f)", tc.name, passed, tried, rate, tc.most)
		}
	}
}

// A needle of LongGram bytes or more is tested on its runs, not its
// trigrams: texts holding every trigram of it, but not it, are ruled out,
// and texts holding it pass wherever it sits.
func TestLongNeedlesAreTestedOnTheirRuns(t *testing.T) {
	var f Filter
	for _, text := range []string{"abcdefgX", "Ybcdefgh", "the needle is here: 0123456789", "日本語のテキスト"} {
		f.Add([]byte(text))
	}
	for _, tc := range []struct {
		needle string
		pass   bool
	}{
		{"abcdefgh", false}, // every trigram is in some text, the run in none
		{"abcdefgX", true}, {"Ybcdefgh", true}, {"needle is here", true},
		{"0123456789", true}, {": 012345", true}, {"本語のテキ", true},
		{"needle is there", false}, {"0123456780", false}, {"本語のテキト", false},
		{"bcdefg", true}, // shorter than a run: tested on its trigrams
	} {
		if got := NewProbe([]byte(tc.needle)).PassFilter(&f); got != tc.pass {
			t.Errorf("needle %q: pass %v, want %v", tc.needle, got, tc.pass)
		}
	}
	var only Filter
	only.Add([]byte("abcdefgX"))
	only.Add([]byte("Ybcdefgh"))
	set := 0
	for _, w := range only.long {
		set += bits.OnesCount64(w)
	}
	if set != 2 {
		t.Fatalf("two texts of eight bytes set %d bits of the long set; want one for each run", set)
	}
}

// Needles of one or two bytes are tested on the filter's exact sets of
// bytes and byte pairs; an empty filter rules out every needle.
func TestFilterOfShortNeedlesAndEmptyFilters(t *testing.T) {
	var empty, f Filter
	for _, nd := range []string{"a", "ab", "é", "abc", "€", "日本", "\x00"} {
		if NewProbe([]byte(nd)).PassFilter(&empty) {
			t.Errorf("needle %q passed an empty filter", nd)
		}
	}
	f.Add([]byte("café"))
	f.Add([]byte("\x00\x01"))
	for _, tc := range []struct {
		needle string
		pass   bool
	}{{"c", true}, {"é", true}, {"af", true}, {"\x00", true}, {"\x00\x01", true}, {"\xa9", true},
		{"b", false}, {"fa", false}, {"e", false}, {"\x01\x00", false}, {"\x02", false}} {
		if got := NewProbe([]byte(tc.needle)).PassFilter(&f); got != tc.pass {
			t.Errorf("needle %q on a filter of \"café\" and \"\\x00\\x01\": pass %v, want %v", tc.needle, got, tc.pass)
		}
	}
	if NewProbe(nil).Filters() || !NewProbe([]byte("a")).Filters() {
		t.Error("Filters: an empty needle has something to test, or a needle of one byte has not")
	}
}

// An ordered probe tests the same filter bits.
func TestOrderedProbeKeepsItsFilterBits(t *testing.T) {
	var f Filter
	f.Add([]byte("the quick brown fox"))
	p := NewProbe([]byte("brown"))
	o := p.Ordered(func(q1, q2 uint16) int { return -int(q1) })
	if !o.PassFilter(&f) || NewProbe([]byte("brawn")).Ordered(func(q1, q2 uint16) int { return 0 }).PassFilter(&f) {
		t.Error("an ordered probe does not test the filter as its probe does")
	}
}

// A filter keeps every substring of its text, valid UTF-8 or not: it is of
// bytes.
func FuzzFilterKeepsSubstrings(f *testing.F) {
	fuzzSubstrings(f, func(t *testing.T, text, needle []byte) {
		var fl Filter
		fl.Add(text)
		if !NewProbe(needle).PassFilter(&fl) {
			t.Fatalf("substring %q of %q ruled out", needle, text)
		}
	})
}

// A probe stops being worth testing on filters after filterGiveUp passes
// in a row, counted over its ordered copies too; a rule-out in between
// starts the count again. An empty needle never is.
func TestFiltersAreGivenUpAfterARunOfPasses(t *testing.T) {
	var with, without Filter
	with.Add([]byte("a needle here"))
	p := NewProbe([]byte("needle"))
	o := p.Ordered(func(q1, q2 uint16) int { return 0 })
	for i := range filterGiveUp - 1 {
		if !p.FilterWorthIt() || ![]*Probe{p, o}[i%2].PassFilter(&with) {
			t.Fatalf("after %d passes: worth it %v; want it still tested, and passed", i, p.FilterWorthIt())
		}
	}
	if o.PassFilter(&without) || !p.FilterWorthIt() {
		t.Fatal("a filter without the needle passed it, or did not start the run again")
	}
	for range filterGiveUp {
		p.PassFilter(&with)
	}
	if p.FilterWorthIt() || o.FilterWorthIt() {
		t.Errorf("after %d passes in a row the probe (or its ordered copy) is still worth testing", filterGiveUp)
	}
	if NewProbe(nil).FilterWorthIt() {
		t.Error("an empty needle is worth testing on filters")
	}
}

// TestFilterEncodingRoundTrips: a filter decoded from its encoding passes
// and rules out what the original does, and an encoding of another length
// is refused without touching the filter.
func TestFilterEncodingRoundTrips(t *testing.T) {
	var f Filter
	f.Add([]byte("func main() { fmt.Println(\"日本語 🙂\") }"))
	enc, err := f.AppendBinary([]byte("prefix"))
	if err != nil || len(enc) != len("prefix")+FilterEncodedBytes {
		t.Fatalf("AppendBinary = %d bytes, %v; want %d after the prefix", len(enc), err, FilterEncodedBytes)
	}
	var g Filter
	if err := g.UnmarshalBinary(enc[len("prefix"):]); err != nil {
		t.Fatal(err)
	}
	if g != f {
		t.Fatal("the decoded filter differs from the encoded one")
	}
	for _, nd := range []string{"main", "日本", "🙂", "Println", "zebra", "Q", "ma"} {
		p := NewProbe([]byte(nd))
		if p.PassFilter(&g) != p.PassFilter(&f) {
			t.Errorf("%q: decoded filter answers %v, the original %v", nd, p.PassFilter(&g), p.PassFilter(&f))
		}
	}
	before := g
	for _, n := range []int{0, FilterEncodedBytes - 1, FilterEncodedBytes + 1} {
		if err := g.UnmarshalBinary(make([]byte, n)); err == nil {
			t.Errorf("an encoding of %d bytes was accepted", n)
		}
	}
	if g != before {
		t.Error("a refused encoding changed the filter")
	}
}

// A probe's Memo is one slot shared with its ordered copies, so that what
// a store stores there for the search is found by each; a Probe not made
// by NewProbe has none.
func TestMemoIsSharedWithOrderedCopies(t *testing.T) {
	p := NewProbe([]byte("needle"))
	o := p.Ordered(func(q1, q2 uint16) int { return int(q2) })
	if p.Memo() == nil || o.Memo() != p.Memo() {
		t.Fatal("an ordered copy does not share its probe's memo")
	}
	p.Memo().Store("order")
	if o.Memo().Load() != "order" || NewProbe([]byte("needle")).Memo().Load() != nil {
		t.Error("the memo is not shared by the copy, or is shared by another probe")
	}
	if (&Probe{}).Memo() != nil {
		t.Error("a zero Probe has a memo")
	}
}
