package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// TestTreeIsNeverStaleAfterACommit pushes entries while other goroutines
// load the session's tree: after each push returns, the tree has it.
func TestTreeIsNeverStaleAfterACommit(t *testing.T) {
	st := openTemp(t)
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
// branch the tree gives (an abandoned branch's entries are not on it); the
// trees loaded to work them out are not kept (a million entries' worth of
// records and entries cost the collector ~100 ms a cycle).
func TestWarmBranchesCachesEveryCurrentBranch(t *testing.T) {
	st := openTemp(t)
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
		if st.trees.get(sid) != nil {
			t.Errorf("session %s: its tree stayed cached after warming", sid)
		}
	}
	// A tree asked for is still kept.
	if _, err := st.Tree("s1"); err != nil || st.trees.get("s1") == nil {
		t.Fatalf("Tree(s1): %v, cached %v; want it cached", err, st.trees.get("s1") != nil)
	}
}

// TestMetaIsNeverStaleAfterACommit: a record read before a commit that
// changes it is not returned after it: a pushed entry found in the file,
// then the session dropped.
func TestMetaIsNeverStaleAfterACommit(t *testing.T) {
	st := openTemp(t)
	meta := st.Meta
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

// TestSessionMetasReadsRecordsThroughOrderKeys: a session's order keys hold
// no copy of its records (they are read from the entries' own keys), the
// records come back in file order when other sessions' entries sit between
// them, order keys of older stores that still hold the record are read as
// they are, and an order key whose record is missing is an error naming
// the seq, not a short list.
func TestSessionMetasReadsRecordsThroughOrderKeys(t *testing.T) {
	st := openTemp(t)
	push := func(sid string, ids ...string) {
		t.Helper()
		h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
		var es []*journal.Entry
		for _, id := range ids {
			es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, Raw: []byte(`{"id":"` + id + `"}`), Text: "text of " + id, Searchable: true})
		}
		if _, err := st.Push(sid, h, es); err != nil {
			t.Fatal(err)
		}
	}
	push("a", "a1", "a2", "a3") // seqs 1-3
	push("b", "b1", "b2")       // 4-5
	push("a", "a4")             // 6
	push("b", "b3")             // 7
	push("a", "a5", "a6")       // 8-9
	ids := func(sid string) string {
		t.Helper()
		ms, err := st.SessionMetas(sid)
		if err != nil {
			t.Fatalf("SessionMetas(%s): %v", sid, err)
		}
		var out []string
		for _, m := range ms {
			if m.Session != sid {
				t.Errorf("SessionMetas(%s) returned entry %s of session %s", sid, m.ID, m.Session)
			}
			out = append(out, fmt.Sprintf("%s@%d", m.ID, m.Seq))
		}
		return strings.Join(out, " ")
	}
	if got, want := ids("a"), "a1@1 a2@2 a3@3 a4@6 a5@8 a6@9"; got != want {
		t.Errorf("session a = %s, want %s", got, want)
	}
	if got, want := ids("b"), "b1@4 b2@5 b3@7"; got != want {
		t.Errorf("session b = %s, want %s", got, want)
	}
	for seq := uint64(1); seq <= 9; seq++ {
		m, err := st.Meta(seq)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := st.get(orderKey(m.Session, seq)); err != nil || len(v) != 0 {
			t.Errorf("order key of seq %d holds %d bytes (%v), want none", seq, len(v), err)
		}
	}

	// An older store's order key holds the record; a changed copy shows it
	// is the one read.
	m, err := st.Meta(6)
	if err != nil {
		t.Fatal(err)
	}
	old := *m
	old.ID = "a4-as-stored-before"
	if err := st.db.Set(orderKey("a", 6), old.encode(nil), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := ids("a"), "a1@1 a2@2 a3@3 a4-as-stored-before@6 a5@8 a6@9"; got != want {
		t.Errorf("session a with an older order key = %s, want %s", got, want)
	}

	if err := st.db.Delete(seqKey(tagEntry, 8), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SessionMetas("a"); err == nil || !strings.Contains(err.Error(), "seq 8") {
		t.Errorf("SessionMetas with a record missing = %v, want an error naming seq 8", err)
	}
}

// Tables end where a key kind ends, so that tables of the kinds keyed by a
// growing seq are moved down the levels rather than rewritten: after
// several flushes and a compaction, no table spans two kinds, and some
// were moved.
func TestTablesHoldOneKindOfKeyEach(t *testing.T) {
	st := openTemp(t)
	for f := range 6 {
		sid := fmt.Sprintf("s%d", f)
		h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
		var es []*journal.Entry
		for i := range 300 {
			id := fmt.Sprintf("%s-%d", sid, i)
			text := fmt.Sprintf("entry %d of %s %s", i, sid, strings.Repeat("padding ", 40))
			es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: true, Text: text,
				Raw: []byte(fmt.Sprintf(`{"id":%q,"text":%q}`, id, text))})
		}
		if _, err := st.Push(sid, h, es); err != nil {
			t.Fatal(err)
		}
		if err := st.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	levels, err := st.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for l, ts := range levels {
		for _, tb := range ts {
			tables++
			lo, hi := tb.Smallest.UserKey, tb.Largest.UserKey
			if lo[0] != hi[0] {
				t.Errorf("level %d: table %v holds keys from %q to %q", l, tb.FileNum, lo[:1], hi[:1])
			}
		}
	}
	if m := st.db.Metrics(); tables < 6 || m.Compact.MoveCount == 0 {
		t.Errorf("%d tables, %d moved by compactions: want kinds in tables of their own, moved down", tables, m.Compact.MoveCount)
	}
}

// openTemp opens a new store in a temporary directory, closed when the
// test ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
