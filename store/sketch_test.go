package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/trigram"
)

// pushTexts stores one session whose entries have the given texts ("" for
// an entry with no searchable text) and returns the store.
func pushTexts(t *testing.T, texts []string) *Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pushMore(t, st, "", "e%03d", texts)
	return st
}

// reopenStore closes st and opens its directory again, as a restart
// would, closing the new store when the test ends.
func reopenStore(t *testing.T, st *Store) *Store {
	t.Helper()
	dir := st.Dir()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	next, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Close() })
	return next
}

// pushMore appends texts to session "s" of st, one user message each
// ("" for an entry without text), chained after entry parent ("" for
// none), with ids from the format id (given the index in texts); it
// returns the last id.
func pushMore(t *testing.T, st *Store, parent, id string, texts []string) string {
	t.Helper()
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	var es []*journal.Entry
	for i, text := range texts {
		eid := fmt.Sprintf(id, i)
		es = append(es, &journal.Entry{Type: "message", Role: "user", ID: eid, ParentID: parent,
			Raw: []byte(`{"id":"` + eid + `"}`), Text: text, Searchable: text != ""})
		parent = eid
	}
	if _, err := st.Push("s", h, es); err != nil {
		t.Fatal(err)
	}
	return parent
}

func TestMayHoldKeepsOnlyEntriesWhoseSketchPasses(t *testing.T) {
	st := pushTexts(t, []string{
		"the quick brown fox", // 1
		"",                    // 2: no text, never a candidate
		"lazy dogs sleep",     // 3
		"a quick brown hare",  // 4
		"quick brown",         // 5
	})
	probe := trigram.NewProbe([]byte("quick brown"))
	got, skipped, err := st.MayHold([]SeqRange{{1, 5}}, probe)
	if err != nil {
		t.Fatal(err)
	}
	want := []SeqRange{{1, 1}, {4, 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) || skipped != 1 {
		t.Errorf("MayHold = %v skipping %d, want %v skipping 1", got, skipped, want)
	}
	// Ranges are honoured: nothing outside them comes back.
	got, _, _ = st.MayHold([]SeqRange{{2, 3}, {5, 5}}, probe)
	if fmt.Sprint(got) != fmt.Sprint([]SeqRange{{5, 5}}) {
		t.Errorf("MayHold over [2,3],[5,5] = %v, want [{5 5}]", got)
	}
}

// TestMayHoldKeepsEntriesStoredBeforeSketches: a store written by an older
// binary has no sketches below the recorded start; those entries must be
// read, never skipped.
func TestMayHoldKeepsEntriesStoredBeforeSketches(t *testing.T) {
	st := pushTexts(t, []string{"alpha", "beta", "gamma", "delta"})
	for seq := uint64(1); seq <= 2; seq++ {
		if err := st.db.Delete(seqKey(tagSketch, seq), nil); err != nil {
			t.Fatal(err)
		}
	}
	st.sketchFrom.Store(3)
	got, _, err := st.MayHold([]SeqRange{{1, 4}}, trigram.NewProbe([]byte("delta")))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]SeqRange{{1, 2}, {4, 4}}) {
		t.Errorf("MayHold = %v, want the unsketched [1,2] and the passing 4", got)
	}
}

func TestSketchStartIsRecordedOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.sketchFrom.Load() != 1 {
		t.Errorf("a new store sketches from seq %d, want 1", st.sketchFrom.Load())
	}
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{}`)}
	if _, err := st.Push("s", h, []*journal.Entry{{Type: "message", ID: "a", Raw: []byte(`{}`), Text: "hello", Searchable: true}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.sketchFrom.Load() != 1 {
		t.Errorf("after reopening, sketches start at %d, want 1", st.sketchFrom.Load())
	}
}

func TestDroppedSessionLeavesNoSketches(t *testing.T) {
	st := pushTexts(t, []string{"one two three", "four five six"})
	if _, err := st.DropSession("s"); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.MayHold([]SeqRange{{1, 2}}, trigram.NewProbe(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("after dropping the session MayHold = %v, want nothing", got)
	}
}

// TestCachedSketchesFollowEveryCommit: a chunk of sketches held in memory
// is dropped by each write that touches it, so an entry appended, or a
// session dropped, is seen by the very next MayHold.
func TestCachedSketchesFollowEveryCommit(t *testing.T) {
	st := pushTexts(t, []string{"first entry", "second entry"})
	probe := trigram.NewProbe([]byte("third"))
	got, _, _ := st.MayHold([]SeqRange{{1, 10}}, probe) // loads and caches the chunk
	if len(got) != 0 {
		t.Fatalf("before the append MayHold = %v, want nothing", got)
	}
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	if _, err := st.Push("s", h, []*journal.Entry{{Type: "message", Role: "user", ID: "e002", ParentID: "e001",
		Raw: []byte(`{"id":"e002"}`), Text: "the third entry", Searchable: true}}); err != nil {
		t.Fatal(err)
	}
	got, _, _ = st.MayHold([]SeqRange{{1, 10}}, probe)
	if fmt.Sprint(got) != fmt.Sprint([]SeqRange{{3, 3}}) {
		t.Fatalf("after the append MayHold = %v, want [{3 3}]", got)
	}
	if _, err := st.DropSession("s"); err != nil {
		t.Fatal(err)
	}
	got, _, _ = st.MayHold([]SeqRange{{1, 10}}, probe)
	if len(got) != 0 {
		t.Fatalf("after dropping the session MayHold = %v, want nothing", got)
	}
}

// TestAppendsExtendTheCachedChunk: a batch of new entries is appended to
// the cached chunk (sketches and records) instead of dropping it, and the
// result is exactly what
// loading the chunk from Pebble gives, across a chunk boundary, with
// entries without text and an entry rewritten in place (which drops it).
func TestAppendsExtendTheCachedChunk(t *testing.T) {
	st := pushTexts(t, []string{"seed entry"})
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	rng := rand.New(rand.NewPCG(7, 9))
	n, parent := 1, "e000"
	extended := 0
	for n < sketchChunk+200 {
		var es []*journal.Entry
		for range 1 + rng.IntN(40) {
			id := fmt.Sprintf("e%04d", n)
			text := ""
			if rng.IntN(4) > 0 {
				text = fmt.Sprintf("entry %d says %x", n, rng.Uint64())
			}
			es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, ParentID: parent,
				Raw: []byte(`{"id":"` + id + `"}`), Text: text, Searchable: text != ""})
			parent = id
			n++
		}
		last := st.LastSeq()
		if _, _, err := st.MayHold([]SeqRange{{1, last}}, trigram.NewProbe([]byte("says"))); err != nil {
			t.Fatal(err) // caches every chunk so far
		}
		before, _ := st.sketches.get(last / sketchChunk)
		if _, err := st.Push("s", h, es); err != nil {
			t.Fatal(err)
		}
		for c := uint64(0); c <= st.LastSeq()/sketchChunk; c++ {
			got, _ := st.sketches.get(c)
			if got == nil {
				continue
			}
			if c == last/sketchChunk && got != before {
				extended++
			}
			want, err := st.loadChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			for i := range sketchChunk {
				g, w := got.data[got.off[i]:got.off[i+1]], want.data[want.off[i]:want.off[i+1]]
				if !bytes.Equal(g, w) {
					t.Fatalf("after %d entries, chunk %d slot %d holds %x, Pebble %x", n, c, i, g, w)
				}
				if g, w := got.record(uint64(i)), want.record(uint64(i)); !bytes.Equal(g, w) {
					t.Fatalf("after %d entries, chunk %d slot %d holds the record %x, Pebble %x", n, c, i, g, w)
				}
			}
			if got.has != want.has || got.open != want.open {
				t.Fatalf("after %d entries, chunk %d marks differ from a reload", n, c)
			}
		}
	}
	if extended == 0 {
		t.Fatal("no batch extended the cached chunk: every append dropped it")
	}
	// An entry rewritten in place (here: a pushed entry found again with
	// new flags is the same seq) must not be appended: the chunk is dropped.
	last := st.LastSeq()
	st.MayHold([]SeqRange{{1, last}}, trigram.NewProbe([]byte("says")))
	st.fresh = append(st.fresh[:0], freshSketch{seq: last, sketch: trigram.Sketch([]byte("other"))})
	st.wmu.Lock()
	st.notify(0)
	st.wmu.Unlock()
	if ch, _ := st.sketches.get(last / sketchChunk); ch != nil {
		t.Error("a batch that rewrote a seq the cached chunk holds extended it instead of dropping it")
	}
}

// TestSketchCacheKeepsTheNewestChunksAtItsBound: at its bound the cache
// keeps the newest chunks; an older chunk loaded on demand is used once,
// so a scan that loads every chunk in order, again and again, leaves the
// same chunks cached instead of each load pushing out the next one it
// needs.
func TestSketchCacheKeepsTheNewestChunksAtItsBound(t *testing.T) {
	size := (&chunkSketches{data: make([]byte, 1000)}).size()
	c := newSketchCache(3 * size)
	cached := func() []uint64 { return slices.Sorted(maps.Keys(c.chunks)) }
	for i := range uint64(10) {
		c.put(i, &chunkSketches{data: make([]byte, 1000)}, 0)
		if c.bytes > c.max {
			t.Fatalf("after chunk %d the cache holds %d bytes, over its bound of %d", i, c.bytes, c.max)
		}
	}
	if got := fmt.Sprint(cached()); got != "[7 8 9]" {
		t.Fatalf("after chunks 0-9 the cache holds %s, want [7 8 9]", got)
	}
	for scan := range 3 {
		loads := 0
		for i := range uint64(10) {
			if ch, gen := c.get(i); ch == nil {
				loads++
				c.put(i, &chunkSketches{data: make([]byte, 1000)}, gen)
			}
		}
		if got := fmt.Sprint(cached()); got != "[7 8 9]" || loads != 7 {
			t.Fatalf("scan %d over chunks 0-9 loaded %d chunks and left %s cached; want 7 loads (0-6) and [7 8 9]", scan, loads, got)
		}
	}
	// A newer chunk (a live writer's) takes the place of the oldest.
	c.put(10, &chunkSketches{data: make([]byte, 1000)}, 0)
	if got := fmt.Sprint(cached()); got != "[8 9 10]" {
		t.Errorf("after chunk 10 the cache holds %s, want [8 9 10]", got)
	}
	// A load that raced with a write is not kept.
	_, gen := c.get(42)
	c.drop(42)
	c.put(42, &chunkSketches{}, gen)
	if c.chunks[42] != nil {
		t.Error("a chunk loaded before a write to it was kept")
	}
}

// TestSketchCacheKnowsItsOldestChunk: through puts, drops and extensions
// in any order, oldest is the lowest chunk number cached.
func TestSketchCacheKnowsItsOldestChunk(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := newSketchCache(1 << 30)
	for step := range 5000 {
		k := r.Uint64N(40)
		switch r.IntN(3) {
		case 0:
			_, gen := c.get(k)
			c.put(k, &chunkSketches{}, gen)
		case 1:
			c.drop(k)
		case 2:
			c.extend(k, []freshSketch{{seq: k*sketchChunk + sketchChunk - 1, meta: []byte("m")}})
		}
		if len(c.chunks) == 0 {
			continue
		}
		if got, want := c.oldest(), slices.Min(slices.Collect(maps.Keys(c.chunks))); got != want {
			t.Fatalf("step %d: oldest = %d, want %d", step, got, want)
		}
	}
}

func TestCompactKeepsEveryEntry(t *testing.T) {
	var texts []string
	for i := range 500 {
		texts = append(texts, fmt.Sprintf("entry %d with some text to compress %d", i, i*7))
	}
	st := pushTexts(t, texts)
	if err := st.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, want := range texts {
		got, err := st.Text(uint64(i + 1))
		if err != nil || got != want {
			t.Fatalf("after compacting, seq %d reads %q (%v), want %q", i+1, got, err, want)
		}
	}
	got, _, err := st.MayHold([]SeqRange{{1, 500}}, trigram.NewProbe([]byte("entry 250 with")))
	if err != nil || len(got) == 0 || got[0].Lo > 251 || got[len(got)-1].Hi < 251 {
		t.Fatalf("after compacting, MayHold = %v (%v), want it to include 251", got, err)
	}
}

// TestMayHoldAgreesWithEachSketch: the bit-sliced test over chunks gives
// exactly the entries whose own sketch passes, across chunk boundaries,
// ranges of every shape, small and large sketches, and sketches of the
// older formats (one bit; trigrams only) mixed in.
func TestMayHoldAgreesWithEachSketch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "func", "return", "日本語", "🙂", "err", "nil"}
	var texts []string
	for i := range 2600 {
		if i%97 == 5 {
			texts = append(texts, "")
			continue
		}
		n := 1 + r.IntN(8)
		if i%50 == 0 {
			n = 400 // a large sketch, folded into its row
		}
		texts = append(texts, wordsText(r, words, n, i%50 == 0))
	}
	st := pushTexts(t, texts)
	// Some entries carry a sketch of the first format (one bit per
	// trigram, no format byte), as a store written by an older binary.
	for seq := uint64(7); seq <= uint64(len(texts)); seq += 131 {
		if texts[seq-1] == "" {
			continue
		}
		// Every bit set: it passes every needle; what matters is that
		// the rows, which cannot stand for it, do not rule it out.
		sk := bytes.Repeat([]byte{0xFF}, 64)
		if err := st.db.Set(seqKey(tagSketch, seq), sk, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Others carry a format-2 sketch (trigrams only, as stores written
	// before 4-grams hold): a format-3 sketch's trigram set is one.
	for seq := uint64(50); seq <= uint64(len(texts)); seq += 97 {
		if texts[seq-1] == "" {
			continue
		}
		sk := trigram.Sketch([]byte(texts[seq-1]))
		t3 := 1 << sk[len(sk)-2]
		if err := st.db.Set(seqKey(tagSketch, seq), append(sk[:t3:t3], 2), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Short stretches are tested entry by entry until their chunk has its
	// columns, and on the columns after: the first pass never tests a long
	// stretch (nothing builds columns), the second starts with one.
	// Stretches alone in their chunk, of up to aloneMax entries, are
	// tested entry by entry even once it has columns; one entry longer,
	// on the columns.
	short := [][]SeqRange{{{1000, 1100}}, {{5, 5}, {63, 65}, {1023, 1025}, {2047, 2049}}, {{2500, 2700}},
		{{10, 12}, {1500, 1500 + aloneMax - 1}, {2300, 2300}}, {{1200, 1200 + aloneMax}}}
	for _, sliced := range []bool{false, true} {
		st.sketches.drop(0)
		st.sketches.drop(1)
		st.sketches.drop(2)
		shapes := short
		if sliced {
			shapes = append([][]SeqRange{{{1, 2600}}}, short...)
		}
		t.Run(fmt.Sprintf("columns=%v", sliced), func(t *testing.T) {
			mayHoldAgrees(t, st, len(texts), shapes)
			for c := uint64(0); c < 3; c++ {
				if ch, _ := st.sketches.get(c); ch == nil || ch.sliced.Load() != sliced {
					t.Errorf("chunk %d: columns built = %v, want %v", c, ch != nil && ch.sliced.Load(), sliced)
				} else if sliced && len(ch.wide) == 0 {
					t.Errorf("chunk %d has no wide rows: the test does not reach them", c)
				}
			}
		})
	}
	// Warmed chunks share slabs of columns (see colView): alone, or mixed
	// with a chunk that had built its own columns before the warm-up.
	for _, own := range []int{-1, 1} {
		t.Run(fmt.Sprintf("slabs,own=%d", own), func(t *testing.T) {
			defer func(n uint64) { slabChunks = n }(slabChunks)
			slabChunks = 2
			for c := uint64(0); c < 3; c++ {
				st.sketches.drop(c)
			}
			if own >= 0 {
				ch, err := st.chunkFor(uint64(own))
				if err != nil {
					t.Fatal(err)
				}
				ch.columns()
			}
			if _, err := st.WarmSketches(context.Background()); err != nil {
				t.Fatal(err)
			}
			for c := uint64(0); c < 2; c++ {
				ch, _ := st.sketches.get(c)
				want, inSlab := 2*sketchChunk/64, true // in the slab of chunks 0 and 1
				if own >= 0 {
					// The other one alone in a slab; this one keeps its own.
					want, inSlab = sketchChunk/64, int(c) != own
				}
				if ch == nil || ch.cols.stride != want || (ch.owner != nil) != inSlab {
					t.Fatalf("chunk %d after warming: cached %v, want its columns %d words apart, in a slab %v", c, ch != nil, want, inSlab)
				}
				// Its columns read as those it would build alone.
				alone, err := st.loadChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				alone.columns()
				for q := range uint16(trigram.SliceBits) {
					for k := range sketchChunk / 64 {
						if got, want := ch.cols.word(q, k), alone.cols.word(q, k); got != want {
							t.Fatalf("chunk %d, column %d, word %d: %x in the slab, %x alone", c, q, k, got, want)
						}
					}
				}
				if len(alone.wideMask) == 0 || len(ch.wideMask) != len(alone.wideMask) {
					t.Fatalf("chunk %d: %d words of wide rows, %d alone; want the same, more than 0", c, len(ch.wideMask), len(alone.wideMask))
				}
				for q := range uint16(wideCols) {
					for k := range alone.wideMask {
						if got, want := ch.wideCols.word(q, k), alone.wideCols.word(q, k); got != want {
							t.Fatalf("chunk %d, wide column %d, word %d: %x in the slab, %x alone", c, q, k, got, want)
						}
					}
				}
			}
			mayHoldAgrees(t, st, len(texts), append([][]SeqRange{{{1, 2600}}, {{700, 1800}}}, short...))
		})
	}
	// Every call split in two halves tested at once, the cut anywhere.
	t.Run("split", func(t *testing.T) {
		defer func(m uint64) { holdSplitMin = m }(holdSplitMin)
		holdSplitMin = 1
		mayHoldAgrees(t, st, len(texts), append(short, []SeqRange{{1, 2600}}, []SeqRange{{1, 1}, {3, 3}}, []SeqRange{{60, 70}, {100, 1500}}))
	})
}

// TestMayHoldOnPartsOfChunksWithManyWideRows: a stretch over part of a
// chunk with columns tests only the words of wide rows that hold its
// entries (see widePass); with a third of the entries wide, those are
// several words, and a stretch may start or end anywhere in one.
func TestMayHoldOnPartsOfChunksWithManyWideRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	words := []string{"alpha", "beta", "gamma", "func", "return", "日本語", "err", "nil"}
	var texts []string
	for i := range 1200 {
		texts = append(texts, wordsText(r, words, 1+r.IntN(6), i%3 == 0))
	}
	st := pushTexts(t, texts)
	st.sketches.drop(0)
	st.sketches.drop(1)
	shapes := [][]SeqRange{{{1, 1200}}, // builds the columns first
		{{1, 10}}, {{100, 140}}, {{190, 200}}, {{191, 192}}, {{380, 420}}, {{700, 1023}}, {{1000, 1030}}, {{1024, 1024}},
		{{3, 3}, {500, 505}, {1100, 1190}}, {{129, 400}}, {{300, 600}}, {{600, 1100}}}
	mayHoldAgrees(t, st, len(texts), shapes)
	ch, _ := st.sketches.get(0)
	if ch == nil || !ch.sliced.Load() || len(ch.wideMask) < 4 {
		t.Fatalf("chunk 0 should have columns and at least 4 words of wide rows: %v", ch != nil && ch.sliced.Load())
	}
	// Where each stretch starts and ends in wide matters only at the
	// words' edges: every entry's count, and stretches around each edge,
	// against the whole chunk's answer.
	n := 0
	for i := range uint64(sketchChunk + 1) {
		if got := ch.wideBefore(i); got != n {
			t.Fatalf("wideBefore(%d) = %d, want %d", i, got, n)
		}
		if i < sketchChunk && ch.wideAt[i/64]&(1<<(i%64)) != 0 {
			n++
		}
	}
	for _, needle := range []string{"alpha1", "ABCD", "nil0 gamma"} {
		p := trigram.NewProbe([]byte(needle))
		pos2, pos4 := p.WidePositions(), p.WideFourPositions()
		whole := ch.widePass(pos2, pos4, 0, sketchChunk-1, ^uint16(0))
		for k := 0; 64*k < len(ch.wide); k++ {
			e := uint64(ch.wide[64*k])
			for _, lo := range []uint64{max(e, 2) - 2, max(e, 1) - 1, e, e + 1} {
				for _, hi := range []uint64{max(e, 1) - 1, e, e + 1, e + 70} {
					if lo > hi || hi >= sketchChunk {
						continue
					}
					got := ch.widePass(pos2, pos4, lo, hi, ^uint16(0))
					for i := lo; i <= hi; i++ {
						if g, w := got[i/64]&(1<<(i%64)) != 0, whole[i/64]&(1<<(i%64)) != 0; g != w {
							t.Fatalf("needle %q, stretch %d-%d: entry %d passes %v, %v over the whole chunk", needle, lo, hi, i, g, w)
						}
					}
				}
			}
		}
		// Words a run index ruled out may be left untested; every
		// entry of the others is tested as over the whole chunk.
		for _, live := range []uint16{0, 1, 0x8000, 0x0101, 0x7FFE, 0xA5A5, 0xFFFF} {
			got := ch.widePass(pos2, pos4, 0, sketchChunk-1, live)
			for i := range uint64(sketchChunk) {
				if live&(1<<(i/64)) == 0 {
					continue
				}
				if g, w := got[i/64]&(1<<(i%64)) != 0, whole[i/64]&(1<<(i%64)) != 0; g != w {
					t.Fatalf("needle %q, live words %016b: entry %d passes %v, %v with every word live", needle, live, i, g, w)
				}
			}
		}
	}
}

// wordsText returns n of words, each with a number, and with wide 1,500
// random letters after them: a trigram set wide enough for a wide row
// (trigram.WideRow).
func wordsText(r *rand.Rand, words []string, n int, wide bool) string {
	var b strings.Builder
	for j := range n {
		fmt.Fprintf(&b, "%s%d ", words[r.IntN(len(words))], r.IntN(40)*(j%3))
	}
	if wide {
		for range 1500 {
			b.WriteByte(byte('A' + r.IntN(40)))
		}
	}
	return b.String()
}

// mayHoldAgrees checks MayHold over each of shapes against each entry's own
// sketch, for a set of needles.
func mayHoldAgrees(t *testing.T, st *Store, n int, shapes [][]SeqRange) {
	t.Helper()
	for _, needle := range []string{"alpha1", "beta2 gamma", "日本語0", "🙂", "return38 err", "zzz", "a", "nil0 nil"} {
		p := trigram.NewProbe([]byte(needle))
		for _, rg := range shapes {
			got, skipped, err := st.MayHold(rg, p)
			if err != nil {
				t.Fatal(err)
			}
			var want []SeqRange
			wantSkipped := 0
			for _, x := range rg {
				for seq := x.Lo; seq <= x.Hi && seq <= uint64(n); seq++ {
					sk, err := st.get(seqKey(tagSketch, seq))
					if err != nil {
						continue // no text, no sketch
					}
					if !p.Pass(sk) {
						wantSkipped++
						continue
					}
					if n := len(want); n > 0 && want[n-1].Hi+1 == seq {
						want[n-1].Hi = seq
					} else {
						want = append(want, SeqRange{Lo: seq, Hi: seq})
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || skipped != wantSkipped {
				t.Fatalf("needle %q over %v:\n got %v skipping %d\nwant %v skipping %d", needle, rg, got, skipped, want, wantSkipped)
			}
		}
	}
}

// TestSketchesAreSkimmedOnlyWhileTheyPassNearlyEverything: where nearly
// every entry the columns pass holds the needle, sketches are only
// sampled (see sketchOdds), so entries whose sketch would rule them out
// get through; a later stretch where sketches rule most entries out turns
// the tests back on after a few failing samples. Either way no entry
// whose sketch passes is ever dropped, and skipped counts the rest.
func TestSketchesAreSkimmedOnlyWhileTheyPassNearlyEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"gamma", "delta", "zeta", "func", "err", "nil"}
	// A decoy has every trigram of the needle (so the columns pass it)
	// but not its 4-gram "a be" (so its sketch rules it out).
	const needle = "alpha beta"
	const dense = 3 * sketchChunk // chunks 0 to 2: nearly all hold it; chunks 3 and 4: few
	var texts []string
	decoy := map[uint64]bool{}
	for i := range 5 * sketchChunk {
		seq := uint64(i + 1)
		holds := seq%25 != 0
		if seq > dense {
			holds = !holds
		}
		text := "alpha bz qq beta "
		if holds {
			text = needle + " "
		} else {
			decoy[seq] = true
		}
		texts = append(texts, text+wordsText(r, words, 1+r.IntN(4), false))
	}
	st := pushTexts(t, texts)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := trigram.NewProbe([]byte(needle))
	got, skipped, err := st.MayHold([]SeqRange{{1, uint64(len(texts))}}, p)
	if err != nil {
		t.Fatal(err)
	}
	in := map[uint64]bool{}
	for _, rg := range got {
		for seq := rg.Lo; seq <= rg.Hi; seq++ {
			in[seq] = true
		}
	}
	var through, ruledLate, early, late int
	for seq := uint64(1); seq <= uint64(len(texts)); seq++ {
		sk, err := st.get(seqKey(tagSketch, seq))
		if err != nil {
			t.Fatal(err)
		}
		if p.Pass(sk) && !in[seq] {
			t.Fatalf("seq %d: its sketch passes %q, but MayHold dropped it", seq, needle)
		}
		if !decoy[seq] || p.Pass(sk) {
			continue // (a decoy whose sketch passes by chance is none)
		}
		if seq <= dense {
			early++
			if in[seq] {
				through++
			}
		} else {
			late++
			if !in[seq] {
				ruledLate++
			}
		}
	}
	if skipped != len(texts)-len(in) {
		t.Errorf("skipped %d, want the %d entries left out", skipped, len(texts)-len(in))
	}
	if early < 60 || late < 1000 {
		t.Fatalf("%d decoys in the dense stretch and %d after it: the test needs more", early, late)
	}
	if through < early/2 {
		t.Errorf("%d of the %d decoys among entries that nearly all hold the needle got through: the sketches were not skimmed", through, early)
	}
	if ruledLate < late*3/4 {
		t.Errorf("%d of the %d decoys after that were ruled out: the sketches stayed skimmed", ruledLate, late)
	}
	t.Logf("decoys let through while skimming: %d of %d; ruled out after: %d of %d", through, early, ruledLate, late)
}

// TestCurrentBranchSeqsFollowTheLeaf: the cached current branch of a
// session is dropped when an entry moves the leaf to another branch.
func TestCurrentBranchSeqsFollowTheLeaf(t *testing.T) {
	st := pushTexts(t, []string{"root", "second", "third"}) // e000 → e001 → e002
	got, err := st.CurrentBranchSeqs("s")
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("current branch = %v (%v), want [1 2 3]", got, err)
	}
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	if _, err := st.Push("s", h, []*journal.Entry{{Type: "message", Role: "user", ID: "e003", ParentID: "e000",
		Raw: []byte(`{"id":"e003"}`), Text: "a new branch", Searchable: true}}); err != nil {
		t.Fatal(err)
	}
	if got, err = st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("after branching from the root, current branch = %v (%v), want [1 4]", got, err)
	}
	if _, err := st.CurrentBranchSeqs("nope"); err == nil {
		t.Error("an unknown session has a current branch")
	}
}

// TestWarmSketchesLoadsEveryChunkWithinTheBound: after warming, every chunk
// of a store that fits is in memory with columns for its full chunks, and
// searches agree with a cold store; under a small bound the warm-up loads
// the newest chunks and stops early instead of dropping what it loaded.
func TestWarmSketchesLoadsEveryChunkWithinTheBound(t *testing.T) {
	texts := make([]string, 3*sketchChunk+100)
	for i := range texts {
		texts[i] = fmt.Sprintf("entry %d says %x", i, i*7919)
	}
	st := pushTexts(t, texts)
	probe := trigram.NewProbe([]byte("says 1f"))
	cold, _, err := st.MayHold([]SeqRange{{1, st.LastSeq()}}, probe)
	if err != nil {
		t.Fatal(err)
	}
	st.sketches = newSketchCache(DefaultSketchCacheBytes)
	ws, err := st.WarmSketches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ws.Chunks != 4 || ws.Full {
		t.Fatalf("WarmSketches = %+v, want 4 chunks, not full", ws)
	}
	for c := uint64(0); c < 4; c++ {
		ch, _ := st.sketches.get(c)
		if ch == nil {
			t.Fatalf("chunk %d not in the cache after warming", c)
		}
		// Chunk 0 holds seqs 0-1023 and is full once seq 1023 exists.
		if built := ch.cols.words != nil; built != (c < 3) {
			t.Errorf("chunk %d: columns built = %v, want %v", c, built, c < 3)
		}
	}
	warm, _, err := st.MayHold([]SeqRange{{1, st.LastSeq()}}, probe)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(warm) != fmt.Sprint(cold) || len(cold) == 0 {
		t.Errorf("warm MayHold = %v, cold = %v (want equal, non-empty)", warm, cold)
	}

	st.sketches = newSketchCache(warmChunkBytes + 27*filterBytes/10)
	ws, err = st.WarmSketches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Full || ws.Chunks < 1 || ws.Chunks > 3 {
		t.Errorf("WarmSketches with a small bound = %+v, want it stopped early after 1-3 chunks", ws)
	}
	// The newest chunks are warmed first, and none is dropped again.
	if ch, _ := st.sketches.get(3); ch == nil {
		t.Error("the newest chunk was not warmed, or dropped again")
	}
	if ch, _ := st.sketches.get(0); ch != nil && ws.Chunks < 4 {
		t.Error("the oldest chunk was warmed before newer ones")
	}
	// Chunks that do not fit load on each use, with the same answer, and
	// push out none of the newer ones.
	st.sketches.max = st.sketches.bytes
	before := slices.Sorted(maps.Keys(st.sketches.chunks))
	for range 2 {
		small, _, err := st.MayHold([]SeqRange{{1, st.LastSeq()}}, probe)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(small) != fmt.Sprint(cold) {
			t.Errorf("MayHold under a small bound = %v, cold = %v", small, cold)
		}
		if after := slices.Sorted(maps.Keys(st.sketches.chunks)); !slices.Equal(after, before) {
			t.Errorf("MayHold under a full cache changed the cached chunks from %v to %v", before, after)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st.sketches = newSketchCache(DefaultSketchCacheBytes)
	if _, err := st.WarmSketches(ctx); err == nil {
		t.Error("WarmSketches with a cancelled context returned no error")
	}
}

// TestGroupFreshOrdersAndKeepsTheLastOfASeq: by chunk, ascending, and a seq
// put twice in a batch keeps its later sketch.
func TestGroupFreshOrdersAndKeepsTheLastOfASeq(t *testing.T) {
	in := []freshSketch{{seq: 5, meta: []byte("a")}, {seq: 1030, meta: []byte("b")}, {seq: 3, meta: []byte("c")},
		{seq: 5, meta: []byte("d")}, {seq: 1025, meta: []byte("e")}}
	got := groupFresh(in)
	show := func(g []freshSketch) (s string) {
		for _, f := range g {
			s += fmt.Sprintf("%d:%s ", f.seq, f.meta)
		}
		return s
	}
	if len(got) != 2 || show(got[0]) != "3:c 5:d " || show(got[1]) != "1025:e 1030:b " {
		t.Errorf("groupFresh = chunk 0 [%s], chunk 1 [%s]", show(got[0]), show(got[1]))
	}
}

// TestSlabsStayCountedWhileAnyOfTheirChunksIsCached: chunks warmed
// together share slabs of columns, which live as long as any of them does;
// the cache counts a chunk's place in them until the last chunk of its
// group leaves, so that its bound holds.
func TestSlabsStayCountedWhileAnyOfTheirChunksIsCached(t *testing.T) {
	defer func(n uint64) { slabChunks = n }(slabChunks)
	slabChunks = 4
	texts := make([]string, 4*sketchChunk+10)
	for i := range texts {
		texts[i] = fmt.Sprintf("entry %d says %x", i, i*7919)
	}
	st := pushTexts(t, texts)
	st.sketches = newSketchCache(DefaultSketchCacheBytes)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Seq 0 has no entry, so chunks 0-3 are full (seqs 0-4095) and
	// share slabs; chunk 4 is not.
	var chunks []*chunkSketches
	for c := uint64(0); c < 4; c++ {
		ch, _ := st.sketches.get(c)
		if ch == nil || ch.owner == nil || ch.cols.stride != 4*sketchChunk/64 {
			t.Fatalf("chunk %d after warming: cached %v, want it in a slab of 4 chunks", c, ch != nil)
		}
		chunks = append(chunks, ch)
	}
	tail, _ := st.sketches.get(4)
	if tail == nil {
		t.Fatal("chunk 4 not cached after warming")
	}
	want := tail.size()
	for _, ch := range chunks {
		want += ch.size()
	}
	if got := st.sketches.bytes; got != want {
		t.Fatalf("after warming the cache counts %d bytes, want %d", got, want)
	}
	// Chunks 0-2 leave (a writer's drop, an eviction): their places in
	// the slabs stay counted while chunk 3 holds the slabs.
	for c := uint64(0); c < 3; c++ {
		st.sketches.drop(c)
	}
	want = tail.size() + chunks[3].size()
	for _, ch := range chunks[:3] {
		want += ch.share()
	}
	if got := st.sketches.bytes; got != want {
		t.Fatalf("with chunk 3 left of its group the cache counts %d bytes, want %d (its share of the slabs and the others')", got, want)
	}
	// The last leaves, and with it the slabs.
	st.sketches.mu.Lock()
	st.sketches.remove(3)
	st.sketches.mu.Unlock()
	if got, want := st.sketches.bytes, tail.size(); got != want {
		t.Fatalf("with the group gone the cache counts %d bytes, want %d", got, want)
	}
	// A chunk that was sliced on its own before the warm-up keeps its
	// columns and gets no place in the slabs.
	for c := uint64(0); c < 4; c++ {
		st.sketches.drop(c)
	}
	own, err := st.chunkFor(1)
	if err != nil {
		t.Fatal(err)
	}
	own.columns()
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if own.owner != nil || own.cols.stride != sketchChunk/64 {
		t.Errorf("a chunk sliced before the warm-up got a place in the slabs (stride %d)", own.cols.stride)
	}
	if ch, _ := st.sketches.get(2); ch == nil || ch.owner == nil || ch.cols.stride != 3*sketchChunk/64 {
		t.Errorf("chunk 2 after the second warm-up is not in a slab of the 3 chunks without columns")
	}
}

// TestTranspose64SwapsRowsAndColumns checks transpose64 against the
// definition on random and edge matrices.
func TestTranspose64SwapsRowsAndColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var ones, diag [64]uint64
	for i := range ones {
		ones[i], diag[i] = ^uint64(0), 1<<i
	}
	cases := [][64]uint64{{}, ones, diag, {0: 1 << 63}, {63: 1}}
	for range 20 {
		var m [64]uint64
		for i := range m {
			m[i] = r.Uint64() & r.Uint64() // a quarter of the bits set
		}
		cases = append(cases, m)
	}
	for n, m := range cases {
		got := m
		transpose64(&got)
		for a := range 64 {
			for b := range 64 {
				if got[a]>>b&1 != m[b]>>a&1 {
					t.Fatalf("case %d: bit %d of row %d is %d after transposing, bit %d of row %d was %d", n, b, a, got[a]>>b&1, a, b, m[b]>>a&1)
				}
			}
		}
	}
}

// TestColumnsHoldEachEntrysRowBits: a chunk's columns, narrow and wide,
// have bit i of column q set exactly when entry i's row (or its wide
// row, 4-gram part included) has bit q, for a chunk of small and large
// texts (whose sketches have wide rows).
func TestColumnsHoldEachEntrysRowBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	texts := make([]string, 1500)
	for i := range texts {
		n := 3 + r.IntN(60)
		if i%7 == 3 {
			n = 3000 + r.IntN(20000) // large enough for a wide row
		}
		if i%50 == 9 {
			continue // no text
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(' ' + r.IntN(95))
		}
		texts[i] = string(b)
	}
	st := pushTexts(t, texts)
	for c := uint64(0); c < 2; c++ {
		ch, err := st.chunkFor(c)
		if err != nil {
			t.Fatal(err)
		}
		cols := ch.columns()
		wideSeen := 0
		for i := range sketchChunk {
			a, b := ch.off[i], ch.off[i+1]
			var row [trigram.SliceBits / 64]uint64
			if a == b || !trigram.Row(ch.data[a:b], &row) {
				clear(row[:])
			}
			for q := range trigram.SliceBits {
				want := row[q/64]>>(q%64)&1 == 1
				if got := cols.word(uint16(q), i/64)>>(i%64)&1 == 1; got != want {
					t.Fatalf("chunk %d entry %d column %d: bit %v, its row has %v", c, i, q, got, want)
				}
			}
			var wide, four [trigram.WideBits / 64]uint64
			if a == b || !trigram.WideRow(ch.data[a:b], &wide) {
				continue
			}
			if !trigram.WideFourRow(ch.data[a:b], &four) {
				for w := range four {
					four[w] = ^uint64(0)
				}
			}
			j := wideSeen
			wideSeen++
			if int(ch.wide[j]) != i {
				t.Fatalf("chunk %d: wide row %d is entry %d, want %d", c, j, ch.wide[j], i)
			}
			for q := range wideCols {
				src := wide
				if q >= trigram.WideBits {
					src = four
				}
				bq := q % trigram.WideBits
				want := src[bq/64]>>(bq%64)&1 == 1
				if got := ch.wideCols.word(uint16(q), j/64)>>(j%64)&1 == 1; got != want {
					t.Fatalf("chunk %d wide row %d (entry %d) column %d: bit %v, its row has %v", c, j, i, q, got, want)
				}
			}
		}
		if wideSeen == 0 || wideSeen != len(ch.wide) {
			t.Fatalf("chunk %d: %d entries have a wide row, the chunk lists %d", c, wideSeen, len(ch.wide))
		}
	}
}
