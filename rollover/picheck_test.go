package rollover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// readJournal reads a journal file with package journal and returns the
// active path (root first), as the API layer would hand it over.
func readJournal(t testing.TB, file string) []*journal.Entry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var p journal.Parser
	var entries []*journal.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		_, e, err := p.Line(sc.Bytes())
		if err == journal.ErrNoHeader {
			t.Fatalf("%s: %v", file, err)
		}
		if e != nil {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	tree := journal.NewTree(entries)
	path, err := tree.Path(tree.Leaf())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// piResult is what internal/testutil/pi073/rollover-check.mjs prints for one journal.
type piResult struct {
	File      string `json:"file"`
	Empty     bool   `json:"empty"`
	Types     []string
	Estimates []*int
	Context   []struct {
		Role   string
		Tokens int
	}
	Cuts []struct {
		Start, Keep, FirstKept, TurnStart int
		Split                             bool
	}
}

// crossCheckJournals are the journals compared with Pi: this package's own
// and, when the shared fixtures are present, those.
func crossCheckJournals(t *testing.T) []string {
	files, _ := filepath.Glob("testdata/journals/*.jsonl")
	fixtures, _ := filepath.Glob("../../shared/fixtures/pi/*.jsonl")
	if len(fixtures) == 0 {
		t.Log("shared Pi fixtures absent; checking this package's journals only")
	}
	return append(files, fixtures...)
}

// picorpusJournals writes a small corpus with ../shared/tools/picorpus (the
// project's generator of realistic Pi journals, with compactions, branches
// and notebook entries) and returns its files; none when the tool is absent
// or in -short mode.
func picorpusJournals(t *testing.T) []string {
	tool := filepath.Join("..", "..", "shared", "tools", "picorpus")
	if testing.Short() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(tool, "main.go")); err != nil {
		t.Log("picorpus absent; no generated sessions in the cross-check")
		return nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	out := t.TempDir()
	cmd := exec.Command(goBin, "run", ".", "-out", out, "-entries", "3000", "-seed", "11")
	cmd.Dir = tool
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("picorpus: %v\n%s", err, b)
	}
	var files []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("picorpus wrote no journals")
	}
	return files
}

// TestPiCrossCheck runs Pi's own findCutPoint, estimateTokens and
// buildSessionContext (internal/testutil/pi073/rollover-check.mjs, under Node) and requires the Go
// port to agree on every journal. It skips when node or the installed
// package is missing (failing under PI_HISTORY_REQUIRE_TOOLS, as in CI).
func TestPiCrossCheck(t *testing.T) {
	node, script := testutil.Pi073(t, "rollover-check.mjs")
	files := append(crossCheckJournals(t), picorpusJournals(t)...)
	cmd := exec.Command(node, append([]string{script}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, stderr.String())
	}
	var results []piResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("check.mjs output: %v", err)
	}
	if len(results) != len(files) {
		t.Fatalf("check.mjs answered for %d files, want %d", len(results), len(files))
	}
	for _, r := range results {
		t.Run(filepath.Base(r.File), func(t *testing.T) {
			path := readJournal(t, r.File)
			if r.Empty {
				if len(path) != 0 {
					t.Fatalf("Pi sees no entries; Go sees %d", len(path))
				}
				return
			}
			if len(path) != len(r.Types) {
				t.Fatalf("path length: Go %d, Pi %d", len(path), len(r.Types))
			}
			for i, e := range path {
				if e.Type != r.Types[i] {
					t.Errorf("path[%d] type: Go %s, Pi %s", i, e.Type, r.Types[i])
				}
				if r.Estimates[i] == nil {
					continue
				}
				m, _ := EntryMessage(e)
				if got := EstimateTokens(m); got != *r.Estimates[i] {
					t.Errorf("estimateTokens(path[%d] %s/%s): Go %d, Pi %d", i, e.Type, e.Role, got, *r.Estimates[i])
				}
			}
			ctx := BuildContext(path)
			if len(ctx) != len(r.Context) {
				t.Fatalf("context length: Go %d, Pi %d", len(ctx), len(r.Context))
			}
			for i, m := range ctx {
				if m.Role != r.Context[i].Role || EstimateTokens(m) != r.Context[i].Tokens {
					t.Errorf("context[%d]: Go %s/%d, Pi %s/%d", i, m.Role, EstimateTokens(m), r.Context[i].Role, r.Context[i].Tokens)
				}
			}
			for _, c := range r.Cuts {
				got := FindCutPoint(path, c.Start, len(path), c.Keep)
				want := CutPoint{FirstKeptIndex: c.FirstKept, TurnStartIndex: c.TurnStart, IsSplitTurn: c.Split}
				if got != want {
					t.Errorf("findCutPoint(start %d, keep %d): Go %+v, Pi %+v", c.Start, c.Keep, got, want)
				}
			}
			// Smoke: a rollover on this path, with a notebook reviewed
			// through its last entry, either succeeds within its budgets
			// or is refused with a blocker; it never panics.
			nb := &notebook.State{Revision: 1, Sections: testSections, ReviewedThrough: path[len(path)-1].ID}
			cfg := DefaultConfig()
			cfg.SessionIndexMaxTokens = 200
			if c, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonHost, Pi: PiSettings{KeepRecentTokens: 300}, Config: cfg}); err == nil {
				_, idx, _ := strings.Cut(c.Summary, "## Earlier user messages")
				idx, _, _ = strings.Cut(idx, "\n\n")
				cost := 0
				for _, l := range strings.Split(idx, "\n")[1:] {
					cost += lineTokens(l)
				}
				if cost > 200 && strings.Count(idx, "\n") > 1 {
					t.Errorf("index costs %d tokens over a budget of 200", cost)
				}
			} else if r := (*Refusal)(nil); !errors.As(err, &r) {
				t.Errorf("rollover: %v", err)
			}
			if p, err := PrepareCut(path, 20000); err == nil {
				found := false
				for _, c := range r.Cuts {
					found = found || (c.Start == p.BoundaryStart)
				}
				if !found {
					t.Errorf("PrepareCut boundary %d is not one Pi's prepareCompaction would use", p.BoundaryStart)
				}
			}
		})
	}
}
