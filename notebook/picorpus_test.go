package notebook

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// TestReadPicorpus rebuilds the notebook at many leaves of a corpus written
// by picorpus (../shared/tools/picorpus, which writes note-context/notebook
// entries the way the extension does) and checks it against an independent
// reading: the last notebook entry on the path, decoded by the journal
// package. It also checks that a review written at each leaf reads back as
// reported.
func TestReadPicorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a corpus")
	}
	tool := filepath.Join(sharedDir, "tools", "picorpus")
	if _, err := os.Stat(filepath.Join(tool, "main.go")); err != nil {
		t.Skipf("picorpus absent (%v)", err)
	}
	out := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command (%v)", err)
	}
	cmd := exec.Command(goBin, "run", ".", "-out", out, "-entries", "3000", "-seed", "7")
	cmd.Dir = tool
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("picorpus: %v\n%s", err, b)
	}
	var files []string
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("picorpus wrote no sessions")
	}
	var checked, withNotebook int
	for _, file := range files {
		s := loadJournal(t, file)
		leaves := s.tree.Leaves()
		for i, e := range s.tree.Entries {
			if i%40 == 0 {
				leaves = append(leaves, e.ID)
			}
		}
		for _, leaf := range leaves {
			path := s.path(t, leaf)
			st := Read(path)
			want, wantID, count := lastNotebook(path)
			checked++
			if st.EntryID != wantID {
				t.Fatalf("%s @%s: notebook entry %q, want %q", filepath.Base(file), leaf, st.EntryID, wantID)
			}
			if n := len(Revisions(path)); n != count {
				t.Errorf("%s @%s: %d revisions, want %d", filepath.Base(file), leaf, n, count)
			}
			if wantID == "" {
				continue
			}
			withNotebook++
			got := make([]journal.Section, len(st.Sections))
			for i, sec := range st.Sections {
				got[i] = journal.Section{Name: sec.Name, Text: sec.Text}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s @%s: sections differ\n got %v\nwant %v", filepath.Base(file), leaf, got, want)
			}
			res, rec, err := Write(path, WriteRequest{Reviewed: true, ExpectedRevision: &st.Revision}, Limits{MaxBytes: 1 << 20, MaxTokens: 1 << 20})
			if err != nil {
				t.Fatalf("%s @%s: review: %v", filepath.Base(file), leaf, err)
			}
			back := Read(appendCustom(t, path, NotebookType, rec))
			if back.Revision != res.Revision || back.Bytes != res.Bytes || !reflect.DeepEqual(back.Sections, st.Sections) || res.Changed {
				t.Fatalf("%s @%s: review read back %+v, result %+v", filepath.Base(file), leaf, back, res)
			}
		}
	}
	if withNotebook == 0 {
		t.Fatalf("no leaf of %d had a notebook", checked)
	}
	t.Logf("%d sessions, %d leaves checked, %d with a notebook", len(files), checked, withNotebook)
}

// lastNotebook is the oracle: the sections of the last notebook entry on the
// path as the journal package reads them, its id, and how many there are.
func lastNotebook(path []*journal.Entry) ([]journal.Section, string, int) {
	var secs []journal.Section
	var id string
	var n int
	for _, e := range path {
		if e.Type != "custom" || e.CustomType != journal.NotebookType {
			continue
		}
		var line struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(e.Raw, &line) != nil {
			continue
		}
		secs, id = journal.NotebookSections(line.Data), e.ID
		n++
	}
	return secs, id, n
}
