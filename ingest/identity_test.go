package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAJournalOverwrittenByAnotherSessionKeepsBoth: a journal file whose
// header comes to name another session (another journal copied over it)
// is the old session ending and the new one beginning. The old session's
// entries stay stored under its own id, as history, and no longer name the
// file; the new content is stored under the new header's id, never the
// old one; and what is appended afterwards goes to the new session.
func TestAJournalOverwrittenByAnotherSessionKeepsBoth(t *testing.T) {
	journalOf := func(sid, prefix string, n int) string {
		lines := []string{header(sid)}
		parent := ""
		for i := range n {
			id := prefix + string(rune('1'+i))
			lines = append(lines, userLine(id, parent, "entry "+id+" of "+sid))
			parent = id
		}
		return strings.Join(lines, "\n") + "\n"
	}
	cases := []struct {
		name      string
		otherFile bool // the new content is also another stored journal (cp other.jsonl existing.jsonl)
	}{
		{"a copy of another stored journal", true},
		{"a session stored nowhere else", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t)
			a := filepath.Join(dir, "a.jsonl")
			if err := os.WriteFile(a, []byte(journalOf("sa", "a", 3)), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := File(st, a, nil); err != nil {
				t.Fatal(err)
			}
			other := journalOf("sb", "b", 2)
			if c.otherFile {
				b := filepath.Join(dir, "b.jsonl")
				if err := os.WriteFile(b, []byte(other), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := File(st, b, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(a, []byte(other), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := File(st, a, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Session != "sb" || rep.Replaced != 0 {
				t.Errorf("the overwritten journal was read as %+v; want session sb, nothing replaced", rep)
			}
			for _, id := range []string{"a1", "a2", "a3"} {
				if _, err := st.Lookup("sa", id); err != nil {
					t.Errorf("entry %s of the old session sa is gone: %v", id, err)
				}
			}
			sa, err := st.Session("sa")
			if err != nil {
				t.Fatalf("the old session sa is gone: %v", err)
			}
			if sa.Entries != 3 || sa.File == a || !strings.Contains(sa.Header, `"id":"sa"`) {
				t.Errorf("old session after the overwrite: %d entries, file %q, header %s; want 3 entries, not %s, its own header", sa.Entries, sa.File, sa.Header, a)
			}
			for _, id := range []string{"b1", "b2"} {
				if _, err := st.Lookup("sb", id); err != nil {
					t.Errorf("entry %s is not stored under the new session's id sb: %v", id, err)
				}
				if _, err := st.Lookup("sa", id); err == nil {
					t.Errorf("entry %s of sb is stored under the old session's id sa", id)
				}
			}
			sb, err := st.Session("sb")
			if err != nil {
				t.Fatalf("the new session sb is not stored: %v", err)
			}
			if !strings.Contains(sb.Header, `"id":"sb"`) || sb.Entries != 2 {
				t.Errorf("new session: %d entries, header %s; want 2 and its own header", sb.Entries, sb.Header)
			}
			appendLine(t, a, userLine("b9", "b2", "appended after the overwrite"))
			if rep, err := File(st, a, nil); err != nil || rep.Session != "sb" || rep.Added != 1 {
				t.Fatalf("an append after the overwrite: %+v %v; want 1 entry added to sb", rep, err)
			}
			if _, err := st.Lookup("sb", "b9"); err != nil {
				t.Errorf("the appended entry is not in sb: %v", err)
			}
		})
	}
}

// TestARewrittenJournalNeverDropsStoredEntries: a journal rewritten under
// the same session header keeps every stored entry: those still in the
// file take its bytes, in place; the others stay, as history. Only Pi's own
// migration of a version 1 journal, whose entries come back under new ids,
// replaces them, so that the session is not doubled.
func TestARewrittenJournalNeverDropsStoredEntries(t *testing.T) {
	v1Header := `{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
	v1Line := func(text string) string {
		return `{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"` + text + `"}}`
	}
	cases := []struct {
		name          string
		before, after []string
		entries       int               // stored afterwards
		replaced      int               // entries dropped or given new bytes
		texts         map[string]string // entry id: a text its stored line holds
	}{
		{"a backup put back, shorter",
			[]string{header("s"), userLine("a1", "", "one"), userLine("a2", "a1", "two"), userLine("a3", "a2", "three")},
			[]string{header("s"), userLine("a1", "", "one")},
			3, 0, map[string]string{"a3": "three"}},
		{"a line edited",
			[]string{header("s"), userLine("a1", "", "one"), userLine("a2", "a1", "two")},
			[]string{header("s"), userLine("a1", "", "one"), userLine("a2", "a1", "two, edited")},
			2, 1, map[string]string{"a2": "two, edited"}},
		{"other entries under the same header",
			[]string{header("s"), userLine("a1", "", "one"), userLine("a2", "a1", "two")},
			[]string{header("s"), userLine("b1", "", "another one")},
			3, 0, map[string]string{"a1": "one", "b1": "another one"}},
		{"Pi's migration of a version 1 journal",
			[]string{v1Header, v1Line("one"), v1Line("two"), v1Line("three")},
			[]string{header("s"), userLine("x1", "", "one"), userLine("x2", "x1", "two"), userLine("x3", "x2", "three")},
			3, 3, map[string]string{"x3": "three"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t)
			p := filepath.Join(t.TempDir(), "s.jsonl")
			for i, lines := range [][]string{c.before, c.after} {
				if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				rep, err := File(st, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && (!rep.Rewritten || rep.Replaced != c.replaced || rep.Session != "s") {
					t.Errorf("the rewrite was read as %+v; want rewritten, %d replaced, session s", rep, c.replaced)
				}
			}
			si, err := st.Session("s")
			if err != nil {
				t.Fatal(err)
			}
			metas, err := st.SessionMetas("s")
			if err != nil {
				t.Fatal(err)
			}
			if si.Entries != c.entries || len(metas) != c.entries {
				t.Errorf("after the rewrite: %d entries counted, %d stored; want %d", si.Entries, len(metas), c.entries)
			}
			for id, text := range c.texts {
				seq, err := st.Lookup("s", id)
				if err != nil {
					t.Errorf("entry %s: %v", id, err)
					continue
				}
				if raw, err := st.Raw(seq); err != nil || !strings.Contains(string(raw), text) {
					t.Errorf("entry %s holds %s (%v); want %q in it", id, raw, err, text)
				}
			}
		})
	}
}
