package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// headTexts returns n texts over a small alphabet, so that a list of a few
// seqs fills for most trigrams and stays short for some, with some
// multi-byte runes and some entries without text.
func headTexts(r *rand.Rand, n int) []string {
	words := []string{"ab", "abc", "bca", "cab", "xyz", "é", "日本", "🙂", "a b", "q"}
	texts := make([]string, n)
	for i := range texts {
		if r.IntN(6) == 0 {
			continue
		}
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(words[r.IntN(len(words))])
		}
		texts[i] = b.String()
	}
	return texts
}

// walkAll returns every seq w yields, in batches of a few.
func walkAll(w *HeadWalk) []uint64 {
	var seqs []uint64
	for {
		rs := w.Next(nil, 3)
		if len(rs) == 0 {
			return seqs
		}
		for _, r := range rs {
			for s := r.Lo; s <= r.Hi; s++ {
				seqs = append(seqs, s)
			}
		}
	}
}

// checkHeads asks for the walk of needles (substrings of the texts, and
// some held nowhere) from random cursors and checks that it yields, in
// order, every seq after the cursor and up to its bound whose text holds
// the needle (texts[seq-1]), and nothing outside that span.
func checkHeads(t *testing.T, st *Store, texts []string, r *rand.Rand) {
	t.Helper()
	last := st.LastSeq()
	for range 300 {
		var needle string
		if src := texts[r.IntN(len(texts))]; len(src) >= 3 && r.IntN(8) > 0 {
			i := r.IntN(len(src) - 2)
			needle = src[i : i+3+r.IntN(min(5, len(src)-i-2))]
		} else {
			needle = []string{"zzz", "abq", "xyzxyzxyz", "\xff\xfe\xfd"}[r.IntN(4)]
		}
		after := uint64(0)
		if r.IntN(2) == 0 {
			after = uint64(r.IntN(int(last) + 1))
		}
		w, ok := st.Heads([]byte(needle), after, last)
		if !ok {
			t.Fatalf("Heads(%q) = false after WarmHeads", needle)
		}
		got := walkAll(w)
		if w.Bound() > last {
			t.Fatalf("%q: bound %d past the last seq %d", needle, w.Bound(), last)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%q: walk not strictly ascending: %v", needle, got)
		}
		for _, s := range got {
			if s <= after || s > w.Bound() {
				t.Fatalf("%q after %d: walk yields %d, outside (%d, %d]", needle, after, s, after, w.Bound())
			}
		}
		for s := after + 1; s <= w.Bound(); s++ {
			if strings.Contains(texts[s-1], needle) && !slices.Contains(got, s) {
				t.Fatalf("%q after %d: seq %d holds it (%q) but the walk through %d left it out: %v", needle, after, s, texts[s-1], w.Bound(), got)
			}
		}
	}
}

func TestHeadsHoldEveryHitUpToTheirBound(t *testing.T) {
	for _, max := range []int{3, 8, 256} {
		t.Run(fmt.Sprintf("lists of %d", max), func(t *testing.T) {
			defer SetHeadMaxForTest(max)()
			r := rand.New(rand.NewPCG(41, uint64(max)))
			texts := headTexts(r, 300)
			st := pushTexts(t, texts)
			if _, ok := st.Heads([]byte("abc"), 0, st.LastSeq()); ok {
				t.Fatal("Heads answered before WarmHeads built the lists")
			}
			hs, err := st.WarmHeads(context.Background())
			if err != nil || hs.Texts == 0 || hs.Trigrams == 0 || hs.Seqs == 0 {
				t.Fatalf("WarmHeads = %+v, %v", hs, err)
			}
			if max < 256 && hs.Full == 0 {
				t.Fatalf("WarmHeads = %+v: no list filled, so the test does not reach a bound", hs)
			}
			checkHeads(t, st, texts, r)
			// Entries written once the lists are built are listed too.
			more := headTexts(r, 150)
			pushMore(t, st, fmt.Sprintf("e%03d", len(texts)-1), "m%03d", more)
			texts = append(texts, more...)
			checkHeads(t, st, texts, r)
			if _, ok := st.Heads([]byte("ab"), 0, st.LastSeq()); ok {
				t.Fatal("Heads answered for a needle of two bytes, which has no trigram")
			}
		})
	}
}

// TestHeadsListWhatIsWrittenWhileTheyAreBuilt: entries added, and an
// entry rewritten under its seq with a text of other trigrams, between
// WarmHeads's read of the store and its end are listed, the rewritten one
// in order among older seqs (a full list then gives up its last seq).
func TestHeadsListWhatIsWrittenWhileTheyAreBuilt(t *testing.T) {
	defer SetHeadMaxForTest(4)()
	r := rand.New(rand.NewPCG(43, 44))
	texts := headTexts(r, 200)
	st := pushTexts(t, texts)
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	more := headTexts(r, 50)
	afterHeadsScan = func() {
		pushMore(t, st, "e199", "m%03d", more)
		// Entry e002 (seq 3) was pushed; the file now holds other bytes
		// for it, with a text of trigrams no entry had: it keeps its seq.
		e := &journal.Entry{Type: "message", Role: "user", ID: "e002", Line: 3,
			Raw: []byte(`{"id":"e002","v":2}`), Text: "QQQ and abcab", Searchable: true}
		if _, err := st.Apply(&FileBatch{Path: "/x/s.jsonl", Header: h, Entries: []*journal.Entry{e}, State: FileState{Offset: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { afterHeadsScan = nil }()
	if _, err := st.WarmHeads(context.Background()); err != nil {
		t.Fatal(err)
	}
	texts = append(texts, more...)
	texts[2] = "QQQ and abcab"
	if got, err := st.Text(3); err != nil || got != texts[2] {
		t.Fatalf("Text(3) = %q, %v; want the rewritten text", got, err)
	}
	w, ok := st.Heads([]byte("QQQ"), 0, st.LastSeq())
	if got := walkAll(w); !ok || !slices.Equal(got, []uint64{3}) || w.Bound() != st.LastSeq() {
		t.Fatalf("walk of QQQ = %v through %d (%v); want [3] through %d", got, w.Bound(), ok, st.LastSeq())
	}
	checkHeads(t, st, texts, r)
}

// TestHeadsGivenUpMidwayAreNotUsedAndCanBeBuiltAgain: a warm-up stopped
// by its context leaves no lists (searches test the sketches), and the
// next one builds them whole.
func TestHeadsGivenUpMidwayAreNotUsedAndCanBeBuiltAgain(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	texts := headTexts(r, 3000)
	st := pushTexts(t, texts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.WarmHeads(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WarmHeads with its context done = %v; want context.Canceled", err)
	}
	if _, ok := st.Heads([]byte("abc"), 0, st.LastSeq()); ok {
		t.Fatal("Heads answered from lists whose build was given up")
	}
	if hs, err := st.WarmHeads(context.Background()); err != nil || hs.Texts == 0 {
		t.Fatalf("WarmHeads after one given up = %+v, %v", hs, err)
	}
	checkHeads(t, st, texts, r)
}

// TestHeadListsStayOrderedWhenSeqsComeBack: a seq put in a list below its
// last, into a list with room and into a full one, lands in order, once.
func TestHeadListsStayOrderedWhenSeqsComeBack(t *testing.T) {
	h := &heads{limit: 4, full: make([]uint64, 1<<24/64)}
	for _, seq := range []uint64{10, 20, 30} {
		h.add(seq, []byte("abc"))
	}
	h.add(15, []byte("abcabc")) // room left: in order
	h.add(15, []byte("abc"))    // already there
	h.add(5, []byte("abc"))     // full: 30 drops out
	h.add(40, []byte("abc"))    // full, past its last: not listed
	l := h.tri.find(uint32('a')<<16 | uint32('b')<<8 | 'c')
	if got := l.decode(nil); !slices.Equal(got, []uint64{5, 10, 15, 20}) || l.last != 20 {
		t.Fatalf("list = %v (last %d); want [5 10 15 20] (last 20)", got, l.last)
	}
	if h.seqs != 4+1+1+3 { // abc: 4; bca, cab and the 4-grams abca, bcab, cabc: seq 15 alone
		t.Fatalf("seqs counted %d, want 9", h.seqs)
	}
}

// TestGramTableFindsEveryGramAcrossGrowth: a table of 200,000 grams (it
// grows from 65,536 slots to 524,288 on the way) finds each one's list,
// keeps a list marked full as full, and finds nothing for grams it was
// never given.
func TestGramTableFindsEveryGramAcrossGrowth(t *testing.T) {
	var g grams
	r := rand.New(rand.NewPCG(47, 48))
	keys := map[uint32]int{}
	for len(keys) < 200000 {
		k := r.Uint32()
		if _, ok := keys[k]; ok {
			continue
		}
		i, full := g.list(k)
		if full || i != len(keys) {
			t.Fatalf("new gram %#x: list %d (full %v), want %d", k, i, full, len(keys))
		}
		g.lists[i].n = uint16(len(keys) % 1000)
		keys[k] = i
		if len(keys)%7 == 0 {
			g.markFull(k)
		}
	}
	if len(g.slots) != 1<<19 {
		t.Fatalf("%d slots for %d grams, want %d", len(g.slots), len(keys), 1<<19)
	}
	for k, i := range keys {
		if got, full := g.list(k); got != i || full != (i%7 == 6) {
			t.Fatalf("gram %#x: list %d (full %v), want %d (full %v)", k, got, full, i, i%7 == 6)
		}
		if l := g.find(k); l != &g.lists[i] || int(l.n) != i%1000 {
			t.Fatalf("find(%#x) is not list %d", k, i)
		}
	}
	for range 10000 {
		k := r.Uint32()
		if _, given := keys[k]; !given && g.find(k) != nil {
			t.Fatalf("find(%#x) found a list for a gram never given", k)
		}
	}
	if (&grams{}).find(1) != nil {
		t.Fatal("an empty table found a list")
	}
}

// TestHeadsOverTheirBoundAreNotKept: a history whose lists would pass
// Options.HeadsBytes keeps none (searches test the sketches), says so,
// and a bound the lists fit in builds them whole.
func TestHeadsOverTheirBoundAreNotKept(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	texts := headTexts(r, 5000)
	st := pushTexts(t, texts)
	st.headsBytes = 1
	hs, err := st.WarmHeads(context.Background())
	if err != nil || !hs.OverBound || hs.Bytes != 0 {
		t.Fatalf("WarmHeads under a 1-byte bound = %+v, %v; want OverBound, nothing kept", hs, err)
	}
	if _, ok := st.Heads([]byte("abc"), 0, st.LastSeq()); ok {
		t.Fatal("Heads answered from lists over their bound")
	}
	st.headsBytes = 1 << 30
	if hs, err := st.WarmHeads(context.Background()); err != nil || hs.OverBound || hs.Texts != st.countTexts(t) {
		t.Fatalf("WarmHeads under a 1 GB bound = %+v, %v; want every text listed", hs, err)
	}
	checkHeads(t, st, texts, r)
}

// countTexts counts the stored entries that have a text.
func (s *Store) countTexts(t *testing.T) int {
	t.Helper()
	n := 0
	if err := s.ScanTexts(1, s.LastSeq(), false, func(uint64, []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}
