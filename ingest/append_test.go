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
