package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/trigram"
)

// filterTexts is a store's worth of texts over three chunks (seqs 1-2,600)
// in which "ZQX9" lies in chunk 1 alone (seqs 1,100 and 1,500), as does
// "🚀" (seq 1,300), and a few needles occur everywhere.
func filterTexts() []string {
	r := rand.New(rand.NewPCG(21, 22))
	words := []string{"alpha", "beta", "gamma", "func", "return", "日本語", "🙂", "err", "nil"}
	texts := make([]string, 2600)
	for i := range texts {
		if i%97 == 5 {
			continue // an entry without text
		}
		var b strings.Builder
		for range 1 + r.IntN(8) {
			fmt.Fprintf(&b, "%s%d ", words[r.IntN(len(words))], r.IntN(40))
		}
		texts[i] = b.String()
	}
	texts[1099] += " ZQX9 here"
	texts[1499] = "and ZQX9 again"
	texts[1299] += " 🚀" // one character, four bytes: no rune trigram, two byte trigrams
	// Words every chunk holds, in an order only chunk 1 does: its
	// trigrams pass every chunk's filter, its runs of 8 bytes only
	// chunk 1's.
	texts[1199] += " " + inOrder
	return texts
}

// inOrder is the needle of filterTexts that only its order makes rare.
const inOrder = "nil39 err38 func37 beta36"

// refsAgree checks that the cache's refs say what its chunks do: refOf of
// each cached chunk, nothing for the others.
func refsAgree(t *testing.T, st *Store) {
	t.Helper()
	c := st.sketches
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range c.refs {
		ch := c.chunks[uint64(k)]
		want := chunkRef{}
		if ch != nil {
			want = refOf(ch)
		}
		if r != want {
			t.Fatalf("chunk %d: ref %+v, want %+v", k, r, want)
		}
	}
	for k := range c.chunks {
		if k >= uint64(len(c.refs)) {
			t.Fatalf("chunk %d is cached but has no ref", k)
		}
	}
}

// mayHoldKeepsEveryMatch checks MayHold over shapes: every seq whose text
// holds the needle is kept, and nothing whose own sketch fails is.
func mayHoldKeepsEveryMatch(t *testing.T, st *Store, texts []string, needle string, shapes [][]SeqRange) [][]SeqRange {
	t.Helper()
	p := trigram.NewProbe([]byte(needle))
	var outs [][]SeqRange
	for _, rg := range shapes {
		got, _, err := st.MayHold(rg, p)
		if err != nil {
			t.Fatal(err)
		}
		kept := map[uint64]bool{}
		for _, x := range got {
			for seq := x.Lo; seq <= x.Hi; seq++ {
				kept[seq] = true
				sk, err := st.get(seqKey(tagSketch, seq))
				if err == nil && !p.Pass(sk) {
					t.Fatalf("needle %q over %v: seq %d kept, but its sketch fails", needle, rg, seq)
				}
			}
		}
		for _, x := range rg {
			for seq := x.Lo; seq <= x.Hi && seq <= uint64(len(texts)); seq++ {
				if seq > 0 && strings.Contains(texts[seq-1], needle) && !kept[seq] {
					t.Fatalf("needle %q over %v: seq %d holds it but was ruled out (got %v)", needle, rg, seq, got)
				}
			}
		}
		outs = append(outs, got)
	}
	return outs
}

// TestChunkFiltersRuleOutChunksAndKeepEveryMatch: once warmed, each chunk's
// filter rules out the chunks whose texts lack a byte trigram of the
// needle, and no entry that holds the needle is lost: across ranges of
// every shape, after appends extend a filtered chunk (the new entries are
// not in its filter), and after a rewrite drops it.
func TestChunkFiltersRuleOutChunksAndKeepEveryMatch(t *testing.T) {
	texts := filterTexts()
	st := pushTexts(t, texts)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	fs, err := st.WarmFilters(context.Background())
	if err != nil || fs.Chunks != 3 || fs.Full {
		t.Fatalf("WarmFilters = %+v, %v; want 3 chunks filtered", fs, err)
	}
	for c := uint64(0); c < 3; c++ {
		ch, _ := st.sketches.get(c)
		if f := ch.filter.Load(); f == nil || f.n != ch.known() {
			t.Fatalf("chunk %d after WarmFilters: filter %v, want one covering its %d entries", c, f != nil, ch.known())
		}
	}
	refsAgree(t, st)
	shapes := [][]SeqRange{{{1, 2600}}, {{1000, 1100}}, {{5, 5}, {1023, 1025}, {1099, 1101}, {2047, 2049}}, {{1500, 1500}}, {{2500, 2700}}}
	needles := []string{"ZQX9", "alpha1", "return3 nil", "日本語0", "🙂", "zzz", "a", "QX9 a", "X9 h", "🚀", "日本", "🙂 ", inOrder, "err38 func37", "alpha12 beta3"}
	for _, nd := range needles {
		mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
	}
	// A rare needle's other chunks are ruled out whole: nothing of
	// chunks 0 and 2 is left, and every sketched entry there is skipped;
	// also for a needle of one character, which has no rune trigram, and
	// for one whose trigrams every chunk holds (by its runs of 8 bytes).
	for i, c := range texts {
		if strings.Contains(c, inOrder) != (i == 1199) {
			t.Fatalf("the test's texts hold %q at seq %d", inOrder, i+1)
		}
	}
	for c := uint64(0); c < 3; c++ {
		ch, _ := st.sketches.get(c)
		if pass := trigram.NewProbe([]byte(inOrder)).PassFilter(&ch.filter.Load().bits); pass != (c == 1) {
			t.Errorf("chunk %d's filter: %q passes %v, want %v (only chunk 1 holds it)", c, inOrder, pass, c == 1)
		}
	}
	for _, nd := range []string{"ZQX9", "🚀", inOrder} {
		got, skipped, err := st.MayHold([]SeqRange{{1, 2600}}, trigram.NewProbe([]byte(nd)))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range got {
			if x.Lo < sketchChunk || x.Hi >= 2*sketchChunk {
				t.Errorf("%s over the whole store kept %v, outside chunk 1, which alone holds it", nd, x)
			}
		}
		c0, _ := st.sketches.get(0)
		c2, _ := st.sketches.get(2)
		if least := c0.sketched(0, sketchChunk-1) + c2.sketched(0, sketchChunk-1); skipped < least {
			t.Errorf("%s skipped %d entries, fewer than the %d sketched entries of chunks 0 and 2", nd, skipped, least)
		}
	}

	// Appends to the last chunk: its extension keeps the filter for the
	// entries it had, and the new ones, which hold the needle, are found.
	before, _ := st.sketches.get(2)
	var late []string
	for i := range 30 {
		late = append(late, fmt.Sprintf("late entry %d with ZQX9 and Wq7", i))
	}
	pushMore(t, st, fmt.Sprintf("e%03d", len(texts)-1), "x%03d", late)
	texts = append(texts, late...)
	after, _ := st.sketches.get(2)
	if after == nil || after == before || after.filter.Load() != before.filter.Load() {
		t.Fatalf("after appending, chunk 2 was not extended with its filter (cached %v, extended %v)", after != nil, after != before)
	}
	if f := after.filter.Load(); f.n >= after.known() {
		t.Fatalf("the extended chunk's filter claims %d entries, but the appended ones end at %d", f.n, after.known())
	}
	refsAgree(t, st)
	for _, nd := range []string{"ZQX9", "Wq7", "late entry 29"} {
		mayHoldKeepsEveryMatch(t, st, texts, nd, append(shapes, []SeqRange{{2000, uint64(len(texts))}}))
	}

	// A rewrite of a stored seq drops the chunk and its filter; a reload
	// has none until the next WarmFilters, and nothing is lost meanwhile.
	st.sketches.drop(1)
	refsAgree(t, st)
	if ch, err := st.chunkFor(1); err != nil || ch.filter.Load() != nil {
		t.Fatalf("a reloaded chunk has a filter (%v)", err)
	}
	refsAgree(t, st)
	mayHoldKeepsEveryMatch(t, st, texts, "ZQX9", shapes)
	mayHoldKeepsEveryMatch(t, st, texts, inOrder, shapes)
	if _, err := st.WarmFilters(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch, _ := st.sketches.get(1); ch == nil || ch.filter.Load() == nil {
		t.Fatal("after WarmFilters the reloaded chunk 1 has no filter")
	}
	refsAgree(t, st)
	mayHoldKeepsEveryMatch(t, st, texts, "ZQX9", shapes)
	mayHoldKeepsEveryMatch(t, st, texts, inOrder, shapes)
}

// TestFiltersAreCountedInTheCache: a filter's bytes (and its group's run
// index) are counted while its chunk is cached, carried by an extension,
// and gone with the chunk; a cache without room for one more filter
// builds none.
func TestFiltersAreCountedInTheCache(t *testing.T) {
	texts := filterTexts()
	st := pushTexts(t, texts)
	st.sketches = newSketchCache(DefaultSketchCacheBytes)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	bare := st.sketches.bytes
	if _, err := st.WarmFilters(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := st.sketches.bytes, bare+3*filterBytes+runIndexBytes; got != want {
		t.Fatalf("with 3 filters and their group's run index the cache counts %d bytes, want %d", got, want)
	}
	for c := uint64(0); c < 3; c++ {
		st.sketches.drop(c)
	}
	if got := st.sketches.bytes; got != 0 {
		t.Fatalf("with every chunk dropped the cache counts %d bytes, want 0", got)
	}
	// Room for the sketches but not for a filter too.
	st.sketches = newSketchCache(DefaultSketchCacheBytes)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.sketches.max = st.sketches.bytes + filterBytes/2
	fs, err := st.WarmFilters(context.Background())
	if err != nil || fs.Chunks != 0 || !fs.Full {
		t.Fatalf("WarmFilters without room = %+v, %v; want none built, the bound reached", fs, err)
	}
}

// TestFullChunksMetAfterTheWarmUpGetFilters: once WarmFilters has run, a
// full chunk that a search meets without a filter (filled by later
// appends, or reloaded after a drop) gets one in the background, and the
// answers stay whole meanwhile and after; a chunk still filling gets none.
func TestFullChunksMetAfterTheWarmUpGetFilters(t *testing.T) {
	texts := filterTexts()
	st := pushTexts(t, texts)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WarmFilters(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Fill chunk 2 (seqs 2,048-3,071) and start chunk 3.
	var later []string
	for i := len(texts); i < 3*sketchChunk+100; i++ {
		text := fmt.Sprintf("later entry %d beta%d", i, i%40)
		if i == 3000 {
			text += " Kv8P"
		}
		later = append(later, text)
	}
	pushMore(t, st, fmt.Sprintf("e%03d", len(texts)-1), "y%04d", later)
	texts = append(texts, later...)
	st.sketches.drop(1) // as a rewrite would
	shapes := [][]SeqRange{{{1, uint64(len(texts))}}, {{2040, 2060}, {3000, 3000}}, {{3070, 3080}}}
	for _, nd := range []string{"Kv8P", "ZQX9", "later entry 30", "🚀"} {
		mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c1, _ := st.sketches.get(1)
		c2, _ := st.sketches.get(2)
		if c1 != nil && c1.filter.Load() != nil && c2 != nil && c2.filter.Load() != nil && c2.filter.Load().n == sketchChunk {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reloaded chunk 1 and the filled chunk 2 got no filter of their own within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c3, _ := st.sketches.get(3); c3 == nil || c3.filter.Load() != nil {
		t.Errorf("chunk 3, still filling, got a filter (cached %v)", c3 != nil)
	}
	for _, nd := range []string{"Kv8P", "ZQX9", "later entry 30", "🚀"} {
		mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
	}
	got, _, err := st.MayHold([]SeqRange{{2 * sketchChunk, 3*sketchChunk - 1}}, trigram.NewProbe([]byte("ZQX9")))
	if err != nil || len(got) != 0 {
		t.Errorf("ZQX9 over chunk 2, whose new filter lacks it, kept %v (%v)", got, err)
	}
}

// TestAStoreEmptyAtTheWarmUpStillGetsFilters: a server started on an
// empty store builds the filters of the chunks a live writer fills later;
// Close stops the builds.
func TestAStoreEmptyAtTheWarmUpStillGetsFilters(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Filtered() {
		t.Fatal("a store that was never warmed says it has filters")
	}
	if fs, err := st.WarmFilters(context.Background()); err != nil || fs.Chunks != 0 || !st.Filtered() {
		t.Fatalf("WarmFilters on an empty store = %+v, %v, filtered %v; want no chunk, and builds started", fs, err, st.Filtered())
	}
	var texts []string
	for i := range sketchChunk + 50 {
		texts = append(texts, fmt.Sprintf("entry %d", i))
	}
	pushMore(t, st, "", "e%04d", texts)
	mayHoldKeepsEveryMatch(t, st, texts, "entry 7", [][]SeqRange{{{1, uint64(len(texts))}}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ch, _ := st.sketches.get(0); ch != nil && ch.filter.Load() != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the chunk filled after the warm-up got no filter within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mayHoldKeepsEveryMatch(t, st, texts, "entry 7", [][]SeqRange{{{1, uint64(len(texts))}}})
	st.builds.stop()
	if st.Filtered() {
		t.Error("after the builds stopped the store still says it has filters")
	}
	st.builds.start(st)
	if st.Filtered() {
		t.Error("builds started again after they were stopped")
	}
}

// TestKeptFiltersAreReusedOnlyWhileTheirTextsHold: a full chunk's filter
// is kept in the store and read back at the next start instead of being
// built; one whose texts changed behind the store's back (another
// version's write) or whose record is damaged is built again, and no
// entry that holds a needle is lost to a stale filter.
func TestKeptFiltersAreReusedOnlyWhileTheirTextsHold(t *testing.T) {
	texts := filterTexts()
	st := pushTexts(t, texts)
	warm := func(st *Store) FilterStats {
		t.Helper()
		if _, err := st.WarmSketches(context.Background()); err != nil {
			t.Fatal(err)
		}
		fs, err := st.WarmFilters(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if fs := warm(st); fs.Chunks != 3 || fs.Loaded != 0 {
		t.Fatalf("first WarmFilters = %+v; want 3 chunks built, none loaded", fs)
	}
	for c, want := range []bool{true, true, false} { // chunk 2 is still filling
		if _, err := st.get(seqKey(tagFilter, uint64(c))); (err == nil) != want {
			t.Errorf("chunk %d: filter kept = %v, want %v", c, err == nil, want)
		}
	}
	built, _ := st.sketches.get(0)
	builtBits := built.filter.Load().bits

	st = reopenStore(t, st)
	if fs := warm(st); fs.Chunks != 3 || fs.Loaded != 2 {
		t.Fatalf("WarmFilters after a restart = %+v; want 3 chunks, the 2 full ones loaded", fs)
	}
	if ch, _ := st.sketches.get(0); ch.filter.Load().bits != builtBits {
		t.Fatal("chunk 0's loaded filter differs from the one built")
	}
	shapes := [][]SeqRange{{{1, 2600}}, {{5, 5}, {1023, 1025}}}
	for _, nd := range []string{"ZQX9", "alpha1", "🚀", "a"} {
		mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
	}

	// Seq 5 (chunk 0, which held no "ZQX9") gets a text that holds it,
	// with its sketch, and chunk 1's record is cut short. The old filter
	// of chunk 0 would rule seq 5 out.
	changed := "now ZQX9 lives in chunk 0"
	texts[4] = changed
	for _, kv := range []struct {
		key []byte
		val []byte
	}{{seqKey(tagText, 5), []byte(changed)}, {seqKey(tagSketch, 5), trigram.Sketch([]byte(changed))}} {
		if err := st.db.Set(kv.key, kv.val, nil); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := st.get(seqKey(tagFilter, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.db.Set(seqKey(tagFilter, 1), rec[:len(rec)/2], nil); err != nil {
		t.Fatal(err)
	}
	st = reopenStore(t, st)
	if fs := warm(st); fs.Chunks != 3 || fs.Loaded != 0 {
		t.Fatalf("WarmFilters after the texts changed = %+v; want 3 chunks built, none loaded", fs)
	}
	for _, nd := range []string{"ZQX9", "lives in", "alpha1"} {
		mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
	}
	// What was built again is kept again.
	st = reopenStore(t, st)
	if fs := warm(st); fs.Loaded != 2 {
		t.Fatalf("WarmFilters after the rebuild = %+v; want the 2 full chunks loaded", fs)
	}
	mayHoldKeepsEveryMatch(t, st, texts, "ZQX9", shapes)
}
