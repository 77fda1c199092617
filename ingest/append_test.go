package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendsAreNotTakenForRewrites: after each shape of file below, one
// appended entry is read as an append (one entry added, nothing replaced),
// both for the file's first read and for every later one. A file taken for
// rewritten is read whole again and its session replaced, on every append.
func TestAppendsAreNotTakenForRewrites(t *testing.T) {
	long := strings.Repeat("y", MaxLineBytes+(1<<20)) // skipped as too long
	cases := []struct {
		name  string
		lines []string // after which an entry is appended, twice
		added int      // entries the first read stores
	}{
		{"plain", []string{header("p"), userLine("a", "", "one")}, 1},
		{"a blank first line before the header (Pi reads past it)", []string{"", header("p"), userLine("a", "", "one")}, 1},
		{"a broken first line before the header", []string{"{not json", header("p"), userLine("a", "", "one")}, 1},
		{"CRLF line ends", []string{header("p") + "\r", userLine("a", "", "one") + "\r"}, 1},
		{"the last line read is one too long to keep", []string{header("p"), userLine("a", "", "one"), `{"type":"message","id":"z","parentId":"a","message":{"role":"user","content":"` + long + `"}}`}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			if err := os.WriteFile(p, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			st := openStore(t)
			rep, err := File(st, p, nil)
			if err != nil || rep.Added != c.added {
				t.Fatalf("first read: %+v %v", rep, err)
			}
			for i, id := range []string{"b", "c"} {
				appendLine(t, p, userLine(id, "a", "appended"))
				rep, err := File(st, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Added != 1 || rep.Replaced != 0 {
					t.Fatalf("append %d was read as %+v; want 1 entry added and nothing replaced", i+1, rep)
				}
			}
		})
	}
}

// TestACopyOfAStoredSessionAddsToIt: a second file holding a stored session
// (a backup of the journal, the same journal under another name) adds what
// it has beyond the stored entries to that session instead of becoming a
// second session; a file under the same id whose entries differ is a
// session of its own.
func TestACopyOfAStoredSessionAddsToIt(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t)
	lines := []string{header("cp"), userLine("a", "", "one"), userLine("b", "a", "two")}
	write := func(name string, ls ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	orig := write("orig.jsonl", lines...)
	if rep, err := File(st, orig, nil); err != nil || rep.Added != 2 || rep.Session != "cp" {
		t.Fatalf("original: %+v %v", rep, err)
	}
	backup := write("backup.jsonl", lines...)
	if rep, err := File(st, backup, nil); err != nil || rep.Added != 0 || rep.Dups != 2 || rep.Session != "cp" {
		t.Fatalf("a byte-identical backup: %+v %v; want its 2 entries taken as already stored, in session cp", rep, err)
	}
	longer := write("longer.jsonl", append(lines, userLine("c", "b", "three"))...)
	if rep, err := File(st, longer, nil); err != nil || rep.Added != 1 || rep.Session != "cp" {
		t.Fatalf("a copy with one more entry: %+v %v; want that entry added to cp", rep, err)
	}
	// The session's own journal goes on.
	appendLine(t, orig, userLine("d", "c", "four"))
	if rep, err := File(st, orig, nil); err != nil || rep.Added != 1 || rep.Session != "cp" {
		t.Fatalf("an append to the original: %+v %v", rep, err)
	}
	// The backup is later overwritten with an older, shorter version of
	// the journal: that must not replace the session it was a copy of.
	write("backup.jsonl", lines[:2]...)
	if rep, err := File(st, backup, nil); err != nil || rep.Replaced != 0 || rep.Session != "cp" {
		t.Fatalf("the backup rewritten shorter: %+v %v; want it placed as a copy again, nothing replaced", rep, err)
	}
	appendLine(t, orig, userLine("e", "d", "five"))
	if rep, err := File(st, orig, nil); err != nil || rep.Added != 1 {
		t.Fatalf("an append to the original after the backup's rewrite: %+v %v", rep, err)
	}
	if si, _ := st.Session("cp"); si.File != orig || si.Entries != 5 {
		t.Fatalf("session cp after the backup's rewrite: file %s, %d entries; want the original journal and 5", si.File, si.Entries)
	}
	other := write("other.jsonl", header("cp"), userLine("a", "", "not the same entry"))
	rep, err := File(st, other, nil)
	if err != nil || rep.Session == "cp" || !strings.HasPrefix(rep.Session, "cp~") {
		t.Fatalf("a file whose entry a differs: %+v %v; want a session of its own", rep, err)
	}
	ss, _ := st.Sessions()
	if len(ss) != 2 {
		t.Errorf("%d sessions, want cp and the differing file's", len(ss))
	}
	si, _ := st.Session("cp")
	if si.File != orig || si.Entries != 5 {
		t.Errorf("session cp: file %s, %d entries; want the original journal and 5 entries", si.File, si.Entries)
	}
}
