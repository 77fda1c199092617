package rollover

import (
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// gateSession builds a session with enough finished work for a rollover:
// ten turns of ~1K tokens each, then notes, then a short turn. With
// stale, the notes come early and more work follows them.
func gateSession(t *testing.T, stale bool) ([]*journal.Entry, *notebook.State) {
	b := newJB(t)
	var nb *notebook.State
	if stale {
		b.turn("first task", 100)
		nb = b.notes(1, testSections...)
	}
	for i := 0; i < 10; i++ {
		b.turn("step "+string(rune('a'+i)), 4000)
	}
	if !stale {
		nb = b.notes(2, testSections...)
	}
	b.turn("last small step", 100)
	return b.path(), nb
}

func TestGateBlockers(t *testing.T) {
	fresh, nb := gateSession(t, false)
	stalePath, staleNB := gateSession(t, true)

	tiny := newJB(t)
	tiny.turn("only question", 10)
	tinyNB := tiny.notes(1, testSections...)
	tinyPath := tiny.path()

	ended := newJB(t)
	u := ended.turn("q", 10)
	endedNB := ended.notes(1, testSections...)
	ended.compaction(u, 2)
	endedPath := ended.path()

	unresolved := newJB(t)
	for i := 0; i < 10; i++ {
		unresolved.turn("step", 4000)
	}
	unNB := unresolved.notes(1, testSections...)
	unresolved.turn("more", 100)
	unresolved.assistant("calling new_context", 0, "new_context")
	unPath := unresolved.path()

	otherBranch := *nb
	otherBranch.EntryID = "not-on-this-branch"

	owned := testConfig()
	owned.ExternalCompactionModels = []string{"faux/faux-1"}
	disabled := testConfig()
	disabled.Enabled = false
	autoOff := testConfig()
	autoOff.AutoRollover = false
	bigReclaim := testConfig()
	bigReclaim.MinReclaimTokens = 1_000_000

	high := Usage{Tokens: 370_000, ContextWindow: 1_000_000} // reminder zone at 400K−16384−24000 = 359,616
	low := Usage{Tokens: 50_000, ContextWindow: 1_000_000}

	cases := []struct {
		name    string
		in      GateInput
		blocker Blocker
		text    string // substring of Verdict.Text
		check   func(t *testing.T, v Verdict)
	}{
		{name: "no notebook", in: GateInput{Path: fresh, Request: ReasonModel}, blocker: BlockNoNotebook,
			text: "no notebook on this branch — write notes first"},
		{name: "notebook of another branch", in: GateInput{Path: fresh, Notebook: &otherBranch, Request: ReasonModel}, blocker: BlockNoNotebook},
		{name: "stale notebook", in: GateInput{Path: stalePath, Notebook: staleNB, Request: ReasonModel}, blocker: BlockStaleNotebook,
			text: "notebook predates material that would be dropped — update or review notes first"},
		{name: "stale notebook even for the user", in: GateInput{Path: stalePath, Notebook: staleNB, Request: ReasonUser}, blocker: BlockStaleNotebook},
		{name: "nothing would leave", in: GateInput{Path: tinyPath, Notebook: tinyNB, Request: ReasonUser}, blocker: BlockNothingToDrop,
			text: "nothing would leave the window"},
		{name: "path ends in a compaction", in: GateInput{Path: endedPath, Notebook: endedNB, Request: ReasonUser}, blocker: BlockNothingToDrop},
		{name: "too little reclaim for the model", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Config: bigReclaim}, blocker: BlockLowReclaim,
			text: "too little would leave the window for a rollover to help — continue working"},
		{name: "user skips the reclaim threshold", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonUser, Config: bigReclaim},
			text: "rollover scheduled: window #1 → #2", check: func(t *testing.T, v Verdict) {
				if v.Reason != ReasonUser || v.Auto {
					t.Errorf("attribution %q auto=%v", v.Reason, v.Auto)
				}
			}},
		{name: "host below the pressure floor", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: low}, blocker: BlockLowPressure,
			text: "window at 50K; the host rolls over on its own from the 360K reminder threshold"},
		{name: "model is not held to the floor", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Usage: low},
			text: "End the turn now without further tool calls."},
		{name: "host in the reminder zone", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: high},
			text: "Rollover scheduled by the host: window #1 → #2 at the end of this turn. Finish what this turn needs; the new window opens with these notes.",
			check: func(t *testing.T, v Verdict) {
				if !v.Auto || v.Reason != ReasonHost {
					t.Errorf("attribution %q auto=%v", v.Reason, v.Auto)
				}
			}},
		{name: "host floor on a small window", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: Usage{Tokens: 90_000, ContextWindow: 128_000}},
			check: func(t *testing.T, v Verdict) {
				if v.Projection.ReminderAt != 128_000-16384-24000 {
					t.Errorf("reminder at %d", v.Projection.ReminderAt)
				}
			}},
		{name: "host with unknown usage uses Pi's estimate", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: Usage{Tokens: -1}}, blocker: BlockLowPressure,
			check: func(t *testing.T, v Verdict) {
				if !v.Projection.PressureEstim {
					t.Error("pressure not marked estimated")
				}
			}},
		{name: "host with absurd usage uses Pi's estimate", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: Usage{Tokens: 9_000_000, ContextWindow: 200_000}}, blocker: BlockLowPressure},
		{name: "host yields to an external owner", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: high, Model: "faux/faux-1", Config: owned}, blocker: BlockExternalOwner},
		{name: "model with an external owner passes, owner summarises", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Model: "faux/faux-1", Config: owned},
			check: func(t *testing.T, v Verdict) {
				if !v.ExternalOwner {
					t.Error("ExternalOwner not set")
				}
			}},
		{name: "host repeat while host pending", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Pending: ReasonHost, Usage: high}, blocker: BlockPending,
			text: "rollover already scheduled"},
		{name: "model confirms a host schedule", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonHost},
			check: func(t *testing.T, v Verdict) {
				if !v.Confirms || v.Reason != ReasonModel {
					t.Errorf("confirms=%v reason=%q", v.Confirms, v.Reason)
				}
			}},
		{name: "user confirms a host schedule below the reclaim threshold", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonUser, Pending: ReasonHost, Config: bigReclaim},
			check: func(t *testing.T, v Verdict) {
				if !v.Confirms || v.Reason != ReasonUser {
					t.Errorf("confirms=%v reason=%q", v.Confirms, v.Reason)
				}
			}},
		{name: "model cannot confirm a host schedule below the reclaim threshold", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonHost, Config: bigReclaim}, blocker: BlockLowReclaim},
		{name: "confirming still checks freshness", in: GateInput{Path: stalePath, Notebook: staleNB, Request: ReasonUser, Pending: ReasonHost}, blocker: BlockStaleNotebook},
		{name: "user schedule protected from the user", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonUser, Pending: ReasonUser}, blocker: BlockPending},
		{name: "user schedule protected from the model", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonUser}, blocker: BlockPending},
		{name: "user schedule protected from the host", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Pending: ReasonUser, Usage: high}, blocker: BlockPending},
		{name: "model schedule refuses a repeat", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonModel}, blocker: BlockPending},
		{name: "model schedule refuses the user", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonUser, Pending: ReasonModel}, blocker: BlockPending},
		{name: "external owner re-confirms a model schedule", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonModel, Model: "faux/faux-1", Config: owned},
			check: func(t *testing.T, v Verdict) {
				if !v.Reconfirm {
					t.Error("Reconfirm not set")
				}
			}},
		{name: "fallback schedule pending", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Pending: ReasonFallback}, blocker: BlockPending},
		{name: "unresolved tool calls defer, not refuse", in: GateInput{Path: unPath, Notebook: unNB, Request: ReasonModel},
			check: func(t *testing.T, v Verdict) {
				if !v.Deferred {
					t.Error("Deferred not set")
				}
			}},
		{name: "disabled", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonUser, Config: disabled}, blocker: BlockDisabled},
		{name: "host with autoRollover off", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonHost, Usage: high, Config: autoOff}, blocker: BlockAutoOff},
		{name: "model with autoRollover off", in: GateInput{Path: fresh, Notebook: nb, Request: ReasonModel, Config: autoOff}},
		{name: "unknown request", in: GateInput{Path: fresh, Notebook: nb, Request: "threshold"}, blocker: BlockBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			if in.Config.BudgetTokens == 0 {
				in.Config = testConfig()
			}
			if in.Pi == (PiSettings{}) {
				in.Pi = testPi
			}
			v := Gate(in)
			if c.blocker == "" && !v.OK {
				t.Fatalf("refused: %s (%s); projection %+v", v.Blocker, v.Text, v.Projection)
			}
			if c.blocker != "" && (v.OK || v.Blocker != c.blocker) {
				t.Fatalf("got ok=%v blocker %q (%s), want %q", v.OK, v.Blocker, v.Text, c.blocker)
			}
			if c.text != "" && !strings.Contains(v.Text, c.text) {
				t.Errorf("text %q lacks %q", v.Text, c.text)
			}
			if v.Reason != in.Request {
				t.Errorf("reason %q, want the request's %q", v.Reason, in.Request)
			}
			if c.check != nil {
				c.check(t, v)
			}
			if again := Gate(in); again != v {
				t.Errorf("not deterministic: %+v then %+v", v, again)
			}
		})
	}
}

// TestGateProjectionMatchesRollover checks that the reclaim the gate
// projects is computed from the same cut and summary the rollover writes.
func TestGateProjectionMatchesRollover(t *testing.T) {
	path, nb := gateSession(t, false)
	v := Gate(GateInput{Path: path, Notebook: nb, Request: ReasonModel, Config: testConfig(), Pi: testPi})
	if !v.OK {
		t.Fatalf("refused: %s", v.Text)
	}
	c, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonModel, Config: testConfig(), Pi: testPi})
	if err != nil {
		t.Fatal(err)
	}
	if c.FirstKeptEntryID != v.FirstKeptEntryID {
		t.Errorf("gate cut %s, rollover cut %s", v.FirstKeptEntryID, c.FirstKeptEntryID)
	}
	if got := (len(c.Summary)+3)/4 - v.Projection.SummaryTokens; got != 0 {
		t.Errorf("summary tokens differ by %d", got)
	}
	if v.Projection.Reclaim < 9000 || v.Projection.Before-v.Projection.After != v.Projection.Reclaim {
		t.Errorf("projection %+v", v.Projection)
	}
}
