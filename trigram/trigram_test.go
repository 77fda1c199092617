package trigram

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEachReportsRuneTrigramsAndRestartsAtSep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"ab", nil},
		{"abc", []string{"abc"}},
		{"abcd", []string{"abc", "bcd"}},
		{"aaaa", []string{"aaa", "aaa"}},
		{"héllo", []string{"hél", "éll", "llo"}},
		{"ab\xffcde", []string{"cde"}},
		{"a\x80bc", []string{"a\x80b", "\x80bc"}}, // invalid byte: one U+FFFD
	} {
		var got []string
		Each([]byte(tc.in), func(_ uint64, s, e int) { got = append(got, tc.in[s:e]) })
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Each(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDistinctKeepsFirstSeenOrder(t *testing.T) {
	got := strings.Join(Distinct("abcabcab"), "|")
	if got != "abc|bca|cab" {
		t.Errorf("Distinct = %q", got)
	}
}

// randomText makes text from a small alphabet with some multi-byte runes,
// so that trigrams repeat as they do in code and prose.
func randomText(r *rand.Rand, n int) []byte {
	alphabet := []rune("abcdefgh ij(){}\n\t\"\\éü😀日本")
	var b bytes.Buffer
	for range n {
		b.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	return b.Bytes()
}

// TestSketchNeverRejectsAContainedNeedle is the property search relies
// on: every substring of a text passes the text's sketch.
func TestSketchNeverRejectsAContainedNeedle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		text := randomText(r, 1+r.IntN(5000))
		sk, sk3, sk2 := Sketch(text), sketch3(text), sketch2(text)
		runes := []rune(string(text))
		for range 20 {
			a := r.IntN(len(runes))
			b := min(len(runes), a+1+r.IntN(40))
			needle := []byte(string(runes[a:b]))
			p := NewProbe(needle)
			if !p.Pass(sk) || !p.PassShaped(sk, Shape(sk), true) || !p.Pass(sk3) || !p.PassShaped(sk3, Shape(sk3), true) || !p.Pass(sk2) {
				t.Fatalf("text %d: needle %q is in the text but a sketch rejects it (format 4: %v, %v; format 3: %v, %v; format 2: %v)",
					i, needle, p.Pass(sk), p.PassShaped(sk, Shape(sk), true), p.Pass(sk3), p.PassShaped(sk3, Shape(sk3), true), p.Pass(sk2))
			}
		}
	}
}

func TestSketchSizeFollowsDistinctTrigrams(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var bigText []rune // 200,000 runes from 1,000 code points
	for range 200000 {
		bigText = append(bigText, rune(0x4e00+r.IntN(1000)))
	}
	pow2In := func(n, lo, hi int) bool { return n >= lo && n <= hi && n&(n-1) == 0 }
	for _, tc := range []struct {
		name       string
		text       []byte
		min, max   int // bytes of the trigram set (format 2: the sketch)
		min4, max4 int // bytes of the 4-gram set (format 4)
	}{
		{"empty", nil, 8, 8, 8, 8},
		{"short", []byte("hello"), 8, 8, 8, 8},
		{"one repeated trigram", bytes.Repeat([]byte("a"), 100000), 8, 8, 8, 8},
		{"varied 10k runes", randomText(r, 10000), 512, 8192, 512, 8192},
		{"huge text is capped", []byte(strings.Repeat(string(bigText), 4)), 8192, 8192, 8192, 8192},
	} {
		sk := Sketch(tc.text)
		tri, four, two4, ok := split(sk)
		if !ok || !two4 || sk[len(sk)-1] != formatFour2 || !pow2In(len(tri), tc.min, tc.max) || !pow2In(len(four), tc.min4, tc.max4) {
			t.Errorf("%s: sketch of %d bytes (split %v: %d + %d), want format %d with powers of two in [%d, %d] and [%d, %d]",
				tc.name, len(sk), ok, len(tri), len(four), formatFour2, tc.min, tc.max, tc.min4, tc.max4)
		}
		sk2 := sketch2(tc.text)
		if n := len(sk2) - 1; !pow2In(n, tc.min, tc.max) || sk2[n] != sketchHashes {
			t.Errorf("%s: format-2 sketch of %d bytes, want a power of two in [%d, %d] and the format byte %d", tc.name, len(sk2), tc.min, tc.max, sketchHashes)
		}
	}
}

func TestSketchRejectsMostAbsentNeedles(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	passed, tried := 0, 0
	for range 200 {
		text := randomText(r, 2000)
		sk := Sketch(text)
		for range 50 {
			needle := []byte("zq" + string(randomText(r, 10)) + "xw")
			if bytes.Contains(text, needle) {
				continue
			}
			tried++
			if NewProbe(needle).Pass(sk) {
				passed++
			}
		}
	}
	// A 14-rune needle has up to 12 trigrams, 4 of them absent from the
	// alphabet of the texts: with at most a third of the bits set, a pass
	// needs both bits of every one of them to land on set bits.
	t.Logf("%d of %d absent needles passed", passed, tried)
	if rate := float64(passed) / float64(tried); rate > 0.001 {
		t.Errorf("%d of %d absent needles passed (%.3f); the sketch is not filtering", passed, tried, rate)
	}
}

func TestShortNeedleAndForeignSketchPass(t *testing.T) {
	sk := Sketch([]byte("nothing alike"))
	if !NewProbe([]byte("zz")).Pass(sk) || !NewProbe([]byte("zz")).Empty() {
		t.Error("a needle of two characters must pass every sketch")
	}
	for _, bad := range [][]byte{nil, make([]byte, 3), make([]byte, 24)} {
		if !NewProbe([]byte("zzzz")).Pass(bad) {
			t.Errorf("a sketch of %d bytes cannot be read and must pass", len(bad))
		}
	}
	if NewProbe([]byte("zzzz")).Pass(sk) {
		t.Error("an absent trigram should fail a small sketch")
	}
}

// oneBitSketch builds a sketch of the first format: one bit per trigram in
// a power-of-two number of bytes, no format byte.
func oneBitSketch(text []byte, bytes int) []byte {
	sk := make([]byte, bytes)
	mask := uint64(bytes*8 - 1)
	Each(text, func(key uint64, _, _ int) {
		b := mix(key) & mask
		sk[b/8] |= 1 << (b % 8)
	})
	return sk
}

func TestOneBitSketchesOfOlderStoresAreStillRead(t *testing.T) {
	text := []byte("the quick brown fox jumps over the lazy dog")
	sk := oneBitSketch(text, 64)
	if !NewProbe([]byte("brown fox")).Pass(sk) {
		t.Fatal("a one-bit sketch rejects a needle its text holds")
	}
	if NewProbe([]byte("\u7a7a\u767d\u8fd8\u6ca1")).Pass(sk) {
		t.Error("a one-bit sketch of 512 bits passes an absent 20-trigram needle")
	}
	// An unknown format byte cannot be read, so it passes.
	if !NewProbe([]byte("zzzz")).Pass(append(make([]byte, 64), 9)) {
		t.Error("a sketch of an unknown format must pass")
	}
}

// fuzzSubstrings runs check on substrings of fuzzed texts: text[a:b+1],
// a and b taken modulo the text's length (in either order).
func fuzzSubstrings(f *testing.F, check func(t *testing.T, text, needle []byte)) {
	f.Add([]byte("func main() {\n\tfmt.Println(\"hi\")\n}"), 3, 9)
	f.Add([]byte("日本語のテキスト😀"), 1, 5)
	f.Add([]byte("a\x80\xffbc\xed\xa0\x80"), 0, 7)
	f.Fuzz(func(t *testing.T, text []byte, a, b int) {
		if len(text) == 0 {
			return
		}
		a = (a%len(text) + len(text)) % len(text)
		b = (b%len(text) + len(text)) % len(text)
		if a > b {
			a, b = b, a
		}
		check(t, text, text[a:b+1])
	})
}

func FuzzSketchKeepsSubstrings(f *testing.F) {
	fuzzSubstrings(f, func(t *testing.T, text, needle []byte) {
		if !utf8.Valid(text) || !utf8.Valid(needle) {
			// Stored texts and accepted needles are valid UTF-8; the
			// property is only promised for them.
			return
		}
		if !NewProbe(needle).Pass(Sketch(text)) {
			t.Fatalf("substring %q of %q rejected", needle, text)
		}
	})
}

// rowPasses tests a probe on a row the way the store's bit-sliced columns do.
func rowPasses(p *Probe, row *[SliceBits / 64]uint64) bool {
	for _, q := range p.SlicePositions() {
		if row[q/64]&(1<<(q%64)) == 0 {
			return false
		}
	}
	return true
}

func TestRowNeverRejectsWhatTheSketchPassesAndIsExactWhenSmall(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	small, large := 0, 0
	for i := range 300 {
		text := randomText(r, 1+r.IntN(3000))
		// Every format a store may hold with a row; a row stands for the
		// trigrams only of a sketch of format 3 or 4, so it is never the
		// whole of one.
		sk := sketchOf(i, text)
		var row [SliceBits / 64]uint64
		if !Row(sk, &row) {
			t.Fatalf("text %d: Row cannot read a sketch of %d bytes", i, len(sk))
		}
		format, triBytes := Layout(sk)
		exact := format == 2 && triBytes <= SliceBits/8
		if exact {
			small++
		} else {
			large++
		}
		runes := []rune(string(text))
		for range 30 {
			needle := someNeedle(r, runes)
			p := NewProbe(needle)
			sp, rp := p.Pass(sk), rowPasses(p, &row)
			if sp && !rp {
				t.Fatalf("text %d: the row rejects needle %q that the sketch passes", i, needle)
			}
			if exact && sp != rp {
				t.Fatalf("text %d: a sketch of %d bytes is its row, yet they disagree on %q", i, len(sk), needle)
			}
		}
	}
	if small == 0 || large == 0 {
		t.Fatalf("texts made %d small and %d large sketches; the test needs both", small, large)
	}
	var row [SliceBits / 64]uint64
	if Row(oneBitSketch([]byte("older format"), 64), &row) || Row(nil, &row) || Row(make([]byte, 9), &row) {
		t.Error("Row accepts a sketch that is not of the current format")
	}
}

// TestWideRowNeverRejectsWhatTheSketchPasses: sketches whose trigram set
// has WideBits bits or more get a wide row with every WidePositions bit
// of each needle they pass, and it rules out some they do not (the point
// of it); smaller sets and older formats get none.
func TestWideRowNeverRejectsWhatTheSketchPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	wide, ruledOut := 0, 0
	for i := range 200 {
		text := randomText(r, 1+r.IntN(12000))
		sk := sketchOf(i, text)
		_, triBytes := Layout(sk)
		triBits := 8 * triBytes
		var row [WideBits / 64]uint64
		if got := WideRow(sk, &row); got != (triBits >= WideBits) {
			t.Fatalf("text %d: WideRow = %v for a trigram set of %d bits", i, got, triBits)
		}
		if triBits < WideBits {
			continue
		}
		wide++
		runes := []rune(string(text))
		for range 30 {
			needle := someNeedle(r, runes)
			p := NewProbe(needle)
			rp := true
			for _, q := range p.WidePositions() {
				rp = rp && row[q/64]&(1<<(q%64)) != 0
			}
			if p.Pass(sk) && !rp {
				t.Fatalf("text %d: the wide row rejects needle %q that the sketch passes", i, needle)
			}
			if !rp {
				ruledOut++
			}
		}
	}
	if wide == 0 || ruledOut == 0 {
		t.Fatalf("%d wide sketches, %d needles ruled out by them: the test needs both", wide, ruledOut)
	}
	var row [WideBits / 64]uint64
	if WideRow(oneBitSketch(randomText(r, 5000), 1024), &row) || WideRow(nil, &row) {
		t.Error("WideRow accepts a sketch of the first format")
	}
}

// TestWideFourRowNeverRejectsWhatTheSketchPasses: sketches of the current
// format with a wide row also get a wide 4-gram row with every
// WideFourPositions bit of each needle they pass, and it rules out some
// needles that the wide trigram row lets through (the point of it);
// other sketches get none.
func TestWideFourRowNeverRejectsWhatTheSketchPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	wide, ruledOut := 0, 0
	for i := range 200 {
		text := randomText(r, 1+r.IntN(12000))
		sk := Sketch(text)
		var tri, four [WideBits / 64]uint64
		hasTri := WideRow(sk, &tri)
		if got := WideFourRow(sk, &four); got != hasTri {
			t.Fatalf("text %d: WideFourRow = %v, WideRow = %v; want both or neither for a current sketch", i, got, hasTri)
		}
		if !hasTri {
			continue
		}
		wide++
		runes := []rune(string(text))
		for range 30 {
			needle := someNeedle(r, runes)
			p := NewProbe(needle)
			has := func(row *[WideBits / 64]uint64, pos []uint16) bool {
				for _, q := range pos {
					if row[q/64]&(1<<(q%64)) == 0 {
						return false
					}
				}
				return true
			}
			triOK, fourOK := has(&tri, p.WidePositions()), has(&four, p.WideFourPositions())
			if p.Pass(sk) && !fourOK {
				t.Fatalf("text %d: the wide 4-gram row rejects needle %q that the sketch passes", i, needle)
			}
			if triOK && !fourOK {
				ruledOut++
			}
		}
	}
	if wide == 0 || ruledOut == 0 {
		t.Fatalf("%d wide sketches, %d needles ruled out by their 4-gram rows alone: the test needs both", wide, ruledOut)
	}
	var row [WideBits / 64]uint64
	if WideFourRow(oneBitSketch(randomText(r, 5000), 1024), &row) || WideFourRow(nil, &row) {
		t.Error("WideFourRow accepts a sketch of the first format")
	}
}

func TestOrderedProbePassesWhatTheProbePasses(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 300 {
		text := randomText(r, 1+r.IntN(2000))
		sk := Sketch(text)
		runes := []rune(string(text))
		a := r.IntN(len(runes))
		needle := []byte(string(runes[a:min(len(runes), a+3+r.IntN(30))]))
		if r.IntN(2) == 0 {
			needle = append(needle, randomText(r, 4)...)
		}
		p := NewProbe(needle)
		o := p.Ordered(func(q1, q2 uint16) int { return int(q1^q2) % 7 })
		if len(o.keys) != len(p.keys) || o.Pass(sk) != p.Pass(sk) {
			t.Fatalf("needle %q: ordered probe has %d keys and passes %v; the probe %d and %v", needle, len(o.keys), o.Pass(sk), len(p.keys), p.Pass(sk))
		}
	}
}

// TestPassBitsAgreesWithPass: a format-2 sketch without its format byte
// gives PassBits the answer Pass gives for the whole sketch, for needles in
// the text and needles that are not.
func TestPassBitsAgreesWithPass(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rejected := 0
	for i := range 300 {
		text := randomText(r, 1+r.IntN(3000))
		sk := sketch2(text) // PassBits reads format 2 only
		if f, _ := Layout(sk); f != 2 {
			t.Fatalf("text %d: sketch2 made a sketch of format %d", i, f)
		}
		runes := []rune(string(text))
		for range 20 {
			needle := someNeedle(r, runes)
			p := NewProbe(needle)
			want := p.Pass(sk)
			if got := p.PassBits(sk[:len(sk)-1]); got != want {
				t.Fatalf("text %d, needle %q: PassBits = %v, Pass = %v", i, needle, got, want)
			}
			if !want {
				rejected++
			}
		}
	}
	if rejected == 0 {
		t.Fatal("no needle was rejected: the comparison tested only passes")
	}
}

// TestPassShapedAgreesWithPass: a sketch of format 3 or 4 tested with its
// Shape given gets Pass's answer; with the trigram test left out, it gets
// Pass's answer whenever the trigrams pass, and then it rules out by
// 4-grams alone.
func TestPassShapedAgreesWithPass(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		format int
		sketch func([]byte) []byte
	}{{4, Sketch}, {3, sketch3}} {
		rejected, byFours := 0, 0
		for i := range 300 {
			text := randomText(r, 1+r.IntN(3000))
			sk := tc.sketch(text)
			f, tb := Layout(sk)
			if f != tc.format || ShapeTriBytes(Shape(sk)) != tb || ShapeIsCurrent(Shape(sk)) != (tc.format == 4) {
				t.Fatalf("format %d, text %d: Layout %d (%d bytes), Shape %#x", tc.format, i, f, tb, Shape(sk))
			}
			runes := []rune(string(text))
			for range 20 {
				needle := someNeedle(r, runes)
				p := NewProbe(needle)
				want := p.Pass(sk)
				if got := p.PassShaped(sk, Shape(sk), true); got != want {
					t.Fatalf("format %d, text %d, needle %q: PassShaped = %v, Pass = %v", tc.format, i, needle, got, want)
				}
				if !want {
					rejected++
				}
				if p.passTwo(sk[:tb], uint64(tb*8-1)) {
					if got := p.PassShaped(sk, Shape(sk), false); got != want {
						t.Fatalf("format %d, text %d, needle %q, trigrams passing: PassShaped without them = %v, Pass = %v", tc.format, i, needle, got, want)
					}
					if !want {
						byFours++
					}
				}
			}
		}
		if rejected == 0 || byFours == 0 {
			t.Fatalf("format %d: %d needles rejected, %d by their 4-grams: the comparison must see both", tc.format, rejected, byFours)
		}
	}
}

// TestFirstReadIsAByteTheTestNeeds: the byte FirstRead names holds a bit
// of the needle's first gram, so a sketch that passes, with that byte
// cleared, no longer does (a prefetch of it asks for the line the test
// reads).
func TestFirstReadIsAByteTheTestNeeds(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	tested := 0
	for i := range 200 {
		text := randomText(r, 1+r.IntN(3000))
		sk := Sketch(text)
		sh := Shape(sk)
		runes := []rune(string(text))
		for range 10 {
			needle := someNeedle(r, runes)
			p := NewProbe(needle)
			if len(p.keys) == 0 || !p.PassShaped(sk, sh, true) {
				continue
			}
			at := p.FirstRead(len(sk), sh)
			if at < 0 || at >= len(sk)-2 {
				t.Fatalf("text %d, needle %q: FirstRead %d of a %d-byte sketch", i, needle, at, len(sk))
			}
			cut := bytes.Clone(sk)
			cut[at] = 0
			if p.PassShaped(cut, sh, true) {
				t.Fatalf("text %d, needle %q: still passes with byte %d (FirstRead) cleared", i, needle, at)
			}
			tested++
		}
	}
	if tested < 100 {
		t.Fatalf("only %d needles passed their sketch: the test needs more", tested)
	}
	if got := NewProbe([]byte("abcdef")).FirstRead(100, 0); got != 0 {
		t.Fatalf("FirstRead of a sketch with no shape = %d, want 0", got)
	}
}

// TestFourGramsRuleOutTextsWithEveryTrigram: a text that holds every
// trigram of a needle, but never two of them in a row as the needle does,
// passes a format-2 sketch always, a format-3 sketch only when its 4-gram
// bit collides (at 1.5 bits per 4-gram, well under half the time) and a
// format-4 sketch when both its bits do (less often than format 3).
func TestFourGramsRuleOutTextsWithEveryTrigram(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	passed3, passed4, tried := 0, 0, 0
	for range 400 {
		// The needle "abcd" (random runes) has the trigrams abc and bcd;
		// the text holds both, apart, among filler.
		rs := []rune(string(randomText(r, 4)))
		if len(rs) < 4 {
			continue
		}
		a, b, c, d := string(rs[0]), string(rs[1]), string(rs[2]), string(rs[3])
		needle := a + b + c + d
		text := string(randomText(r, 50+r.IntN(500))) + " " + a + b + c + " " + string(randomText(r, 30)) + " " + b + c + d + " "
		if strings.Contains(text, needle) {
			continue
		}
		tried++
		p := NewProbe([]byte(needle))
		if !p.Pass(sketch2([]byte(text))) {
			t.Fatalf("needle %q: a format-2 sketch of a text with both its trigrams rejects it", needle)
		}
		if p.Pass(sketch3([]byte(text))) {
			passed3++
		}
		if p.Pass(Sketch([]byte(text))) {
			passed4++
		}
	}
	t.Logf("of %d texts holding every trigram but no 4-gram of the needle, format 3 passed %d, format 4 %d", tried, passed3, passed4)
	if tried < 300 || passed3*2 >= tried {
		t.Errorf("format 3 let through %d of %d texts holding every trigram but no 4-gram of the needle; want under half", passed3, tried)
	}
	if passed4*4 >= passed3*3 {
		t.Errorf("format 4 let through %d of %d such texts, format 3 %d: want at most three quarters as many", passed4, tried, passed3)
	}
}

// TestSplitRejectsMalformedSketches: only a well-formed sketch of format 3
// or 4 is read as one; anything else is of another format (or none).
func TestSplitRejectsMalformedSketches(t *testing.T) {
	good := Sketch([]byte("some text with enough trigrams to fill a set"))
	if f, tb := Layout(good); f != 4 || tb != ShapeTriBytes(Shape(good)) {
		t.Fatalf("Sketch's own output is not read as format 4 (Layout %d, %d bytes)", f, tb)
	}
	old := sketch3([]byte("some text with enough trigrams to fill a set"))
	if f, tb := Layout(old); f != 3 || tb != ShapeTriBytes(Shape(old)) {
		t.Fatalf("a format-3 sketch is not read as one (Layout %d, %d bytes)", f, tb)
	}
	if f, tb := Layout(sketch2([]byte("some text"))); f != 2 || tb != 8 {
		t.Errorf("Layout of a format-2 sketch = %d, %d bytes; want 2, 8", f, tb)
	}
	for name, sk := range map[string][]byte{
		"nil":                           nil,
		"format byte only":              {formatSplit},
		"size byte too large":           append(bytes.Repeat([]byte{0}, 16), 20, formatSplit),
		"4-gram set not pow2":           append(bytes.Repeat([]byte{0}, 8+24), 3, formatSplit),
		"trigram set too small":         append(bytes.Repeat([]byte{0}, 4+8), 2, formatSplit),
		"trigram set too large":         append(bytes.Repeat([]byte{0}, 16), 4, formatSplit),
		"format 4, size too large":      append(bytes.Repeat([]byte{0}, 16), 20, formatFour2),
		"format 4, 4-gram set not pow2": append(bytes.Repeat([]byte{0}, 8+24), 3, formatFour2),
		"format 2":                      sketch2([]byte("some text")),
	} {
		if f, _ := Layout(sk); f >= 3 {
			t.Errorf("%s: read as a sketch of format 3 or 4 (Layout %d)", name, f)
		}
	}
	// A sketch Pass cannot read passes every needle.
	if !NewProbe([]byte("abcd")).Pass(append(bytes.Repeat([]byte{0}, 16), 20, formatSplit)) {
		t.Error("an unreadable sketch rejected a needle")
	}
}

// someNeedle returns, as often as not, a piece of up to 20 runes of the
// text (which its sketch must pass) or random text of 3 to 12 bytes
// (which it mostly should not).
func someNeedle(r *rand.Rand, runes []rune) []byte {
	if r.IntN(2) == 0 {
		a := r.IntN(len(runes))
		return []byte(string(runes[a:min(len(runes), a+1+r.IntN(20))]))
	}
	return randomText(r, 3+r.IntN(10))
}

// sketchViaEach4 is sketchSplit as first written, over each4: the loop
// written out in sketchSplit must give the same bytes.
func sketchViaEach4(text []byte, per4 float64, hashes4 int, format byte) []byte {
	runes := float64(utf8.RuneCount(text))
	tri := make([]uint64, startBits(runes*splitBitsPerTri)/64)
	four := make([]uint64, startBits(runes*per4)/64)
	tmask, fmask := uint64(len(tri)*64-1), uint64(len(four)*64-1)
	each4(text, func(h uint64, is4 bool) {
		set, mask, two := tri, tmask, true
		if is4 {
			set, mask, two = four, fmask, hashes4 == 2
		}
		b1, b2 := h&mask, (h>>32)&mask
		set[b1/64] |= 1 << (b1 % 64)
		if two {
			set[b2/64] |= 1 << (b2 % 64)
		}
	})
	tri = shrink(tri, sketchHashes, splitBitsPerTri)
	four = shrink(four, hashes4, per4)
	var out []byte
	for _, w := range append(tri, four...) {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return append(out, byte(bits.Len(uint(len(tri)*8))-1), format)
}

func TestSketchIsTheSameAsOverEach4(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	pieces := []string{"a", "b", "the ", "é", "日本", "🙂", "\n", string([]byte{Sep}), "\xfe", "\xe2\x82", "x"}
	for i := range 400 {
		var b []byte
		for range r.IntN(1 << (i % 14)) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		if got, want := Sketch(b), sketchViaEach4(b, bitsPer4, 2, formatFour2); !bytes.Equal(got, want) {
			t.Fatalf("text %d (%d bytes): format 4 sketch differs", i, len(b))
		}
		if got, want := sketch3(b), sketchViaEach4(b, 1.5, 1, formatSplit); !bytes.Equal(got, want) {
			t.Fatalf("text %d (%d bytes): format 3 sketch differs", i, len(b))
		}
	}
}

// BenchmarkSketch makes format-4 sketches of journal-like text: the loop
// sketchSplit runs, and the same over each4 as the baseline.
func BenchmarkSketch(b *testing.B) {
	r := rand.New(rand.NewPCG(33, 34))
	words := []string{"func", "return", "err", "nil", "if", "the", "context", "window", "history", "x := ", "fmt.Errorf(", "}\n", "\t", "0x", "日本語"}
	var texts [][]byte
	size := 0
	for range 200 {
		var t []byte
		for range r.IntN(400) {
			t = append(t, words[r.IntN(len(words))]...)
			t = append(t, ' ')
		}
		texts = append(texts, t)
		size += len(t)
	}
	b.Run("loop", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, t := range texts {
				Sketch(t)
			}
		}
	})
	b.Run("each4", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, t := range texts {
				sketchViaEach4(t, bitsPer4, 2, formatFour2)
			}
		}
	})
}

// selectedOf is the set of trigrams the windows of text select, by Each
// and a Winnower: what an index of selected trigrams holds for text.
func selectedOf(text []byte) map[string]bool {
	set := map[string]bool{}
	var w Winnower
	Each(text, func(key uint64, start, end int) {
		if w.Push(key, start, end) {
			_, a, b := w.Min()
			set[string(text[a:b])] = true
		}
	})
	return set
}

// TestSelectedTrigramsOfANeedleAreSelectedInEveryTextHoldingIt is the
// property an index of selected trigrams relies on: whatever text holds
// the needle, it selected each trigram the needle selects.
func TestSelectedTrigramsOfANeedleAreSelectedInEveryTextHoldingIt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for range 300 {
		text := randomText(r, 1+r.IntN(3000))
		if r.IntN(3) == 0 { // separators and invalid bytes inside
			for range 1 + r.IntN(5) {
				text[r.IntN(len(text))] = []byte{Sep, 0x80, 0xC3}[r.IntN(3)]
			}
		}
		have := selectedOf(text)
		for range 30 {
			i := r.IntN(len(text))
			j := min(len(text), i+1+r.IntN(40))
			needle := string(text[i:j])
			if !utf8.ValidString(needle) {
				continue // search refuses such needles
			}
			for _, tr := range Selected(needle) {
				checked++
				if !have[tr] {
					t.Fatalf("needle %q of text %q selects %q, which the text does not", needle, text, tr)
				}
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d selected trigrams checked", checked)
	}
}

func TestSelectedNeedsAWholeWindow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // how many trigrams are selected, at least
	}{
		{"", 0},
		{"abcde", 0},            // three trigrams: no window of four
		{"abcdef", 1},           // four: one window
		{"abc\xffdefgh", 0},     // a separator splits it into runs too short
		{"日本語の文字です", 1},         // runes, not bytes
		{"abcdefghijklmnop", 3}, // 14 trigrams: a few windows, a few picks
	} {
		got := Selected(tc.in)
		if tc.want == 0 && len(got) != 0 || len(got) < tc.want {
			t.Errorf("Selected(%q) = %q, want %d or more", tc.in, got, tc.want)
		}
		for _, tr := range got {
			if !strings.Contains(tc.in, tr) || utf8.RuneCountInString(tr) != 3 {
				t.Errorf("Selected(%q) holds %q, not one of its trigrams", tc.in, tr)
			}
		}
	}
}

// A window selects the trigram of least rank; a run restarts where a
// trigram does not overlap the one before.
func TestWinnowerPicksTheLeastRankAndRestartsRuns(t *testing.T) {
	keys := []uint64{Key('a', 'b', 'c'), Key('b', 'c', 'd'), Key('c', 'd', 'e'), Key('d', 'e', 'f')}
	var w Winnower
	for i, k := range keys {
		if full := w.Push(k, i, i+3); full != (i == 3) {
			t.Fatalf("push %d: full %v", i, full)
		}
	}
	best := keys[0]
	for _, k := range keys[1:] {
		if Rank(k) < Rank(best) {
			best = k
		}
	}
	if k, _, _ := w.Min(); k != best {
		t.Errorf("Min = %x, want %x (least rank)", k, best)
	}
	// A gap: the next trigram starts past the last one's end.
	if w.Push(keys[0], 10, 13) {
		t.Error("a trigram after a gap ended a full window")
	}
}

// TestRankIsABijection: Rank is undone step by step, so two distinct
// trigrams never rank equal (the index's selection relies on it to skip
// ties).
func TestRankIsABijection(t *testing.T) {
	inv := func(c uint64) uint64 { // c * inv(c) = 1 mod 2^64, c odd
		x := c
		for range 6 {
			x *= 2 - c*x
		}
		return x
	}
	unshift := func(x uint64, s uint) uint64 { // undoes x ^= x >> s
		y := x
		for k := s; k < 64; k += s {
			y = x ^ y>>s
		}
		return y
	}
	unrank := func(r uint64) uint64 {
		r = unshift(r, 31)
		r *= inv(0x94d049bb133111eb)
		r = unshift(r, 27)
		r *= inv(0xbf58476d1ce4e5b9)
		return unshift(r, 30)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		k := r.Uint64() >> 1
		if got := unrank(Rank(k)); got != k {
			t.Fatalf("Rank(%#x) undone gives %#x", k, got)
		}
	}
}
