package rollover

import (
	"strings"
	"testing"
)

// tailJournal is a window of three read turns, a notes call and the
// rollover call with its Handoff, result and the agent's last words.
func tailJournal(t *testing.T) (b *jb, firstTurn, lastTurn, notesCall, rolloverCall string) {
	b = newJB(t)
	firstTurn = b.turn("Read the first file.", 4000)
	b.turn("Read the second file.", 4000)
	lastTurn = b.turn("Read the third file.", 4000)
	nb := b.notes(1, testSections...)
	notesCall = nb.ReviewedThrough
	rolloverCall, ids := b.assistant("rolling over", 0, "new_context")
	b.handoff("Done: read three files.\nNext: summarise.")
	b.toolResult(ids[0], "new_context", "rollover scheduled")
	b.assistant("Stopping here.", 0)
	return b, firstTurn, lastTurn, notesCall, rolloverCall
}

func TestTailTokensSizeWhatARolloverKeeps(t *testing.T) {
	b, firstTurn, lastTurn, _, rolloverCall := tailJournal(t)
	path := b.path()
	// The closing assistant message of the last read turn (user, call, result, closing).
	lastClosing := path[indexOf(path, lastTurn)+3].ID
	beforeLast := path[indexOf(path, lastTurn)-1].ID
	tail := func(n int) *int { return &n }
	cases := []struct {
		name     string
		tail     *int
		wantKept string
	}{
		// 0: only the newest cut point a rollover may use, its own call.
		{"zero keeps the rollover call and what follows it", tail(0), rolloverCall},
		// About one read result (4,000 characters ≈ 1,000 tokens): the
		// budget is reached on the last result, and the cut lands on the
		// nearest cut point after it (a result is not one).
		{"a budget of one read result cuts after that result", tail(900), lastClosing},
		// Past the last turn: the budget is reached on the turn before's
		// result, so its closing message and the whole last turn stay.
		{"a larger budget keeps the last read turn and more", tail(1300), beforeLast},
		{"a budget larger than the window keeps all of it", tail(1 << 20), firstTurn},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := makePlan(path, "", PiSettings{KeepRecentTokens: 20000, TailTokens: tc.tail})
			if err != nil {
				t.Fatal(err)
			}
			got := p.prep.FirstKeptEntryID
			// The cut may move back over non-message entries, never past a message.
			if got != tc.wantKept && path[indexOf(path, got)].Type == "message" {
				t.Errorf("tail %d keeps from %s, want %s", *tc.tail, got, tc.wantKept)
			}
		})
	}
	// Without tailTokens Pi's keepRecentTokens decides, as before.
	p, err := makePlan(path, "", PiSettings{KeepRecentTokens: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if p.prep.FirstKeptEntryID != firstTurn {
		t.Errorf("keepRecentTokens 20000 keeps from %s, want the first turn %s", p.prep.FirstKeptEntryID, firstTurn)
	}
}

func TestTailIgnoresARefusedRolloverCall(t *testing.T) {
	// A new_context call refused earlier in the window does not hold the
	// Tail back: the host's rollover later cuts at the newest cut point.
	b := newJB(t)
	b.turn("Read the file.", 4000)
	_, ids := b.assistant("rolling over", 0, "new_context")
	b.msg(map[string]any{"role": "toolResult", "toolCallId": ids[0], "toolName": "new_context",
		"content": []any{map[string]any{"type": "text", "text": "refused"}}, "isError": true})
	b.turn("Read another file.", 4000)
	nb := b.notes(1, testSections...)
	path := b.path()
	zero := 0
	p, err := makePlan(path, "", PiSettings{TailTokens: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if p.prep.FirstKeptEntryID != nb.ReviewedThrough {
		t.Errorf("a Tail of 0 keeps from %s, want the newest cut point %s (the notes call)", p.prep.FirstKeptEntryID, nb.ReviewedThrough)
	}
}

func TestTailZeroRolloverIsFreshAfterANotesCall(t *testing.T) {
	// The notes call is reviewed through its own assistant message; its
	// result (and the notebook record) are dropped by a Tail of 0 and must
	// not make the notebook stale.
	b := newJB(t)
	b.turn("Read the file.", 4000)
	nb := b.notes(1, testSections...)
	_, ids := b.assistant("rolling over", 0, "new_context")
	b.toolResult(ids[0], "new_context", "rollover scheduled")
	b.assistant("Stopping here.", 0)
	zero := 0
	c, err := Rollover(RolloverInput{Path: b.path(), Notebook: nb, Reason: ReasonUser, Pi: PiSettings{TailTokens: &zero}, Config: testConfig()})
	if err != nil {
		t.Fatalf("a rollover with a Tail of 0 right after a notes call: %v", err)
	}
	if !strings.Contains(c.Summary, "rollover reason: user") {
		t.Errorf("summary: %s", c.Summary)
	}
}

func TestEmergencyRolloverUsesTheLastHandoffMarkedStale(t *testing.T) {
	tail := 0
	cases := []struct {
		name       string
		handoff    bool
		notebook   bool
		wantInSum  []string
		wantNotSum []string
	}{
		{"with a Handoff of an earlier window", true, true,
			[]string{"rollover reason: emergency", "Emergency rollover:", "## Handoff (STALE: saved before the context overflowed", "OLD plan", "may be stale)"},
			[]string{"written by the agent for this rollover"}},
		{"without any Handoff or notebook", false, false,
			[]string{"## Handoff\n(none saved before the context overflowed)", "## Notebook\n(none on this branch)"},
			[]string{"STALE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newJB(t)
			b.turn("Start.", 2000)
			var nb = b.notes(1, testSections...)
			if !tc.notebook {
				nb = nil
			}
			if tc.handoff {
				b.handoff("OLD plan")
			}
			kept := b.turn("next", 100)
			b.compaction(kept, 2)
			for i := 0; i < 4; i++ {
				b.turn("Big read.", 8000)
			}
			path := b.path()
			d := BeforeCompact(BeforeCompactInput{RolloverInput: RolloverInput{Path: path, Notebook: nb, Reason: ReasonEmergency,
				Pi: PiSettings{KeepRecentTokens: 2500, TailTokens: &tail}, Config: testConfig()}})
			if d.Compaction == nil {
				t.Fatalf("declined: %s", d.Declined)
			}
			c := d.Compaction
			for _, w := range tc.wantInSum {
				if !strings.Contains(c.Summary, w) {
					t.Errorf("summary lacks %q:\n%s", w, c.Summary)
				}
			}
			for _, w := range tc.wantNotSum {
				if strings.Contains(c.Summary, w) {
					t.Errorf("summary has %q", w)
				}
			}
			// Pi's keepRecentTokens, not the Tail of 0: more than the last turn is kept.
			prep, _ := PrepareCut(path, 2500)
			if c.FirstKeptEntryID != prep.FirstKeptEntryID {
				t.Errorf("cut at %s, want Pi's keepRecentTokens cut %s", c.FirstKeptEntryID, prep.FirstKeptEntryID)
			}
		})
	}
	// Turned off: Pi's own summary.
	b := newJB(t)
	b.turn("Start.", 8000)
	b.turn("More.", 8000)
	cfg := testConfig()
	cfg.EmergencyRollover = false
	d := BeforeCompact(BeforeCompactInput{RolloverInput: RolloverInput{Path: b.path(), Reason: ReasonEmergency, Pi: testPi, Config: cfg}})
	if d.Compaction != nil || d.Declined != DeclineEmergencyOff {
		t.Errorf("emergencyRollover false: %+v", d)
	}
}
