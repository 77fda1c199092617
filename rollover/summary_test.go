package rollover

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// threeWindows builds a session that rolled over twice, with user messages
// that exercise the extraction rules in the earlier windows, and returns the
// path and the current notebook. The third window has enough work to drop.
func threeWindows(t *testing.T) ([]*journal.Entry, *notebook.State) {
	b := newJB(t)
	b.add("model_change", map[string]any{"provider": "faux", "modelId": "faux-1"})
	b.turn("The checkout test fails with ErrCartEmpty; find out why.", 2000)
	b.userImages("Here is the CI page.", 2)
	b.assistant("I see the failure.", 0)
	b.turn("Here is the log:\n{\"level\":\"error\",\"msg\":\"cart empty\"}\n{\"level\":\"info\",\"msg\":\"retry\"}\nwhy does it retry?", 2000)
	b.notes(1, testSections...)
	kept := b.turn("Context handoff (from the planner): finish the cart work", 100)
	b.compaction(kept, 2)
	b.turn("[File: cart.go; ref=r1] [File: cart_test.go; ref=r2] review both files", 2000)
	b.turn("Run this:\n```sh\ngo test ./cart/ -run TestCheckout -v\n```\nand paste the result", 2000)
	b.notes(2, testSections...)
	kept = b.turn("[Assistant quote](m-7) you said the fix was in; is it?", 100)
	b.compaction(kept, 3)
	b.turn("Now make the empty-cart error message clearer.\nIt should name the cart id.", 3000)
	b.turn("Also keep the old error code for API clients.", 3000)
	b.turn("Actually, use code 4xx not 5xx.", 3000)
	nb := b.notes(3, testSections...)
	b.turn("what is left?", 50)
	return b.path(), nb
}

func TestRolloverSummaryGolden(t *testing.T) {
	path, nb := threeWindows(t)
	in := RolloverInput{Path: path, Notebook: nb, Reason: ReasonModel, Pi: testPi, Config: testConfig()}
	c, err := Rollover(in)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Rollover(in)
	if again.Summary != c.Summary {
		t.Fatal("summary is not deterministic")
	}
	if c.Details != (Details{WindowNumber: 4, NotebookRevision: 3, Reason: ReasonModel}) {
		t.Errorf("details %+v", c.Details)
	}
	for _, want := range []string{
		"Context window #4 started (previous #3, rollover reason: model).",
		"## Notebook (revision 3, reviewed through entry " + nb.ReviewedThrough + ")",
		"\n## Task\nFix the checkout bug",
		"w1 [history entry=",
		"w2 [history entry=",
		"[history entry=" + path[indexOfText(t, path, "Now make")].ID + "] user: Now make the empty-cart error message clearer.\nIt should name the cart id.",
		"Continue with the notebook's Next action.",
	} {
		if !strings.Contains(c.Summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	out, _ := json.MarshalIndent(c, "", "  ")
	golden(t, "summary/three-windows.golden", c.Summary)
	golden(t, "summary/three-windows.json.golden", string(out)+"\n")
}

// indexOfText finds the user message whose text starts with prefix.
func indexOfText(t *testing.T, path []*journal.Entry, prefix string) int {
	for i, e := range path {
		if text, _, ok := userMessage(e); ok && strings.HasPrefix(text, prefix) {
			return i
		}
	}
	t.Fatalf("no user message %q", prefix)
	return -1
}

// manyWindows builds n earlier windows of one user message each, then a
// window with work to drop. Each compaction keeps its window's question, so
// the last question is in the droppable part (pinned) and the others are
// indexed.
func manyWindows(t *testing.T, n int, question func(i int) string) ([]*journal.Entry, *notebook.State) {
	b := newJB(t)
	for i := 0; i < n; i++ {
		kept := b.turn(question(i), 10)
		b.compaction(kept, i+2)
	}
	for i := 0; i < 6; i++ {
		b.turn(fmt.Sprintf("current step %d", i), 2000)
	}
	nb := b.notes(9, testSections...)
	b.turn("tail", 10)
	return b.path(), nb
}

func TestSessionIndexBudget(t *testing.T) {
	long := func(i int) string {
		return fmt.Sprintf("question %03d about a topic that needs a long explanation to be understood fully", i)
	}
	cases := []struct {
		name    string
		n       int
		budget  int
		has     []string
		hasNot  []string
		maxCost int
	}{
		{name: "within-budget", n: 5, budget: 3072, has: []string{"w1 [history entry=e0000001] question 000 about a topic that needs a long explanation to be understood fully\n"}, hasNot: []string{"older user messages"}},
		{name: "cut-to-40", n: 8, budget: 150, has: []string{"question 000 about a topic that needs a…"}, hasNot: []string{"older user messages", "long explanation"}},
		{name: "drop-oldest", n: 60, budget: 300, has: []string{"older user messages not listed; `history({ list: true })` shows them)", "question 058"}, hasNot: []string{"question 000"}},
		{name: "newest-always-stays", n: 3, budget: 1, has: []string{"(1 older user message", "question 001"}, hasNot: []string{"question 000", "question 002"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, nb := manyWindows(t, c.n, long)
			cfg := testConfig()
			cfg.SessionIndexMaxTokens = c.budget
			comp, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonHost, Pi: testPi, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			_, rest, _ := strings.Cut(comp.Summary, "## Earlier user messages")
			section, _, _ := strings.Cut(rest, "\n\n")
			for _, h := range c.has {
				if !strings.Contains(section, h) {
					t.Errorf("index lacks %q", h)
				}
			}
			for _, h := range c.hasNot {
				if strings.Contains(section, h) {
					t.Errorf("index contains %q", h)
				}
			}
			lines := strings.Split(section, "\n")[1:]
			cost := 0
			for _, l := range lines {
				cost += lineTokens(l)
			}
			if c.budget > 1 && cost > c.budget {
				t.Errorf("index costs %d tokens, budget %d", cost, c.budget)
			}
			golden(t, "summary/index-"+c.name+".golden", "## Earlier user messages"+section+"\n")
		})
	}
}

func TestPinnedBudget(t *testing.T) {
	build := func(n int, text func(i int) string) ([]*journal.Entry, *notebook.State) {
		b := newJB(t)
		for i := 0; i < n; i++ {
			b.turn(text(i), 1500)
		}
		nb := b.notes(1, testSections...)
		b.turn("tail", 10)
		return b.path(), nb
	}
	para := func(i int) string {
		return fmt.Sprintf("request %d: first line\n", i) + strings.Repeat("detail ", 150)
	}
	cases := []struct {
		name   string
		n      int
		max    int // pinnedTotalMaxTokens
		has    []string
		hasNot []string
	}{
		{name: "first-verbatim-rest-600", n: 4, max: 4096, has: []string{"user: request 0: first line\n" + strings.Repeat("detail ", 150), "user: request 1: first line\ndetail detail"}},
		{name: "over-budget-first-lines", n: 10, max: 700, has: []string{"user: request 0: first line\n" + strings.Repeat("detail ", 150), "user: request 9: first line\n"}, hasNot: []string{"request 9: first line\ndetail"}},
		{name: "over-budget-drop", n: 40, max: 500, has: []string{"more user messages from this window not shown", "request 0: first line", "request 39: first line"}, hasNot: []string{"request 1: first line"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, nb := build(c.n, para)
			cfg := testConfig()
			cfg.PinnedTotalMaxTokens = c.max
			comp, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonUser, Pi: testPi, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			_, section, _ := strings.Cut(comp.Summary, "## Task context preserved")
			for _, h := range c.has {
				if !strings.Contains(section, h) {
					t.Errorf("pinned part lacks %q", h)
				}
			}
			for _, h := range c.hasNot {
				if strings.Contains(section, h) {
					t.Errorf("pinned part contains %q", h)
				}
			}
			golden(t, "summary/pinned-"+c.name+".golden", "## Task context preserved"+section)
		})
	}
}

func TestRolloverAtActualCut(t *testing.T) {
	path, nb := gateSession(t, false)
	in := RolloverInput{Path: path, Notebook: nb, Reason: ReasonModel, Pi: testPi, Config: testConfig()}

	// The last entry: everything before it would be dropped, including work
	// after the review, so the notebook is stale at that cut.
	late := in
	late.FirstKeptEntryID = path[len(path)-1].ID
	var r *Refusal
	if _, err := Rollover(late); !errors.As(err, &r) || r.Blocker != BlockStaleNotebook {
		t.Errorf("late cut: %v, want the stale-notebook refusal", err)
	}
	// A cut before the reviewed entry is fresh.
	early := in
	early.FirstKeptEntryID = path[indexOf(path, nb.ReviewedThrough)].ID
	c, err := Rollover(early)
	if err != nil || c.FirstKeptEntryID != early.FirstKeptEntryID {
		t.Errorf("early cut: %v, %s", err, c.FirstKeptEntryID)
	}
	bad := in
	bad.FirstKeptEntryID = "nowhere"
	if _, err := Rollover(bad); !errors.Is(err, ErrCutNotOnBranch) {
		t.Errorf("unknown cut: %v", err)
	}
	none := in
	none.Notebook = nil
	if _, err := Rollover(none); !errors.As(err, &r) || r.Blocker != BlockNoNotebook {
		t.Errorf("no notebook: %v", err)
	}
}

func TestBeforeCompact(t *testing.T) {
	path, nb := gateSession(t, false)
	stalePath, staleNB := gateSession(t, true)
	owned := testConfig()
	owned.ExternalCompactionModels = []string{"faux/faux-1"}
	base := func(p []*journal.Entry, n *notebook.State) BeforeCompactInput {
		return BeforeCompactInput{RolloverInput: RolloverInput{Path: p, Notebook: n, Reason: ReasonModel, Pi: testPi, Config: testConfig()}, Ours: true}
	}
	cases := []struct {
		name     string
		mut      func(*BeforeCompactInput)
		declined string
		reason   Reason
	}{
		{name: "ours", mut: func(*BeforeCompactInput) {}, reason: ReasonModel},
		{name: "custom instructions", mut: func(in *BeforeCompactInput) { in.CustomInstructions = "focus on tests" }, declined: DeclineCustomInstructions},
		{name: "external owner", mut: func(in *BeforeCompactInput) { in.Model = "faux/faux-1"; in.Config = owned }, declined: DeclineExternalOwner},
		{name: "other model is not owned", mut: func(in *BeforeCompactInput) { in.Model = "faux/other"; in.Config = owned }, reason: ReasonModel},
		{name: "threshold with a fresh notebook", mut: func(in *BeforeCompactInput) { in.Ours = false }, reason: ReasonThreshold},
		{name: "threshold mid-run", mut: func(in *BeforeCompactInput) { in.Ours = false; in.MidRun = true }, declined: DeclineMidRun},
		{name: "our own compaction mid-run", mut: func(in *BeforeCompactInput) { in.MidRun = true }, reason: ReasonModel},
		{name: "threshold with a stale notebook", mut: func(in *BeforeCompactInput) { in.Ours = false; in.Path, in.Notebook = stalePath, staleNB }, declined: DeclineStaleAtThreshold},
		{name: "ours stale at the cut", mut: func(in *BeforeCompactInput) { in.Path, in.Notebook = stalePath, staleNB }, declined: DeclineStaleAtCut},
		{name: "no notebook", mut: func(in *BeforeCompactInput) { in.Notebook = nil }, declined: DeclineNoNotebook},
		{name: "cut from another branch", mut: func(in *BeforeCompactInput) { in.FirstKeptEntryID = "elsewhere" }, declined: DeclineBadCut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base(path, nb)
			c.mut(&in)
			d := BeforeCompact(in)
			if d.Declined != c.declined {
				t.Fatalf("declined %q, want %q", d.Declined, c.declined)
			}
			if c.declined == "" && (d.Compaction == nil || d.Compaction.Details.Reason != c.reason) {
				t.Errorf("compaction %+v, want reason %q", d.Compaction, c.reason)
			}
		})
	}
}
