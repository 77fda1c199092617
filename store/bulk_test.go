package store

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/journal"
)

// bulkBatch is a batch of n searchable user messages of session sid, read
// from path up to offset; first says whether it holds the header.
func bulkBatch(path, sid string, from, n int, offset int64, first bool) *FileBatch {
	fb := &FileBatch{Path: path, State: FileState{Offset: offset}}
	if first {
		fb.Header = &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
	}
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("%s-%04d", sid, i)
		text := "bulk entry " + id
		fb.Entries = append(fb.Entries, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: true, Text: text,
			Raw: []byte(`{"type":"message","id":"` + id + `","message":{"role":"user","content":"` + text + `"}}`)})
	}
	return fb
}

// longTextBatch is bulkBatch with long texts (stored once, in the text
// file) for some entries: one of its own for every sixth, one that many
// entries hold for another sixth.
func longTextBatch(path, sid string, from, n int, offset int64, first bool) *FileBatch {
	fb := bulkBatch(path, sid, from, n, offset, first)
	for k, e := range fb.Entries {
		switch (from + k) % 6 {
		case 2:
			e.Text += strings.Repeat(" long text", 110)
		case 5:
			e.Text = "a long text of many entries" + strings.Repeat(" again", 200)
		default:
			continue
		}
		e.Raw = []byte(`{"type":"message","id":"` + e.ID + `","message":{"role":"user","content":"` + e.Text + `"}}`)
	}
	return fb
}

func openBulk(t *testing.T, dir string, flushBytes int) *Store {
	t.Helper()
	st, err := OpenWith(dir, Options{Bulk: true, FlushBytes: flushBytes})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestBulkStoreShowsEntriesOnlyOnceFlushed: readers (the indexer) see a bulk
// store's commits when they are on disk, not when they are in memory.
func TestBulkStoreShowsEntriesOnlyOnceFlushed(t *testing.T) {
	st := openBulk(t, filepath.Join(t.TempDir(), "store"), 1<<30)
	defer st.Close()
	changed := st.Changed()
	if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 0, 20, 100, true)); err != nil {
		t.Fatal(err)
	}
	if got := st.LastSeq(); got != 0 {
		t.Fatalf("after a commit still in memory, LastSeq = %d; want 0", got)
	}
	select {
	case <-changed:
		t.Fatal("readers were woken for a commit still in memory")
	default:
	}
	if err := st.Persist(); err != nil {
		t.Fatal(err)
	}
	if got := st.LastSeq(); got != 20 {
		t.Fatalf("after Persist, LastSeq = %d; want 20", got)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Persist did not wake readers")
	}
}

// TestBulkStoreFlushesEveryFlushBytes: once FlushBytes are committed a flush
// starts, and its entries are published when it ends, with no Persist.
func TestBulkStoreFlushesEveryFlushBytes(t *testing.T) {
	st := openBulk(t, filepath.Join(t.TempDir(), "store"), 4<<10)
	defer st.Close()
	off := int64(0)
	for i := 0; i < 10; i++ {
		off += 1000
		if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", i*30, 30, off, i == 0)); err != nil {
			t.Fatal(err)
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		ch := st.Changed()       // taken before the check, so no publish is missed
		if st.LastSeq() >= 270 { // the last batch may still be below FlushBytes
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("LastSeq is %d ten seconds after 300 entries were committed in batches over FlushBytes", st.LastSeq())
		}
	}
}

// TestBulkStorePublishesADeletingBatchOnDisk: a batch that drops entries is
// flushed before Apply returns, so that the index, which forgets the
// dropped entries as soon as it sees their markers, never forgets what a
// crash would bring back.
func TestBulkStorePublishesADeletingBatchOnDisk(t *testing.T) {
	st := openBulk(t, filepath.Join(t.TempDir(), "store"), 1<<30)
	defer st.Close()
	// A version 1 journal, then Pi's migration of it in place: the one
	// rewrite that drops entries (they come back under new ids).
	v1 := bulkBatch("/j/a.jsonl", "a", 0, 10, 100, true)
	v1.Header.Version = 1
	if _, err := st.Apply(v1); err != nil {
		t.Fatal(err)
	}
	rewrite := bulkBatch("/j/a.jsonl", "a", 100, 5, 50, true)
	rewrite.Replace = true
	res, err := st.Apply(rewrite)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replaced != 10 {
		t.Fatalf("the rewrite replaced %d entries; want 10", res.Replaced)
	}
	if got := st.LastSeq(); got != 15 {
		t.Fatalf("after a batch that deleted, LastSeq = %d; want 15 (it is flushed and published at once)", got)
	}
	release := st.HoldWrites()
	dels, err := st.Deleted(100)
	release()
	if err != nil || len(dels) != 10 {
		t.Fatalf("Deleted = %v, %v; want the 10 replaced seqs", dels, err)
	}
}

// TestBulkStoreLosesOnlyWhatWasNotFlushed kills a process (this test
// binary, run again) that committed two batches to a bulk store and
// persisted only the first: the store holds the first with its file
// position, and nothing of the second, so a new import reads the second
// again.
func TestBulkStoreLosesOnlyWhatWasNotFlushed(t *testing.T) {
	if dir := os.Getenv("PIH_BULK_CRASH_DIR"); dir != "" {
		st := openBulk(t, dir, 1<<30)
		if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 0, 10, 100, true)); err != nil {
			t.Fatal(err)
		}
		if err := st.Persist(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 10, 10, 200, false)); err != nil {
			t.Fatal(err)
		}
		os.Exit(0) // no Close: what is in memory is lost, as in a kill -9
	}
	dir := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBulkStoreLosesOnlyWhatWasNotFlushed$")
	cmd.Env = append(os.Environ(), "PIH_BULK_CRASH_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the writing process failed: %v\n%s", err, out)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.LastSeq(); got != 10 {
		t.Errorf("after the crash LastSeq = %d; want 10 (the persisted batch only)", got)
	}
	fs, err := st.FileState("/j/a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if fs.Offset != 100 {
		t.Errorf("after the crash the file's offset is %d; want 100, where the persisted batch ended", fs.Offset)
	}
	for i, want := range map[int]bool{0: true, 9: true, 10: false, 19: false} {
		_, err := st.Lookup("a", fmt.Sprintf("a-%04d", i))
		if got := err == nil; got != want {
			t.Errorf("entry a-%04d stored: %v; want %v (err %v)", i, got, want, err)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("lookup a-%04d: %v", i, err)
		}
	}
	// The store goes on from there: the lost batch, read again, takes the
	// seqs that follow.
	res, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 10, 10, 200, false))
	if err != nil || res.Added != 10 || res.LastSeq != 20 {
		t.Fatalf("reading the lost batch again: %+v, %v; want 10 added through seq 20", res, err)
	}
}
