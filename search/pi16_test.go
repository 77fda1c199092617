package search

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pi16IDs reads the entry ids make-fixtures.mjs recorded for the Pi 1.6
// tree fixture.
func pi16IDs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "journal", "testdata", "pi16", "FIXTURES.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]struct {
		IDs map[string]string `json:"ids"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f["tree"].IDs
}

// TestPi16EntriesListReadAndSearchByTheirClass imports the journals Pi
// 1.6.0 wrote and checks each new kind where the allowlist puts it:
// system messages are listed with what they change and read rendered,
// never found by search; a context edit's replacement is found; usage
// entries and omissions are outside the allowlisted reads.
func TestPi16EntriesListReadAndSearchByTheirClass(t *testing.T) {
	dir := filepath.Join("..", "journal", "testdata", "pi16")
	e := newEnv(t)
	tree := e.importFile(t, filepath.Join(dir, "tree.jsonl"))
	agent := e.importFile(t, filepath.Join(dir, "agent.jsonl"))
	e.catchUp(t)
	ctx := context.Background()
	id := pi16IDs(t)

	list, err := e.eng.List(ctx, &ListRequest{Session: tree, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	previews := map[string]string{}
	for _, it := range list.Items {
		previews[it.Entry] = it.Preview
	}
	for key, want := range map[string]string{
		"sys0": "system: sections preamble, cwd; +tools read",
		"sys2": "system: sections preamble; -tools read",
		"ce1":  "context_edit(" + id["a4"] + "): omitted from the model's context",
		"ce2":  "context_edit(" + id["t1"] + "): [cart_test.go: elided]",
		"use":  "usage(cache_warm): faux/faux-1, 1801 tokens",
		"k1":   "compaction: ## Goal Make TestCheckout pass by changing the test.",
	} {
		if got := previews[id[key]]; got != want {
			t.Errorf("%s preview %q, want %q", key, got, want)
		}
	}

	// A system message is read (allowlisted too) as its rendered prompt.
	r, err := e.eng.Read(ctx, &ReadRequest{Session: tree, Entry: id["sys0"], Allowlisted: true})
	if err != nil {
		t.Fatalf("allowlisted read of a system message: %v", err)
	}
	want := "You are a careful coding assistant.\n## preamble\nAnswer briefly.\n## cwd\nCurrent working directory: /home/dev/shop\ntools added: read"
	if r.Text != want {
		t.Errorf("system message read as %q, want %q", r.Text, want)
	}
	// Usage and omissions are outside the allowlist; next to an entry they are left out.
	for _, key := range []string{"use", "ce1"} {
		if _, err := e.eng.Read(ctx, &ReadRequest{Session: tree, Entry: id[key], Allowlisted: true}); err == nil {
			t.Errorf("allowlisted read of %s must be refused", key)
		}
	}
	r, err = e.eng.Read(ctx, &ReadRequest{Session: tree, Entry: id["ce2"], Allowlisted: true, Context: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "[cart_test.go: elided]" || len(r.Before) != 0 || len(r.After) != 0 {
		t.Errorf("read of a replacement: %q, neighbours %+v %+v (the omission before and the usage after are hidden)", r.Text, r.Before, r.After)
	}

	// Search: the prompt's words are not found, the replacement is, and so is the edited target's own text.
	for needle, hits := range map[string]int{
		"Answer in one line":        0, // a system section
		"careful coding assistant":  0, // system content, also in both compaction checkpoints
		"[cart_test.go: elided]":    1,
		"/* expects ErrCartEmpty":   1, // the tool result the edit replaced keeps its text
		"A first, wrong attempt":    1, // so does the omitted answer
		"Use tabs. Keep the public": 0, // agent.jsonl's house rules
		"<read-files>":              1, // Pi's summary of the agent run
	} {
		n := 0
		for _, s := range []string{tree, agent} {
			res, err := e.eng.Search(ctx, &Request{Needle: needle, Scope: ScopeSession, Session: s, Count: true})
			if err != nil {
				t.Fatal(err)
			}
			n += len(res.Hits)
			for _, h := range res.Hits {
				if h.Role == "system" || h.Type == "usage" {
					t.Errorf("%q hit a %s %s entry", needle, h.Type, h.Role)
				}
			}
		}
		if n != hits {
			t.Errorf("%q: %d hits, want %d", needle, n, hits)
		}
	}

	// Filters: context edits can be searched for by type; the system role never has searchable text.
	res, err := e.eng.Search(ctx, &Request{Needle: "elided", Scope: ScopeSession, Session: tree, Types: []string{"context_edit"}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Entry != id["ce2"] {
		t.Errorf("types=context_edit: %v %+v", err, res)
	}
	if _, err := e.eng.Search(ctx, &Request{Needle: "Answer", Scope: ScopeSession, Session: tree, Roles: []string{"system"}}); err == nil ||
		!strings.Contains(err.Error(), "never has searchable text") {
		t.Errorf("roles=system must be refused as never searchable, got %v", err)
	}

	// The windows of the real run: the rollover boundary (an extension's) and Pi's compaction each open one.
	_, ws, err := e.eng.Windows(ctx, agent, "")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, w := range ws {
		kinds = append(kinds, w.Kind)
	}
	if strings.Join(kinds, ",") != "start,hook,compaction" {
		t.Errorf("agent.jsonl windows started by %v", kinds)
	}
}
