package export

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestPiOpensBranchExports exports every branch of every test journal as
// jsonl and has Pi's own SessionManager (internal/testutil/pi073, under Node) open
// it: the current leaf must be the exported leaf, the branch the original
// path, and buildSessionContext what Pi computes for that leaf in the
// original file. It skips when node or the npm package is missing (run
// scripts/setup; internal/testutil/pi073 holds the script).
func TestPiOpensBranchExports(t *testing.T) {
	node, script := testutil.Pi073(t, "export-check.mjs")
	type pcase struct {
		Original string `json:"original"`
		Export   string `json:"export"`
		Leaf     string `json:"leaf"`
		V1       bool   `json:"v1"`
	}
	var cases []pcase
	dir := t.TempDir()
	for _, j := range journals(t) {
		st := openStore(t)
		sid := load(t, st, j.path)
		si, _ := st.Session(sid)
		tr, _ := st.Tree(sid)
		abs, _ := filepath.Abs(j.path)
		for _, leaf := range tr.Leaves() {
			out := exportTo(t, st, sid, Options{Leaf: leaf}, dir, j.name+"-"+safeName(leaf)+".jsonl")
			cases = append(cases, pcase{Original: abs, Export: out, Leaf: leaf, V1: si.Version < 2})
		}
	}
	in, _ := json.Marshal(cases)
	casesFile := filepath.Join(dir, "cases.json")
	os.WriteFile(casesFile, in, 0o644)
	cmd := exec.Command(node, script, casesFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Export   string
		Leaf     string
		Entries  int
		Messages int
		Problems []string
	}
	if err := json.Unmarshal(outb, &results); err != nil {
		t.Fatalf("check.mjs output: %v", err)
	}
	if len(results) != len(cases) {
		t.Fatalf("check.mjs answered for %d exports, want %d", len(results), len(cases))
	}
	for _, r := range results {
		if len(r.Problems) > 0 {
			t.Errorf("%s (leaf %s): %s", filepath.Base(r.Export), r.Leaf, strings.Join(r.Problems, "; "))
		}
	}
	t.Logf("Pi opened %d branch exports", len(results))
}
