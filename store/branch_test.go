package store

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// savedBranchOf returns what the store keeps as sid's current branch
// (whatever leaf it names), and whether it keeps any.
func savedBranchOf(t *testing.T, st *Store, sid string) (leaf uint64, seqs []uint64, ok bool) {
	t.Helper()
	v, closer, err := st.db.Get(sessionKey(tagBranch, sid))
	if err == pebble.ErrNotFound {
		return 0, nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if len(v) < 8 {
		t.Fatalf("the kept branch of %s is %x, too short", sid, v)
	}
	leaf = binary.BigEndian.Uint64(v)
	seqs, ok = decodeBranch(v, leaf)
	if !ok {
		t.Fatalf("the kept branch of %s, %x, does not decode", sid, v)
	}
	return leaf, seqs, true
}

// TestACurrentBranchIsKeptUntilItsSessionChanges: a branch worked out is
// kept in the store and read back by the next process; every change to
// the session (an entry added, a new branch, the session dropped) removes
// it in the same commit, and the next answer follows the change.
func TestACurrentBranchIsKeptUntilItsSessionChanges(t *testing.T) {
	st := pushTexts(t, []string{"root", "second", "third"}) // e000 → e001 → e002
	if _, _, ok := savedBranchOf(t, st, "s"); ok {
		t.Fatal("a branch is kept before anything asked for it")
	}
	if got, err := st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("current branch = %v (%v), want [1 2 3]", got, err)
	}
	if leaf, seqs, ok := savedBranchOf(t, st, "s"); !ok || leaf != 3 || fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("kept: leaf %d, %v (%v); want leaf 3, [1 2 3]", leaf, seqs, ok)
	}

	// A reopened store answers with what is kept: here a branch written
	// by hand that no walk of the session would give.
	st = keepAndReopen(t, st, "s", encodeBranch(3, []uint64{2, 3}))
	if got, err := st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("after a reopen, current branch = %v (%v), want the kept [2 3]", got, err)
	}

	pushMore(t, st, "e000", "b%03d", []string{"a new branch"}) // seq 4, child of the root
	if _, _, ok := savedBranchOf(t, st, "s"); ok {
		t.Fatal("the kept branch outlived a commit to its session")
	}
	if got, err := st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("after branching from the root, current branch = %v (%v), want [1 4]", got, err)
	}
	st = reopenStore(t, st)
	if got, err := st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("after a reopen, current branch = %v (%v), want [1 4]", got, err)
	}

	if _, err := st.DropSession("s"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := savedBranchOf(t, st, "s"); ok {
		t.Fatal("the kept branch outlived its session")
	}
	if _, err := st.CurrentBranchSeqs("s"); err == nil {
		t.Error("a dropped session has a current branch")
	}
}

// TestAKeptBranchThatDoesNotEndAtTheLeafIsWorkedOutAgain: a kept value
// naming another leaf (written before a change by a build that did not
// drop it), or damaged, is not believed.
func TestAKeptBranchThatDoesNotEndAtTheLeafIsWorkedOutAgain(t *testing.T) {
	for name, v := range map[string][]byte{
		"another leaf":         encodeBranch(2, []uint64{1, 2}),
		"ends elsewhere":       encodeBranch(3, []uint64{1, 2}),
		"cut short":            encodeBranch(3, []uint64{1, 2, 3})[:8],
		"too short":            {0, 0, 3},
		"a seq twice":          append(encodeBranch(3, []uint64{1, 3}), 0),
		"an unfinished varint": append(encodeBranch(3, []uint64{1, 2, 3}), 0x80),
	} {
		t.Run(name, func(t *testing.T) {
			st := keepAndReopen(t, pushTexts(t, []string{"root", "second", "third"}), "s", v)
			if got, err := st.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 2 3]" {
				t.Fatalf("current branch = %v (%v), want [1 2 3] worked out again", got, err)
			}
			if leaf, seqs, ok := savedBranchOf(t, st, "s"); !ok || leaf != 3 || fmt.Sprint(seqs) != "[1 2 3]" {
				t.Fatalf("kept after: leaf %d, %v (%v); want leaf 3, [1 2 3]", leaf, seqs, ok)
			}
		})
	}
}

// TestAReadOnlyStoreKeepsNoBranch: a store opened for reading only works
// branches out without writing them.
func TestAReadOnlyStoreKeepsNoBranch(t *testing.T) {
	ro := reopenReadOnly(t, pushTexts(t, []string{"root", "second"}))
	if got, err := ro.CurrentBranchSeqs("s"); err != nil || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("current branch = %v (%v), want [1 2]", got, err)
	}
	if _, _, ok := savedBranchOf(t, ro, "s"); ok {
		t.Error("a read-only store kept a branch")
	}
}

// reopenReadOnly closes st and opens its directory again for reading
// only, closing it when the test ends.
func reopenReadOnly(t *testing.T, st *Store) *Store {
	t.Helper()
	dir := st.Dir()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenWith(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro
}

// keepAndReopen writes v as the kept branch of sid by hand, then reopens
// st (see reopenStore).
func keepAndReopen(t *testing.T, st *Store, sid string, v []byte) *Store {
	t.Helper()
	if err := st.db.Set(sessionKey(tagBranch, sid), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return reopenStore(t, st)
}

// TestABranchReadGivesTheRecordItRead: CurrentBranchSeqsRead returns the
// session's record, with the generation before the read, when it had to
// read it, and none once the branch is known; after a change the record
// read is the new one, under the new generation.
func TestABranchReadGivesTheRecordItRead(t *testing.T) {
	st := pushTexts(t, []string{"root", "second"}) // e000 → e001
	gen := st.SessionGeneration("s")
	seqs, read, err := st.CurrentBranchSeqsRead("s")
	if err != nil || fmt.Sprint(seqs) != "[1 2]" || read == nil || read.Info.ID != "s" || read.Info.LeafSeq != 2 || read.Generation != gen {
		t.Fatalf("first read: %v, %+v, %v; want [1 2] and the record (leaf 2) under generation %d", seqs, read, err, gen)
	}
	if seqs, read, err := st.CurrentBranchSeqsRead("s"); err != nil || fmt.Sprint(seqs) != "[1 2]" || read != nil {
		t.Fatalf("second read: %v, %+v, %v; want [1 2] and no record (the branch is known)", seqs, read, err)
	}
	pushMore(t, st, "e001", "c%03d", []string{"third"})
	seqs, read, err = st.CurrentBranchSeqsRead("s")
	if err != nil || fmt.Sprint(seqs) != "[1 2 3]" || read == nil || read.Info.LeafSeq != 3 || read.Generation != st.SessionGeneration("s") || read.Generation == gen {
		t.Fatalf("after a change: %v, %+v, %v; want [1 2 3] and the new record under the new generation", seqs, read, err)
	}
}
