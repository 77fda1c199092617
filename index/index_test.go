package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

func TestAnalyzerEmitsEachDistinctRuneTrigramOnce(t *testing.T) {
	cases := map[string][]string{
		"ab":      nil,
		"abc":     {"abc"},
		"abcabc":  {"abc", "bca", "cab"},
		"héllo":   {"hél", "éll", "llo"},
		"🙂🙂🙂🙂":    {"🙂🙂🙂"},
		"Foo foo": {"Foo", "oo ", "o f", " fo", "foo"},
	}
	for in, want := range cases {
		var got []string
		for _, tok := range (trigramAnalyzer{}).Analyze([]byte(in)) {
			got = append(got, string(tok.Term))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Analyze(%q) = %q, want %q", in, got, want)
		}
	}
}

// numbered returns n texts, the ith made by format with i.
func numbered(format string, n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf(format, i)
	}
	return texts
}

func pushTexts(t *testing.T, st *store.Store, sid string, texts []string) {
	t.Helper()
	h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
	var es []*journal.Entry
	for i, tx := range texts {
		id := fmt.Sprintf("%s-%04d", sid, i)
		es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: true, Text: tx,
			Raw: []byte(fmt.Sprintf(`{"id":%q}`, id))})
	}
	if _, err := st.Push(sid, h, es); err != nil {
		t.Fatal(err)
	}
}

func TestCandidatesFollowTheStoreAndSurviveReopen(t *testing.T) {
	dir, st := newStore(t)
	texts := []string{"alpha beta", "gamma delta", "alphabet soup", "Alpha"}
	for len(texts) < BlockSize {
		texts = append(texts, "filler")
	}
	pushTexts(t, st, "s1", texts)
	x := openCaughtUp(t, dir, st)
	if x.IndexedThrough() != BlockSize {
		t.Fatalf("mark %d, want %d", x.IndexedThrough(), BlockSize)
	}
	got, err := x.Candidates(context.Background(), trigramsFor(t, x, "alpha "), 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []Block{{1, BlockSize}}) {
		t.Errorf("candidates for alpha = %v, want the first block", got)
	}
	got, _ = x.Candidates(context.Background(), trigramsFor(t, x, "alpha "), 2, 1000)
	if !reflect.DeepEqual(got, []Block{{2, BlockSize}}) {
		t.Errorf("windowed candidates = %v, want the block clipped to the window", got)
	}
	if got, _ := x.Candidates(context.Background(), trigramsFor(t, x, "ALPHA "), 1, 1000); len(got) != 0 {
		t.Errorf("search is case-sensitive; ALPHA found %v", got)
	}
	p, _ := x.PlanNeedle("zzzzzz")
	if p.Zero == "" {
		t.Errorf("a trigram absent from every document should be reported: %+v", p)
	}
	x.Close()
	x = openIndex(t, dir, st, Options{})
	defer x.Close()
	if x.IndexedThrough() != BlockSize {
		t.Errorf("mark after reopen %d, want %d", x.IndexedThrough(), BlockSize)
	}
	more := []string{"alpha again"}
	for len(more) < BlockSize {
		more = append(more, "filler")
	}
	pushTexts(t, st, "s2", more)
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	two := []Block{{1, BlockSize}, {BlockSize + 1, 2 * BlockSize}}
	got, _ = x.Candidates(context.Background(), trigramsFor(t, x, "alpha "), 1, 1000)
	if !reflect.DeepEqual(got, two) {
		t.Errorf("after catch-up: %v", got)
	}
	if err := x.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, _ = x.Candidates(context.Background(), trigramsFor(t, x, "alpha "), 1, 1000)
	if !reflect.DeepEqual(got, two) || x.IndexedThrough() != 2*BlockSize {
		t.Errorf("after reindex: %v mark %d", got, x.IndexedThrough())
	}
	if _, err := st.DropSession("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, _ = x.Candidates(context.Background(), trigramsFor(t, x, "alpha "), 1, 1000)
	if !reflect.DeepEqual(got, two[1:]) {
		t.Errorf("after dropping s1: %v", got)
	}
}

// The intersection PlanNeedle does itself must give what Bleve's conjunction
// gives, in every window, across segments, rebuilt blocks and deletions.
// TestDirectPlanAgreesWithCandidates also runs on an index opened for a
// bulk load, whose segments merge by another plan.
func TestDirectPlanAgreesWithCandidates(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) { testDirectPlanAgreesWithCandidates(t, bulk) })
	}
}

func testDirectPlanAgreesWithCandidates(t *testing.T, bulk bool) {
	dir, st := newStore(t)
	x := openIndex(t, dir, st, Options{Bulk: bulk})
	defer x.Close()
	r := rand.New(rand.NewPCG(9, 9))
	// Sixteen letters make 4096 trigrams, of which a block holds a fifth or
	// so: a needle of six or seven letters (the shortest an index of
	// selected trigrams narrows down) is in some blocks, not all.
	letters := []rune("abcdefghijklmnoé")
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(letters[r.IntN(len(letters))])
		}
		return b.String()
	}
	var all []string
	for s := 0; s < 6; s++ {
		var texts []string
		for i := 0; i < 200+r.IntN(200); i++ {
			texts = append(texts, word(3+r.IntN(10)))
		}
		all = append(all, texts...)
		pushTexts(t, st, fmt.Sprintf("s%d", s), texts)
		if _, err := x.CatchUp(context.Background(), nil); err != nil { // one segment per pass
			t.Fatal(err)
		}
	}
	if _, err := st.DropSession("s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	mark := x.IndexedThrough()
	needles := []string{"nothing", "abcdef"}
	for range 60 {
		// Half from the stored texts (so they are in some blocks), half random.
		if w := []rune(all[r.IntN(len(all))]); len(w) >= 6 && r.IntN(2) == 0 {
			i := r.IntN(len(w) - 5)
			needles = append(needles, string(w[i:i+6]))
		} else {
			needles = append(needles, word(6+r.IntN(2)))
		}
	}
	some := 0
	for _, n := range needles {
		p, err := x.PlanNeedle(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.Zero != "" {
			if len(p.Blocks) != 0 {
				t.Fatalf("%q: zero plan with blocks %v", n, p.Blocks)
			}
			continue
		}
		if !p.Direct {
			t.Fatalf("%q: rarest %d, want a direct plan", n, p.Rarest)
		}
		// Bounded: one block short of the intersection is too broad, its
		// size exactly is the same plan.
		if k := len(p.Blocks); k > 1 { // (a bound of 0 is none)
			if b, err := x.PlanNeedleWithin(context.Background(), n, k-1); err != nil || !b.Broad || b.Direct || b.Blocks != nil {
				t.Fatalf("%q bounded at %d of %d blocks: broad %v, direct %v, %d blocks (%v); want broad alone", n, k-1, k, b.Broad, b.Direct, len(b.Blocks), err)
			}
			if b, err := x.PlanNeedleWithin(context.Background(), n, k); err != nil || b.Broad || !reflect.DeepEqual(b.Blocks, p.Blocks) {
				t.Fatalf("%q bounded at its %d blocks: broad %v, blocks %v (%v); want %v", n, k, b.Broad, b.Blocks, err, p.Blocks)
			}
		}
		for k := 0; k < 30; k++ {
			lo := 1 + uint64(r.IntN(int(mark)))
			hi := lo + uint64(r.IntN(int(mark)))
			if k == 0 {
				lo, hi = 1, mark
			}
			hi = min(hi, mark)
			want, err := x.Candidates(context.Background(), p.Trigrams, lo, hi)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 && len(want) > 0 && len(want) < int(mark/BlockSize) {
				some++
			}
			if got := p.Window(lo, hi); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("%q in [%d, %d]: direct %v, Bleve %v", n, lo, hi, got, want)
			}
		}
	}
	if some < 10 {
		t.Fatalf("only %d needles are in some blocks but not all: the test shows little", some)
	}
}

func TestIndexOfAnotherBlockSizeIsRebuilt(t *testing.T) {
	dir, st := newStore(t)
	texts := numbered("entry %d kiwi", 3*BlockSize)
	pushTexts(t, st, "s", texts)
	x := openCaughtUp(t, dir, st)
	// Pretend the index was written with another block size, and wait for
	// that to reach disk: Close does not flush a lone internal write.
	b := x.bi.NewBatch()
	b.SetInternal([]byte(blockKey), []byte("999"))
	if err := batchPersisted(context.Background(), x.bi, b); err != nil {
		t.Fatal(err)
	}
	x.Close()
	x = openIndex(t, dir, st, Options{})
	defer x.Close()
	if x.IndexedThrough() != 0 {
		t.Fatalf("an index of another block size must start over, mark %d", x.IndexedThrough())
	}
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if x.IndexedThrough() != 3*BlockSize {
		t.Fatalf("rebuilt mark %d", x.IndexedThrough())
	}
}

func TestCompactMergesSegmentsAndKeepsEveryCandidate(t *testing.T) {
	// Two segments a merge, so that one force merge cannot merge them all
	// (as Bleve's ten could not after a large import); no merges in the
	// background, so that each session's segment stays apart until then.
	defer func(n int) { forceMergeTask = n }(forceMergeTask)
	forceMergeTask = 2
	defer func() { testMergePlan = nil }()
	testMergePlan = map[string]interface{}{"MaxSegmentsPerTier": 1000, "SegmentsPerMergeTask": 2,
		"FloorSegmentSize": 1, "TierGrowth": 10.0, "MaxSegmentSize": 5_000_000}
	dir, st := newStore(t)
	ixDir := filepath.Join(dir, "index")
	// One session per opening: one segment on disk each.
	const sessions = 6
	var x *Index
	var err error
	for s := range sessions {
		if x, err = Open(ixDir, st, nil); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for i := range BlockSize * 2 {
			texts = append(texts, fmt.Sprintf("session %d entry %d %s", s, i, rare(s)))
		}
		pushTexts(t, st, fmt.Sprintf("s%d", s), texts)
		if _, err := x.CatchUp(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if x, err = Open(ixDir, st, nil); err != nil {
		t.Fatal(err)
	}
	before := x.Segments()
	if err := x.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if x, err = Open(ixDir, st, nil); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	after := x.Segments()
	if before != sessions || after != 1 {
		t.Errorf("segments on disk: %d before compacting, %d after; want %d, then one", before, after, sessions)
	}
	if x.IndexedThrough() != sessions*2*BlockSize {
		t.Errorf("mark after compacting and reopening: %d, want %d", x.IndexedThrough(), sessions*2*BlockSize)
	}
	for s := range sessions {
		got, err := x.Candidates(context.Background(), trigramsFor(t, x, rare(s)), 1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		lo := uint64(s*2*BlockSize + 1)
		want := []Block{{lo, lo + BlockSize - 1}, {lo + BlockSize, lo + 2*BlockSize - 1}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: candidates %v, want %v", rare(s), got, want)
		}
	}
}

// TestReindexWhileWriting: a reindex of a live index (the server runs one
// on request) while entries are stored, indexed and searched: searches
// never fail, and afterwards every entry, old or new, is a candidate for
// its own word and the mark is where it should be.
func TestReindexWhileWriting(t *testing.T) {
	dir, st := newStore(t)
	word := func(i int) string { return fmt.Sprintf("w%05dq", i) }
	var texts []string
	for i := range 150 * BlockSize {
		texts = append(texts, "entry "+word(i))
	}
	pushTexts(t, st, "s0", texts)
	x := openCaughtUp(t, dir, st)
	defer x.Close()
	ctx := context.Background()
	done := make(chan struct{})
	errs := make(chan error, 2)
	n := len(texts)
	go func() { // writer and indexer
		defer close(done)
		for b := 1; b <= 12; b++ {
			var more []string
			for range BlockSize {
				more = append(more, "entry "+word(n))
				n++
			}
			sid := fmt.Sprintf("s%d", b)
			h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
			var es []*journal.Entry
			for i, tx := range more {
				id := fmt.Sprintf("%s-%04d", sid, i)
				es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: true, Text: tx, Raw: []byte(fmt.Sprintf(`{"id":%q}`, id))})
			}
			if _, err := st.Push(sid, h, es); err != nil {
				errs <- err
				return
			}
			if _, err := x.CatchUp(ctx, nil); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	go func() { // reader
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if _, err := x.Candidates(ctx, trigramsFor(t, x, word(i%len(texts))), 1, 1<<40); err != nil {
				errs <- err
				return
			}
		}
	}()
	if err := x.Reindex(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if x.IndexedThrough() != Target(st.LastSeq()) || st.LastSeq() != uint64(n) {
		t.Fatalf("mark %d, want %d (%d entries)", x.IndexedThrough(), Target(st.LastSeq()), n)
	}
	for i := range n {
		seq := uint64(i + 1)
		got, err := x.Candidates(ctx, trigramsFor(t, x, word(i)), 1, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, b := range got {
			in = in || b.Lo <= seq && seq <= b.Hi
		}
		if !in {
			t.Fatalf("after the reindex, entry %d (%s) is not a candidate for its word: %v", seq, word(i), got)
		}
	}
}

// Batches are applied by several goroutines, in any order; the mark must
// still never pass a block that is not in the index, and the index must
// hold every block once caught up and after reopening.
func TestTheMarkNeverPassesABlockNotYetIndexed(t *testing.T) {
	dir, st := newStore(t)
	const blocks = 120
	var texts []string
	for b := range blocks {
		for i := range BlockSize {
			texts = append(texts, fmt.Sprintf("entry %d of block Q%03dQ%03dQ", i, b, b))
		}
	}
	pushTexts(t, st, "s", texts)
	small := Options{BatchBytes: 600} // about two blocks a batch
	x := openIndex(t, dir, st, small)
	ctx := context.Background()
	found := func(b uint64) bool {
		got, err := x.Candidates(ctx, trigramsFor(t, x, fmt.Sprintf("Q%03dQ%03dQ", b, b)), 1, uint64(len(texts)))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(got, Block{b*BlockSize + 1, (b + 1) * BlockSize})
	}
	var marks []uint64
	last := uint64(0)
	if _, err := x.CatchUp(ctx, func(through uint64) {
		if x.IndexedThrough() != through {
			t.Errorf("progress reports %d, the mark is %d", through, x.IndexedThrough())
		}
		// Every block the mark passed since the last report is found.
		for b := last / BlockSize; b < through/BlockSize; b++ {
			if !found(b) {
				t.Errorf("mark %d passed block %d, which the index does not hold", through, b)
			}
		}
		last = through
		marks = append(marks, through)
	}); err != nil {
		t.Fatal(err)
	}
	if len(marks) < 20 || !slices.IsSorted(marks) || last != blocks*BlockSize {
		t.Fatalf("marks %v: want many batches, in order, up to %d", marks, blocks*BlockSize)
	}
	x.Close()
	x = openIndex(t, dir, st, small)
	defer x.Close()
	if x.IndexedThrough() != blocks*BlockSize {
		t.Fatalf("mark after reopening %d, want %d", x.IndexedThrough(), blocks*BlockSize)
	}
	for b := range uint64(blocks) {
		if !found(b) {
			t.Errorf("block %d missing after reopening", b)
		}
	}
}

// TestAMarkPastTheStoreFallsBack opens an index marked through three blocks
// over a store that holds one and a half (as when a store lost entries the
// index had seen): the mark falls back to the last whole block, and the
// entries the store then puts under the lost seqs are indexed.
func TestAMarkPastTheStoreFallsBack(t *testing.T) {
	dir, st := newStore(t)
	old := numbered("walrus entry %d", 3*BlockSize)
	pushTexts(t, st, "s1", old)
	x := openCaughtUp(t, dir, st)
	if x.IndexedThrough() != 3*BlockSize {
		t.Fatalf("mark %d, want %d", x.IndexedThrough(), 3*BlockSize)
	}
	x.Close()

	_, lost := newStore(t) // the store after losing its last entries
	kept := numbered("walrus entry %d", BlockSize+BlockSize/2)
	pushTexts(t, lost, "s1", kept)
	x = openIndex(t, dir, lost, Options{})
	defer x.Close()
	if x.IndexedThrough() != BlockSize {
		t.Fatalf("over a store ending at %d the mark is %d; want %d, the last whole block", lost.LastSeq(), x.IndexedThrough(), BlockSize)
	}
	refill := numbered("quokka entry %d", 2*BlockSize)
	pushTexts(t, lost, "s2", refill)
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, err := x.Candidates(context.Background(), trigramsFor(t, x, "quokka "), 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{{BlockSize + 1, 2 * BlockSize}, {2*BlockSize + 1, 3 * BlockSize}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates for entries stored under the lost seqs: %v; want %v", got, want)
	}
}

// TestAnIndexKilledWhileBeingCreatedIsMadeAgain: a process killed between
// Bleve writing a new index's index_meta.json and its mapping reaching disk
// leaves a directory Bleve cannot open; it holds no segment, so opening
// makes it again instead of failing until someone runs reindex.
func TestAnIndexKilledWhileBeingCreatedIsMadeAgain(t *testing.T) {
	dir, st := newStore(t)
	texts := numbered("pelican entry %d", BlockSize)
	pushTexts(t, st, "s1", texts)
	half := filepath.Join(dir, "index")
	if err := os.MkdirAll(filepath.Join(half, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	meta := `{"storage":"scorch","index_type":"scorch","config":{"unsafe_batch":true}}`
	if err := os.WriteFile(filepath.Join(half, "index_meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenWith(half, st, Options{})
	if err != nil {
		t.Fatalf("opening a half-created index: %v", err)
	}
	defer x.Close()
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	got, err := x.Candidates(context.Background(), trigramsFor(t, x, "pelican "), 1, 1000)
	if err != nil || !reflect.DeepEqual(got, []Block{{1, BlockSize}}) {
		t.Fatalf("candidates after the index was made again: %v, %v", got, err)
	}
}
