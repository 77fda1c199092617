package ingest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

type fixtureFacts struct {
	Entries    int      `json:"entries"`
	Leaf       string   `json:"leaf"`
	ActivePath []string `json:"activePath"`
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestSharedFixturesReproduceTheirFacts(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "fixtures", "pi")
	raw, err := os.ReadFile(filepath.Join(dir, "FIXTURES.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts map[string]fixtureFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	for name, want := range facts {
		t.Run(name, func(t *testing.T) {
			st := openStore(t)
			rep, err := File(st, filepath.Join(dir, name+".jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Added != want.Entries {
				t.Fatalf("added %d entries, want %d (problems %v)", rep.Added, want.Entries, rep.Problems)
			}
			if want.Leaf == "" {
				return
			}
			tr, err := st.Tree(rep.Session)
			if err != nil {
				t.Fatal(err)
			}
			legacy := strings.HasPrefix(name, "legacy")
			if !legacy && tr.Leaf() != want.Leaf {
				t.Errorf("leaf %s, want %s", tr.Leaf(), want.Leaf)
			}
			path, err := tr.Path(tr.Leaf())
			if err != nil {
				t.Fatal(err)
			}
			if len(path) != len(want.ActivePath) {
				t.Fatalf("active path has %d entries, want %d", len(path), len(want.ActivePath))
			}
			if !legacy {
				var got []string
				for _, e := range path {
					got = append(got, e.ID)
				}
				if !reflect.DeepEqual(got, want.ActivePath) {
					t.Errorf("active path %v, want %v", got, want.ActivePath)
				}
			}
		})
	}
}

func TestLegacyV1GetsDeterministicIDs(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "fixtures", "pi")
	read := func() []string {
		st := openStore(t)
		rep, err := File(st, filepath.Join(dir, "legacy-v1.jsonl"), nil)
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := st.Tree(rep.Session)
		var ids []string
		for _, e := range tr.Entries {
			ids = append(ids, e.ID)
		}
		return ids
	}
	a, b := read(), read()
	if !reflect.DeepEqual(a, b) || len(a) != 6 {
		t.Fatalf("v1 ids differ between reads or wrong count: %v vs %v", a, b)
	}
	// The compaction's firstKeptEntryIndex 3 names the entry on line index 3.
	if journal.V1ID("legacy-v1", 3) != a[2] {
		t.Errorf("firstKeptEntryIndex 3 should map to the third entry's id %s", a[2])
	}
}

// TestRewrittenAndMovedFilesKeepTheSession: a line rewritten in place (as
// Pi's v2 to v3 migration does) gives its entry the new bytes, in its
// place; nothing is dropped or doubled; a moved file takes its session
// along.
func TestRewrittenAndMovedFilesKeepTheSession(t *testing.T) {
	dir := t.TempDir()
	text := testutil.Journal(testutil.GenOptions{Session: "rw", Entries: 40, Seed: 9, Tokens: true})
	p := testutil.WriteFile(t, dir, "a.jsonl", text)
	st := openStore(t)
	rep, err := File(st, p, nil)
	if err != nil || rep.Added != 40 {
		t.Fatalf("first read: %+v %v", rep, err)
	}
	// Rewrite one line in place (as a migration would).
	changed := strings.Replace(text, "tok-rw-5 ", "tok-rw-5-changed ", 1)
	testutil.WriteFile(t, dir, "a.jsonl", changed)
	rep, err = File(st, p, nil)
	if err != nil || !rep.Rewritten || rep.Added != 0 || rep.Replaced != 1 || rep.Dups != 39 {
		t.Fatalf("rewrite: %+v %v; want 1 entry given new bytes, 39 found the same", rep, err)
	}
	si, _ := st.Session("rw")
	if si.Entries != 40 {
		t.Fatalf("after rewrite the session has %d entries, want 40", si.Entries)
	}
	metas, _ := st.SessionMetas("rw")
	if len(metas) != 40 {
		t.Fatalf("stored %d entries, want 40", len(metas))
	}
	// Move the file: the session follows it, nothing is lost or doubled.
	q := filepath.Join(dir, "b.jsonl")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	rep, err = File(st, q, nil)
	if err != nil || rep.Added != 40 {
		t.Fatalf("moved: %+v %v", rep, err)
	}
	si, _ = st.Session("rw")
	if si.Entries != 40 || si.File != q || si.Header == "" {
		t.Fatalf("after move: %d entries, file %s, header %q", si.Entries, si.File, si.Header)
	}
}

func TestHalfWrittenLineWaitsAndBadLinesAreSkipped(t *testing.T) {
	dir := t.TempDir()
	full := testutil.Journal(testutil.GenOptions{Session: "tw", Entries: 10, Seed: 3})
	lines := strings.SplitAfter(full, "\n")
	head := strings.Join(lines[:5], "") + "{not json}\n" + strings.Join(lines[5:8], "")
	last := lines[8]
	p := testutil.WriteFile(t, dir, "t.jsonl", head+last[:len(last)/2])
	st := openStore(t)
	rep, err := File(st, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 7 || len(rep.Problems) != 1 || rep.Problems[0].Line != 6 || rep.Pending == 0 {
		t.Fatalf("first read: added %d problems %v pending %d", rep.Added, rep.Problems, rep.Pending)
	}
	testutil.WriteFile(t, dir, "t.jsonl", head+last+lines[9]+lines[10])
	rep, err = File(st, p, nil)
	if err != nil || rep.Added != 3 || rep.Pending != 0 {
		t.Fatalf("after completion: %+v %v", rep, err)
	}
}

func TestOddFilesDoNotCrashOrStore(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t)
	empty := testutil.WriteFile(t, dir, "empty.jsonl", "")
	noHeader := testutil.WriteFile(t, dir, "nohdr.jsonl", `{"type":"message","id":"a"}`+"\n")
	for _, p := range []string{empty, noHeader} {
		rep, err := File(st, p, nil)
		if err != nil || rep.Added != 0 {
			t.Errorf("%s: %+v %v", p, rep, err)
		}
	}
	if _, err := File(st, filepath.Join(dir, "missing.jsonl"), nil); err == nil {
		t.Error("a missing file must be an error")
	}
	if _, err := File(st, dir, nil); err == nil {
		t.Error("a directory must be an error")
	}
	ss, _ := st.Sessions()
	if len(ss) != 0 {
		t.Errorf("odd files created sessions: %v", ss)
	}
}

func TestHugeLineIsStored(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 50<<20)
	text := `{"type":"session","version":3,"id":"big"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"` + big + `"}}` + "\n" +
		`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"after"}}` + "\n"
	p := testutil.WriteFile(t, dir, "big.jsonl", text)
	st := openStore(t)
	rep, err := File(st, p, nil)
	if err != nil || rep.Added != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestPushedEntriesSurviveTheFirstReadOfTheFile(t *testing.T) {
	dir := t.TempDir()
	text := testutil.Journal(testutil.GenOptions{Session: "pu", Entries: 3, Seed: 4})
	lines := strings.SplitAfter(text, "\n")
	st := openStore(t)
	var p journal.Parser
	h, _, _ := p.Line([]byte(strings.TrimSuffix(lines[0], "\n")))
	var es []*journal.Entry
	for _, l := range lines[1:4] {
		_, e, err := p.Line([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if _, err := st.Push("pu", h, es); err != nil {
		t.Fatal(err)
	}
	// The file so far holds only the first entry.
	path := testutil.WriteFile(t, dir, "pu.jsonl", lines[0]+lines[1])
	rep, err := File(st, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Confirmed != 1 || rep.Added != 0 || rep.Replaced != 0 {
		t.Fatalf("first read: %+v", rep)
	}
	si, _ := st.Session("pu")
	if si.Entries != 3 {
		t.Fatalf("pushed entries were lost: %d entries, want 3", si.Entries)
	}
	testutil.WriteFile(t, dir, "pu.jsonl", lines[0]+lines[1]+lines[2]+lines[3])
	rep, _ = File(st, path, nil)
	si, _ = st.Session("pu")
	if rep.Confirmed != 2 || si.Entries != 3 {
		t.Fatalf("second read: %+v, %d entries", rep, si.Entries)
	}
}
