package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// TestTreeIsNeverStaleAfterACommit pushes entries while other goroutines
// load the session's tree: after each push returns, the tree has it.
func TestTreeIsNeverStaleAfterACommit(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					st.Tree("s")
				}
			}
		}()
	}
	parent := ""
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("e%04d", i)
		e := &journal.Entry{Type: "message", Role: "user", ID: id, ParentID: parent, Raw: []byte(`{"id":"` + id + `"}`)}
		if _, err := st.Push("s", h, []*journal.Entry{e}); err != nil {
			t.Fatal(err)
		}
		parent = id
		tr, err := st.Tree("s")
		if err != nil {
			t.Fatal(err)
		}
		if tr.Leaf() != id {
			close(stop)
			wg.Wait()
			t.Fatalf("after pushing %s the tree's leaf is %s", id, tr.Leaf())
		}
	}
	close(stop)
	wg.Wait()
}

// TestWarmBranchesCachesEveryCurrentBranch: after warming, the current
// branch of each session is known without a tree load, and it is the
// branch the tree gives (an abandoned branch's entries are not on it).
func TestWarmBranchesCachesEveryCurrentBranch(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, sid := range []string{"s1", "s2"} {
		h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
		// a1 <- a2 <- a3 (abandoned), a2 <- a4 (the leaf: last in the file)
		var es []*journal.Entry
		for _, e := range [][2]string{{"a1", ""}, {"a2", "a1"}, {"a3", "a2"}, {"a4", "a2"}} {
			es = append(es, &journal.Entry{Type: "message", Role: "user", ID: e[0], ParentID: e[1],
				Raw: []byte(`{"id":"` + e[0] + `"}`), Text: sid + e[0], Searchable: true})
		}
		if _, err := st.Push(sid, h, es); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.WarmBranches(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("WarmBranches = %d, %v; want 2 sessions", n, err)
	}
	for _, sid := range []string{"s1", "s2"} {
		seqs, ok := st.trees.getBranch(sid)
		if !ok {
			t.Fatalf("session %s: no current branch cached after warming", sid)
		}
		var ids []string
		for _, seq := range seqs {
			m, err := st.Meta(seq)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		if got := fmt.Sprint(ids); got != "[a1 a2 a4]" {
			t.Errorf("session %s: current branch %s, want [a1 a2 a4]", sid, got)
		}
	}
}

// TestMetaIsNeverStaleAfterACommit: records read (and so cached) before a
// commit that changes them are not returned after it: a pushed entry found
// in the file, then a rewrite of the file, then the session dropped.
func TestMetaIsNeverStaleAfterACommit(t *testing.T) {
	for _, chunk := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunk cached %v", chunk), func(t *testing.T) { testMetaIsNeverStale(t, chunk) })
	}
}

// testMetaIsNeverStale reads records either alone (from Pebble) or
// from a chunk the sketch cache holds (loaded before each read).
func testMetaIsNeverStale(t *testing.T, chunk bool) {
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	meta := func(seq uint64) (*Meta, error) {
		if chunk {
			if _, err := st.chunkFor(seq / sketchChunk); err != nil {
				t.Fatal(err)
			}
		}
		return st.Meta(seq)
	}
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	entry := func(id, text string, line int) *journal.Entry {
		return &journal.Entry{Type: "message", Role: "user", ID: id, Line: line,
			Raw: []byte(`{"id":"` + id + `","t":"` + text + `"}`), Text: text, Searchable: true}
	}
	if _, err := st.Push("s", h, []*journal.Entry{entry("a", "hello", 0)}); err != nil {
		t.Fatal(err)
	}
	m, err := meta(1)
	if err != nil || m.Flags&FlagPushed == 0 || m.Line != 0 {
		t.Fatalf("pushed entry's record = %+v, %v; want the pushed flag and no line", m, err)
	}
	if _, err := st.Apply(&FileBatch{Path: "/x/s.jsonl", Header: h, Entries: []*journal.Entry{entry("a", "hello", 2)},
		State: FileState{Offset: 10}}); err != nil {
		t.Fatal(err)
	}
	if m, err = meta(1); err != nil || m.Flags&FlagPushed != 0 || m.Line != 2 {
		t.Fatalf("after the file confirmed it, record = %+v, %v; want no pushed flag, line 2", m, err)
	}
	if _, err := st.DropSession("s"); err != nil {
		t.Fatal(err)
	}
	if m, err = meta(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after dropping the session, Meta(1) = %+v, %v; want ErrNotFound", m, err)
	}
}
