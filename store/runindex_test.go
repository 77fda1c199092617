package store

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/trigram"
)

// TestRunIndexSaysWhatEachSliceHolds: over a store of random texts whose
// chunks are indexed by slices of 64 entries, each slice's bits in the
// index are the runs its texts hold (SetRuns of each text, compared bit
// by bit), when the index was built as the filters were, after a restart
// that read kept filters back, and when built again alone; every needle cut from a text passes that text's slice, and
// pass gives for any runs exactly the slices whose sets hold them all.
func TestRunIndexSaysWhatEachSliceHolds(t *testing.T) {
	if 1<<(runBits+runShift) != trigram.LongBits {
		t.Fatalf("runShift %d does not take a long-set bit (of %d) to a slice set's (of %d)", runShift, trigram.LongBits, 1<<runBits)
	}
	texts := filterTexts()
	st := pushTexts(t, texts)
	sets := make([][1 << runBits / 64]uint64, 64)
	for i, tx := range texts {
		seq := i + 1
		trigram.SetRuns(sets[seq/64][:], []byte(tx), runShift)
	}
	same := func(how string, x *runIndex) {
		t.Helper()
		for j := range sets {
			for b := range 1 << runBits {
				if got, want := x.words[b]&(1<<j) != 0, sets[j][b/64]&(1<<(b%64)) != 0; got != want {
					t.Fatalf("%s: bit %d of slice %d: index says %v, the slice's texts %v", how, b, j, got, want)
				}
			}
		}
	}
	warm := func(loaded int) *runIndex {
		t.Helper()
		if _, err := st.WarmSketches(context.Background()); err != nil {
			t.Fatal(err)
		}
		if fs, err := st.WarmFilters(context.Background()); err != nil || fs.RunGroups != 1 || fs.Loaded != loaded {
			t.Fatalf("WarmFilters = %+v, %v; want the one group indexed, %d filters read back", fs, err, loaded)
		}
		return st.sketches.runIndexOf(0)
	}
	// Indexed as the filters are built, then after a restart that reads
	// the kept filters back, then built again on its own.
	x := warm(0)
	same("built with the filters", x)
	st = reopenStore(t, st)
	y := warm(2)
	same("after a restart", y)
	scanned, err := st.newRunIndex(0, y.from)
	if err != nil {
		t.Fatal(err)
	}
	same("built again alone", scanned)
	r := rand.New(rand.NewPCG(3, 4))
	shift := func(p *trigram.Probe) []uint32 {
		var out []uint32
		for _, b := range p.Runs() {
			out = append(out, b>>runShift)
		}
		return out
	}
	for range 3000 {
		seq := 1 + r.IntN(len(texts))
		tx := texts[seq-1]
		if len(tx) < trigram.LongGram {
			continue
		}
		a := r.IntN(len(tx) - trigram.LongGram + 1)
		b := a + trigram.LongGram + r.IntN(len(tx)-a-trigram.LongGram+1)
		runs := shift(trigram.NewProbe([]byte(tx[a:b])))
		got := x.pass(runs)
		if got&(1<<(seq/64)) == 0 {
			t.Fatalf("%q, cut from seq %d, does not pass its slice %d", tx[a:b], seq, seq/64)
		}
		for j := range sets {
			want := true
			for _, b := range runs {
				want = want && sets[j][b/64]&(1<<(b%64)) != 0
			}
			if got&(1<<j) != 0 != want {
				t.Fatalf("%q, slice %d: index passes %v, the slice's set %v", tx[a:b], j, got&(1<<j) != 0, want)
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
// chunks are indexed by the runs of their slices keeps every entry that holds a needle across ranges of every shape,
// as it did with each chunk's filter alone; it rules out a chunk that
// holds the twelve runs a filter tests but not another, and every slice
// but the one that holds the needle; it counts the
// index in the cache and drops it with the group's last chunk; and a
// chunk reloaded after a rewrite is judged by its own filter, not by an
// index built from its old one, until the group is indexed again.
func TestRunIndexRulesOutWhatFiltersPassAndKeepsEveryMatch(t *testing.T) {
	defer func(n int) { chunkRunsMin = n }(chunkRunsMin)
	chunkRunsMin = 1 // the three chunks get a chunkRuns too
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
	if got, want := st.sketches.bytes, bare+3*filterBytes+runIndexBytes+chunkRunsBytes; got != want {
		t.Fatalf("with 3 filters and both indexes the cache counts %d bytes, want %d", got, want)
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
	if pass := st.sketches.chunkRunsOf(0).pass(p.Runs()); pass&0b111 != 0b010 {
		t.Fatalf("the chunkRuns passes chunks %03b of the needle, want chunk 1 alone", pass&0b111)
	}
	x := st.sketches.runIndexOf(0)
	var runs []uint32
	for _, b := range p.Runs() {
		runs = append(runs, b>>runShift)
	}
	if pass, want := x.pass(runs), uint64(1)<<(1400/64); pass != want {
		t.Fatalf("the index passes slices %064b of the needle, want %064b: seq 1400's alone", pass, want)
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
