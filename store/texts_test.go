package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// pushTexts stores one session whose entries have the given texts ("" for
// an entry with no searchable text) and returns the store.
func pushTexts(t *testing.T, texts []string) *Store {
	t.Helper()
	st, _ := openFresh(t)
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
}

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
	r := st.NewTextReader(lo, hi)
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

// TestCurrentBranchFromLinksEqualsTheTrees: the current branch worked out
// from the records' ids and parents alone (branchSeqs) is the path the
// session's tree gives to its leaf, over random trees with branches,
// entries whose parent is missing and parents that close a cycle.
func TestCurrentBranchFromLinksEqualsTheTrees(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		st := pushTexts(t, []string{"root"})
		h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
		ids := []string{"e000"}
		var es []*journal.Entry
		for i := range 60 + r.IntN(60) {
			id := fmt.Sprintf("n%03d", i)
			parent := ids[r.IntN(len(ids))]
			switch r.IntN(12) {
			case 0:
				parent = "missing"
			case 1:
				parent = ""
			case 2:
				parent = fmt.Sprintf("n%03d", i+1) // a later entry: a cycle may close
			}
			es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, ParentID: parent,
				Raw: []byte(`{"id":"` + id + `"}`), Text: "t", Searchable: true})
			ids = append(ids, id)
		}
		if _, err := st.Push("s", h, es); err != nil {
			t.Fatal(err)
		}
		tree, err := st.Tree("s")
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		for _, m := range tree.Metas {
			if tree.OnCurrentBranch(m.ID) {
				want = append(want, m.Seq)
			}
		}
		got, err := st.branchSeqs("s")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: the branch from links is %v, the tree's %v", seed, got, want)
		}
	}
}
