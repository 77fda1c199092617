package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/trigram"
)

// TestResketchBringsEverySketchToTheCurrentFormat: a store holding entries
// without sketches (stored before they existed), with first-format,
// format-2 and format-3 sketches, and with current ones comes out with the current
// sketch of each text; cached chunks are replaced as they were (with or
// without columns), MayHold agrees with the new sketches, rules out texts
// the old ones let through, and a second run has nothing to do.
func TestResketchBringsEverySketchToTheCurrentFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"alpha", "beta", "gamma", "delta", "func", "return", "日本語", "🙂", "err", "nil"}
	var texts []string
	for i := range 2600 {
		if i%89 == 7 {
			texts = append(texts, "")
			continue
		}
		var b strings.Builder
		for j := range 1 + r.IntN(8) {
			fmt.Fprintf(&b, "%s%d ", words[r.IntN(len(words))], r.IntN(40)*(j%3))
		}
		texts = append(texts, b.String())
	}
	st := pushTexts(t, texts)
	searchable := 0
	for _, s := range texts {
		if s != "" {
			searchable++
		}
	}

	old := 0 // sketches Resketch must rewrite
	// Seqs 1-300: stored before sketches existed.
	for seq := uint64(1); seq <= 300; seq++ {
		if texts[seq-1] != "" {
			if err := st.db.Delete(seqKey(tagSketch, seq), nil); err != nil {
				t.Fatal(err)
			}
			old++
		}
	}
	st.sketchFrom.Store(301)
	// Every 7th after: a first-format sketch that passes every needle;
	// every 11th: a format-2 sketch (trigrams only); every 13th: a format-3
	// sketch (4-grams one bit each) whose 4-gram set is random bits, so
	// that reading it as format 4 (two bits each) would answer otherwise.
	for seq := uint64(301); seq <= uint64(len(texts)); seq++ {
		text := texts[seq-1]
		var sk []byte
		switch {
		case text == "":
			continue
		case seq%7 == 0:
			sk = bytes.Repeat([]byte{0xFF}, 64)
		case seq%11 == 0:
			sk = trigram.Sketch([]byte(text))
			t3 := 1 << sk[len(sk)-2]
			sk = append(sk[:t3:t3], 2)
		case seq%13 == 0:
			sk = trigram.Sketch([]byte(text))
			t3 := 1 << sk[len(sk)-2]
			four := make([]byte, 16)
			for k := range four {
				x := r.Uint32()
				four[k] = byte(x) | byte(x>>8) // 3/4 of the bits set
			}
			sk = append(append(sk[:t3:t3], four...), sk[len(sk)-2], 3)
			if f, _ := trigram.Layout(sk); f != 3 {
				t.Fatalf("seq %d: the test's format-3 sketch reads as format %d", seq, f)
			}
		default:
			continue
		}
		if err := st.db.Set(seqKey(tagSketch, seq), sk, nil); err != nil {
			t.Fatal(err)
		}
		old++
	}
	// "func0 func" is in few texts: the sketches of the first format pass
	// it everywhere, the current ones almost nowhere else.
	probe := trigram.NewProbe([]byte("func0 func"))
	all := []SeqRange{{Lo: 1, Hi: uint64(len(texts))}}
	// Before: the chunks' marks read every format as Pass does (seqs 1-300
	// have no sketch at all and are left out).
	mayHoldAgrees(t, st, len(texts), [][]SeqRange{{{301, uint64(len(texts))}}, {{301, 340}, {1020, 1030}, {2040, 2100}}})
	before, _, err := st.MayHold(all, probe)
	if err != nil {
		t.Fatal(err)
	}

	// Chunk 0 cached with its columns, chunk 1 without, chunk 2 not at all.
	for c := uint64(0); c < 3; c++ {
		st.sketches.drop(c)
	}
	ch0, err := st.chunkFor(0)
	if err != nil {
		t.Fatal(err)
	}
	ch0.columns()
	if _, err := st.chunkFor(1); err != nil {
		t.Fatal(err)
	}
	var calls []uint64
	got, err := st.Resketch(context.Background(), func(done, last uint64) {
		if last != uint64(len(texts)) {
			t.Errorf("progress reports last seq %d, want %d", last, len(texts))
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Checked != searchable || got.Rewritten != old {
		t.Errorf("Resketch = %+v, want %d checked and %d rewritten", got, searchable, old)
	}
	if fmt.Sprint(calls) != "[1023 2047 2600]" {
		t.Errorf("progress called with %v, want [1023 2047 2600]", calls)
	}
	for seq := uint64(1); seq <= uint64(len(texts)); seq++ {
		sk, err := st.get(seqKey(tagSketch, seq))
		switch {
		case texts[seq-1] == "":
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("seq %d has no text but a sketch (err %v)", seq, err)
			}
		case err != nil:
			t.Fatalf("seq %d: %v", seq, err)
		case !bytes.Equal(sk, trigram.Sketch([]byte(texts[seq-1]))):
			t.Fatalf("seq %d keeps a sketch that is not the current one of its text", seq)
		}
	}
	if st.sketchFrom.Load() != 1 {
		t.Errorf("sketches start at seq %d after Resketch, want 1", st.sketchFrom.Load())
	}
	if v, err := st.getMeta("sketch_from"); err != nil || fmt.Sprint(v) != "[0 0 0 0 0 0 0 1]" {
		t.Errorf("recorded sketch start = %v (%v), want seq 1", v, err)
	}
	for c, wantCols := range map[uint64]bool{0: true, 1: false} {
		ch, _ := st.sketches.get(c)
		if ch == nil || ch.sliced.Load() != wantCols {
			t.Errorf("chunk %d after Resketch: cached %v, columns %v; want cached, columns %v", c, ch != nil, ch != nil && ch.sliced.Load(), wantCols)
		}
	}
	if ch, _ := st.sketches.get(2); ch != nil {
		t.Error("chunk 2 was not cached before and is after Resketch")
	}
	// The cached chunks hold the new sketches: MayHold agrees with each.
	mayHoldAgrees(t, st, len(texts), [][]SeqRange{all, {{1, 40}, {1020, 1030}, {2040, 2100}}})
	after, _, err := st.MayHold(all, probe)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := Count(after), Count(before); n*4 > m {
		t.Errorf("%q: %d candidates after Resketch, %d before; want under a quarter", "func0 func", n, m)
	}
	for seq, text := range texts {
		if strings.Contains(text, "func0 func") && !holds(after, uint64(seq+1)) {
			t.Errorf("seq %d holds the needle and is no longer a candidate", seq+1)
		}
	}

	again, err := st.Resketch(context.Background(), nil)
	if err != nil || again.Rewritten != 0 || again.Checked != searchable {
		t.Errorf("second Resketch = %+v, %v; want %d checked, none rewritten", again, err, searchable)
	}
}

// TestResketchStopsWhenAsked: a cancelled context stops Resketch before it
// writes anything, with the context's error.
func TestResketchStopsWhenAsked(t *testing.T) {
	st := pushTexts(t, []string{"alpha", "beta"})
	if err := st.db.Delete(seqKey(tagSketch, 1), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := st.Resketch(ctx, nil)
	if !errors.Is(err, context.Canceled) || got.Rewritten != 0 {
		t.Errorf("Resketch on a cancelled context = %+v, %v; want nothing done and context.Canceled", got, err)
	}
	if _, err := st.get(seqKey(tagSketch, 1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a sketch was written after cancellation (err %v)", err)
	}
}

func holds(rs []SeqRange, seq uint64) bool {
	for _, r := range rs {
		if r.Lo <= seq && seq <= r.Hi {
			return true
		}
	}
	return false
}

// TestTextReaderReadsChosenSeqs: a text reader answers each seq asked for
// with its text, stepping, seeking, asking the same seq twice, passing a
// seq without text and leaving its range.
func TestTextReaderReadsChosenSeqs(t *testing.T) {
	texts := []string{"one", "", "three", "four", "", "six", "seven"}
	st := pushTexts(t, texts)
	checkTextReader(t, st, texts, 2, 6, []uint64{3, 4, 4, 6, 2, 5, 3, 1, 7, 6})
}

// checkTextReader asks a reader over [lo, hi] of st, which holds texts
// (seq i+1 holds texts[i], none when empty), for seqs in order: each
// answer must be the seq's own text, or none outside the range.
func checkTextReader(t *testing.T, st *Store, texts []string, lo, hi uint64, seqs []uint64) {
	t.Helper()
	r, err := st.NewTextReader(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, seq := range seqs {
		got, ok, err := r.Text(seq)
		if err != nil {
			t.Fatal(err)
		}
		want, wantOK := texts[seq-1], texts[seq-1] != "" && seq >= lo && seq <= hi
		if ok != wantOK || ok && string(got) != want {
			t.Fatalf("Text(%d) = %q, %v; want %q, %v", seq, got, ok, want, wantOK)
		}
	}
}

// TestTextReaderAnswersEveryOrderOfSeqs asks a reader for random seqs,
// mostly ascending by small steps (as searches read), sometimes back or
// far ahead, over texts with holes: each answer is the seq's own text.
func TestTextReaderAnswersEveryOrderOfSeqs(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	texts := make([]string, 400)
	for i := range texts {
		if r.IntN(3) > 0 {
			texts[i] = fmt.Sprintf("text of seq %d", i+1)
		}
	}
	st := pushTexts(t, texts)
	var seqs []uint64
	seq := uint64(1)
	for range 3000 {
		switch k := r.IntN(10); {
		case k < 7:
			seq += uint64(r.IntN(12)) // 0 to 11 ahead: a step, or a short seek
		case k < 9:
			seq = uint64(1 + r.IntN(len(texts)))
		default:
			seq = uint64(len(texts) - r.IntN(20))
		}
		if seq > uint64(len(texts)) {
			seq = 1
		}
		seqs = append(seqs, seq)
	}
	checkTextReader(t, st, texts, 5, 390, seqs)
}

// TestChunkSizeStaysPutWhenColumnsAreBuilt: the cache counts a chunk's
// size when it takes it and again when it lets it go; building the
// columns and wide rows in between must not change it, or the count
// drifts and the cache's bound stops holding.
func TestChunkSizeStaysPutWhenColumnsAreBuilt(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	var texts []string
	for i := range 300 {
		n := 20
		if i%10 == 0 {
			n = 3000 // a trigram set wide enough for a wide row
		}
		var b strings.Builder
		for range n {
			b.WriteByte(byte('A' + r.IntN(50)))
		}
		texts = append(texts, b.String())
	}
	st := pushTexts(t, texts)
	st.sketches.drop(0)
	ch, err := st.chunkFor(0)
	if err != nil {
		t.Fatal(err)
	}
	before, counted := ch.size(), st.sketches.room()
	ch.columns()
	if ch.size() != before || st.sketches.room() != counted {
		t.Errorf("chunk size %d → %d, cache room %d → %d when the columns were built", before, ch.size(), counted, st.sketches.room())
	}
	if ch.nwide == 0 || len(ch.wide) != ch.nwide {
		t.Errorf("%d entries counted for wide rows, %d built; want the same, more than none", ch.nwide, len(ch.wide))
	}
	st.sketches.drop(0)
	if st.sketches.bytes != 0 {
		t.Errorf("the cache counts %d bytes with no chunk in it", st.sketches.bytes)
	}
}

// TestWarmTextsReadsFromBothEndsUpToItsBudget: texts are read a stretch
// of the oldest, then one of the newest (newest first), towards the
// middle, and the reading stops at the text that reaches the budget; a
// cancelled context stops it with its error.
func TestWarmTextsReadsFromBothEndsUpToItsBudget(t *testing.T) {
	st := pushTexts(t, []string{"0123456789", "", "abcdefghij", "ABCDEFGHIJ", "klmnopqrst", "uvwxyz"})
	defer func(s uint64) { warmStretch = s }(warmStretch)
	warmStretch = 2
	// Seqs 1-2 (one text, 10 bytes), then 6 (6) and 5 (10), then 3-4
	// (10 and 10).
	for _, c := range []struct {
		max   int64
		texts int
		bytes int64
	}{{0, 0, 0}, {1, 1, 10}, {11, 2, 16}, {16, 2, 16}, {17, 3, 26}, {27, 4, 36}, {1 << 20, 5, 46}} {
		n, b, err := st.WarmTexts(context.Background(), c.max)
		if err != nil || n != c.texts || b != c.bytes {
			t.Errorf("WarmTexts(%d) = %d texts, %d bytes, %v; want %d, %d", c.max, n, b, err, c.texts, c.bytes)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := st.WarmTexts(ctx, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("WarmTexts on a cancelled context: %v", err)
	}
}

// TestWarmStretchesAlternateEndsAndCoverEverySeqOnce: the stretches cover
// 1..last exactly once, oldest and newest in turn, meeting in the middle.
func TestWarmStretchesAlternateEndsAndCoverEverySeqOnce(t *testing.T) {
	for _, c := range []struct {
		last, stretch uint64
		want          string
	}{
		{0, 4, ""},
		{1, 4, "1-1"},
		{5, 2, "1-2 4-5n 3-3"},
		{8, 2, "1-2 7-8n 3-4 5-6n"},
		{9, 4, "1-4 6-9n 5-5"},
		{3, 8, "1-3"},
	} {
		var got []string
		warmStretches(c.last, c.stretch, func(lo, hi uint64, newest bool) bool {
			s := fmt.Sprintf("%d-%d", lo, hi)
			if newest {
				s += "n"
			}
			got = append(got, s)
			return true
		})
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("warmStretches(%d, %d) = %q, want %q", c.last, c.stretch, g, c.want)
		}
	}
	n := 0
	warmStretches(100, 3, func(lo, hi uint64, newest bool) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("warmStretches went on after fn returned false (%d calls)", n)
	}
}

// TestResketchEmptiesTheOrderKeyCopiesOfOlderVersions: a store first
// opened by this version records that entries below its next seq may hold
// a copy of their record under the session-order key (older versions
// wrote one); Resketch empties those keys, leaves the session's entries as
// they were, and records that none is left. A new store has none to begin
// with.
func TestResketchEmptiesTheOrderKeyCopiesOfOlderVersions(t *testing.T) {
	var texts []string
	for i := range 2500 {
		texts = append(texts, fmt.Sprintf("text %d", i))
	}
	st := pushTexts(t, texts)
	if got := st.copiesBelow.Load(); got != 1 {
		t.Fatalf("a new store marks copies below seq %d, want 1 (none)", got)
	}
	// As an older version left it: copies under the first 1,500 order
	// keys, and no mark (the next open records one).
	for seq := uint64(1); seq <= 1500; seq++ {
		rec, err := st.get(seqKey(tagEntry, seq))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.db.Set(orderKey("s", seq), rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.db.Delete(append([]byte{tagMeta}, "order_copies_below"...), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.loadSeqMark("order_copies_below", &st.copiesBelow); err != nil { // as Open does
		t.Fatal(err)
	}
	if got := st.copiesBelow.Load(); got != 2501 {
		t.Fatalf("an older store first opened marks copies below seq %d, want 2501", got)
	}
	before, err := st.SessionMetas("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resketch(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 2500; seq++ {
		if v, err := st.get(orderKey("s", seq)); err != nil || len(v) != 0 {
			t.Fatalf("order key of seq %d holds %d bytes after Resketch (%v), want none", seq, len(v), err)
		}
	}
	after, err := st.SessionMetas("s")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2500 || !reflect.DeepEqual(after, before) {
		t.Errorf("the session's entries changed: %d before, %d after", len(before), len(after))
	}
	if v, err := st.getMeta("order_copies_below"); err != nil || fmt.Sprint(v) != "[0 0 0 0 0 0 0 1]" || st.copiesBelow.Load() != 1 {
		t.Errorf("after Resketch the mark is %v (%v), %d in memory; want seq 1", v, err, st.copiesBelow.Load())
	}
}
