package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestJSONLExportIsTheJournalByteForByte imports journals written by the
// real Pi, 0.73.1 and 1.6.0 (version 3 both; 1.6 with system messages,
// context edits, usage entries and system checkpoints in its compactions),
// and exports each whole session with 'export --format jsonl': the output
// is the file, byte for byte.
func TestJSONLExportIsTheJournalByteForByte(t *testing.T) {
	root := testutil.RepoRoot()
	files := map[string]string{
		"pi073-tree":  filepath.Join(root, "journal", "testdata", "pi073", "tree.jsonl"),
		"pi073-agent": filepath.Join(root, "journal", "testdata", "pi073", "agent.jsonl"),
		"pi16-agent":  filepath.Join(root, "journal", "testdata", "pi16", "agent.jsonl"),
		"pi16-tree":   filepath.Join(root, "journal", "testdata", "pi16", "tree.jsonl"),
	}
	e := newTestEnv(t)
	want := map[string][]byte{}
	for name, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(e.sessions, "--home-dev--", name+".jsonl")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[dst] = b
	}
	e.mustCLI("import")
	for path, b := range want {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := e.mustCLI("export", path, "--format", "jsonl")
			if !bytes.Equal([]byte(out), b) {
				t.Errorf("export --format jsonl of %s: %d bytes differ from the journal's %d", filepath.Base(path), len(out), len(b))
			}
		})
	}
}
