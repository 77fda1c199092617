package store

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/trigram"
)

// TestRunIndexSaysWhatEachLongSetSays: for filters with random long sets
// in every slot of a group (and slots without one), each bit of the index
// is the slot's bit, and pass gives, for random sets of runs, exactly the
// slots whose long set has all of them.
func TestRunIndexSaysWhatEachLongSetSays(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var filters [runGroup]*textFilter
	for j := range filters {
		if j%9 == 4 {
			continue // a slot without a filter reads as an empty set
		}
		f := &textFilter{n: 1}
		long := f.bits.LongWords()
		for w := range long {
			// A third of the bits set, as in a real chunk's filter.
			long[w] = r.Uint64() & r.Uint64() & (r.Uint64() | r.Uint64())
		}
		filters[j] = f
	}
	x := newRunIndex(filters)
	has := func(j int, b uint32) bool {
		f := filters[j]
		return f != nil && f.bits.LongWords()[b/64]&(1<<(b%64)) != 0
	}
	for range 20000 {
		b := uint32(r.IntN(trigram.LongBits))
		for j := range filters {
			if got := x.words[b]&(1<<j) != 0; got != has(j, b) {
				t.Fatalf("bit %d of slot %d: index says %v, its long set %v", b, j, got, has(j, b))
			}
		}
	}
	for range 2000 {
		runs := make([]uint32, 1+r.IntN(trigram.RunsMax))
		for k := range runs {
			runs[k] = uint32(r.IntN(trigram.LongBits))
		}
		if r.IntN(4) == 0 {
			// Runs one slot has: that slot at least passes.
			j := r.IntN(runGroup)
			for k := range runs {
				for filters[j] != nil && !has(j, runs[k]) {
					runs[k] = uint32(r.IntN(trigram.LongBits))
				}
			}
		}
		got := x.pass(runs)
		for j := range filters {
			want := filters[j] != nil
			for _, b := range runs {
				want = want && has(j, b)
			}
			if filters[j] == nil {
				continue // pass may say anything of an empty slot: from is checked first
			}
			if got&(1<<j) != 0 != want {
				t.Fatalf("runs %v, slot %d: index passes %v, its long set %v", runs, j, got&(1<<j) != 0, want)
			}
		}
	}
}

// runTexts is filterTexts with the pieces of runNeedle spread over chunk
// 2's texts so that the twelve runs a filter tests (offsets 0-8, 16, 24
// and the last, 32) are all there but the run at offset 9 is not, and
// the whole needle in chunk 1 alone (seq 1,400).
func runTexts() []string {
	texts := filterTexts()
	texts[1399] += " " + runNeedle
	texts[2099] += " " + runNeedle[:16]
	texts[2199] += " " + runNeedle[16:24]
	texts[2299] += " " + runNeedle[24:32]
	texts[2399] += " " + runNeedle[32:]
	return texts
}

// freshNeedle is the needle that a text written later brings to chunk 1.
const freshNeedle = "Wz9!Fresh-Needle-Qv8"

// runNeedle is runTexts's needle of 40 bytes, no two of its runs alike.
const runNeedle = "Kq1#Vw2$Xe3%Yr4&Zt5*Mu6(Ni7)Bo8_Cp9+Dl0="

// TestRunIndexRulesOutWhatFiltersPassAndKeepsEveryMatch: a store whose
// chunks are indexed by runs (the minimum lowered to its three chunks)
// keeps every entry that holds a needle across ranges of every shape,
// as it did with each chunk's filter alone; it rules out a chunk that
// holds the twelve runs a filter tests but not another; it counts the
// index in the cache and drops it with the group's last chunk; and a
// chunk reloaded after a rewrite is judged by its own filter, not by an
// index built from its old one, until the group is indexed again.
func TestRunIndexRulesOutWhatFiltersPassAndKeepsEveryMatch(t *testing.T) {
	defer func(n int) { runIndexMin = n }(runIndexMin)
	runIndexMin = 1
	texts := runTexts()
	st := pushTexts(t, texts)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	bare := st.sketches.bytes
	fs, err := st.WarmFilters(context.Background())
	if err != nil || fs.Chunks != 3 || fs.RunGroups != 1 {
		t.Fatalf("WarmFilters = %+v, %v; want 3 chunks filtered, 1 group indexed", fs, err)
	}
	if got, want := st.sketches.bytes, bare+3*filterBytes+runIndexBytes; got != want {
		t.Fatalf("with 3 filters and an index the cache counts %d bytes, want %d", got, want)
	}
	shapes := [][]SeqRange{{{1, 2600}}, {{1000, 1100}}, {{5, 5}, {1023, 1025}, {1099, 1101}, {2047, 2049}}, {{1390, 1410}}, {{2000, 2700}}}
	needles := []string{runNeedle, runNeedle[:12], runNeedle[5:30], runNeedle[9:17], inOrder, "err38 func37", "alpha12 beta3", "ZQX9 here", "late entry 3"}
	both := func() {
		t.Helper()
		for _, nd := range needles {
			on := mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
			useRunIndex = false
			off := mayHoldKeepsEveryMatch(t, st, texts, nd, shapes)
			useRunIndex = true
			for k := range on {
				if Count(on[k]) > Count(off[k]) {
					t.Fatalf("%q over %v: the index kept %d seqs, the filters alone %d", nd, shapes[k], Count(on[k]), Count(off[k]))
				}
			}
		}
	}
	both()

	// Chunk 2 holds the twelve runs a filter tests, not the run at 9.
	for i, tx := range texts {
		if strings.Contains(tx, runNeedle) != (i == 1399) {
			t.Fatalf("the test's texts hold %q at seq %d", runNeedle, i+1)
		}
	}
	p := trigram.NewProbe([]byte(runNeedle))
	c2, _ := st.sketches.get(2)
	if !p.PassFilter(&c2.filter.Load().bits) {
		t.Fatal("chunk 2's filter rules the needle out: the test no longer shows what the index adds")
	}
	x := st.sketches.runIndexOf(0)
	if pass := x.pass(p.Runs()); pass&0b111 != 0b010 {
		t.Fatalf("the index passes chunks %03b of the needle, want chunk 1 alone", pass&0b111)
	}
	got, skipped, err := st.MayHold([]SeqRange{{1, 2600}}, p)
	if err != nil || len(got) != 1 || got[0] != (SeqRange{1400, 1400}) {
		t.Fatalf("MayHold over the store = %v, %v; want seq 1400 alone", got, err)
	}
	if least := c2.sketched(0, c2.known()-1); skipped < least {
		t.Errorf("skipped %d entries, fewer than chunk 2's %d", skipped, least)
	}

	// A rewrite drops chunk 1: the index stays for the others, chunk 1
	// (reloaded without a filter, then given a new one) is judged by its
	// own filter until WarmFilters indexes the group again. (The
	// background builds, which would index it sooner, are stopped.)
	// Seq 1,100 gets a text with a needle chunk 1 did not hold, which the
	// old index would rule out.
	st.builds.stop()
	texts[1099] = "now " + freshNeedle + " lives here"
	needles = append(needles, freshNeedle)
	if err := st.db.Set(seqKey(tagText, 1100), []byte(texts[1099]), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.db.Set(seqKey(tagSketch, 1100), trigram.Sketch([]byte(texts[1099])), nil); err != nil {
		t.Fatal(err)
	}
	st.sketches.drop(1)
	if st.sketches.runIndexOf(0) != x {
		t.Fatal("dropping one chunk of three dropped the group's index")
	}
	if _, err := st.chunkFor(1); err != nil {
		t.Fatal(err)
	}
	both()
	c1, _ := st.sketches.get(1)
	f, err := st.buildFilter(1, c1)
	if err != nil || !st.sketches.attach(1, c1, f) {
		t.Fatalf("a new filter for chunk 1: %v", err)
	}
	if x.from[1] == f {
		t.Fatal("the old index claims the new filter")
	}
	both()
	if _, err := st.WarmFilters(context.Background()); err != nil {
		t.Fatal(err)
	}
	if y := st.sketches.runIndexOf(0); y == x || y == nil || y.from[1] != f {
		t.Fatal("WarmFilters did not index the group again with chunk 1's new filter")
	}
	both()
	for c := range uint64(3) {
		st.sketches.drop(c)
	}
	if st.sketches.runIndexOf(0) != nil || st.sketches.bytes != 0 {
		t.Fatalf("with every chunk dropped: index %v, the cache counts %d bytes, want none and 0", st.sketches.runIndexOf(0) != nil, st.sketches.bytes)
	}
}
