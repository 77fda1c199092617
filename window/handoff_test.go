package window

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
)

// A new_context event's Handoff is validated before anything changes: one
// over the limit (or on another event) is refused whole and schedules
// nothing; a valid one comes back as the entry to append only when the
// rollover was scheduled, so a refused request leaves no Handoff behind.
func TestNewContextHandoffIsAppendedOnlyWhenScheduled(t *testing.T) {
	f := newFixture(t)
	f.User("start the work")
	f.Assistant("ok", 10)
	ask := func(handoff string) (EventResponse, error) {
		return f.svc.Event(testSession, EventRequest{Event: rollover.Event{Kind: rollover.EvNewContext, UserRequested: true, Handoff: handoff},
			Usage: &UsageBody{Tokens: ptr(50000), ContextWindow: 60000}, Pi: &rollover.PiSettings{KeepRecentTokens: 10}})
	}

	over := strings.Repeat("h", rollover.MaxHandoffChars+1)
	if _, err := ask(over); func() bool { k, p := kindOf(err); return k != Invalid || p != "event.handoff" }() {
		t.Fatalf("a handoff over the limit: %v; want invalid event.handoff", err)
	}
	if _, err := f.svc.Event(testSession, EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd, Handoff: "x"}}); func() bool {
		k, p := kindOf(err)
		return k != Invalid || p != "event.handoff"
	}() {
		t.Fatalf("a handoff on turn_end: %v; want invalid event.handoff", err)
	}
	if v, _ := f.svc.State(testSession, ""); v.State.Pending != "" {
		t.Fatalf("a refused handoff scheduled %q", v.State.Pending)
	}

	// Refused by the gate (no notebook): no Handoff to append.
	r, err := ask("where the work stands")
	if err != nil {
		t.Fatal(err)
	}
	if r.Decision.Schedule != "" || r.Append != nil {
		t.Fatalf("without a notebook: schedule %q append %+v; want neither", r.Decision.Schedule, r.Append)
	}

	for i := range 6 {
		f.User("more work " + strings.Repeat("w", 2000*(i+1)))
		f.Assistant("done", 100)
	}
	f.writeNotebook(notebook.Sections{{Name: "Task", Text: "the work"}, {Name: "Next", Text: "finish"}})
	r, err = ask("where the work stands")
	if err != nil {
		t.Fatal(err)
	}
	if r.Decision.Schedule == "" {
		t.Fatalf("not scheduled: %+v", r.Decision)
	}
	if r.Append == nil || r.Append.CustomType != rollover.HandoffType || !strings.Contains(string(r.Append.Data), `"text":"where the work stands"`) {
		t.Fatalf("append %+v; want the Handoff entry", r.Append)
	}
}

// With requireHandoff on (seed B's rule), new_context without a handoff is
// refused before anything changes; off (the default, seed A's rule) the
// notebook alone carries the rollover.
func TestRequireHandoffRefusesNewContextWithoutOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string
		refused bool
	}{
		{"default", `{}`, false},
		{"required", `{"requireHandoff": true}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if err := os.WriteFile(filepath.Join(f.dir, ConfigFile), []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			f.restart()
			f.User("start")
			f.Assistant("ok", 10)
			_, err := f.svc.Event(testSession, EventRequest{Event: rollover.Event{Kind: rollover.EvNewContext, UserRequested: true}})
			kind, param := kindOf(err)
			if got := kind == Invalid && param == "event.handoff"; got != tc.refused {
				t.Fatalf("err %v; refused %v, want %v", err, got, tc.refused)
			}
			if tc.refused && !strings.Contains(err.Error(), "requireHandoff") {
				t.Errorf("the refusal does not name the setting: %v", err)
			}
		})
	}
}
