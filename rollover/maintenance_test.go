package rollover

import (
	"strings"
	"testing"
)

// Usage levels against testConfig on a 1M window: the reminder zone starts
// at 400K−16384−24000 = 359,616 and the fallback zone at 400K−16384−12000 =
// 371,616.
var (
	usageLow      = Usage{Tokens: 50_000, ContextWindow: 1_000_000}
	usageReminder = Usage{Tokens: 365_000, ContextWindow: 1_000_000}
	usageFallback = Usage{Tokens: 380_000, ContextWindow: 1_000_000}
	usageUnknown  = Usage{Tokens: -1, ContextWindow: 1_000_000}
)

func TestStepTransitions(t *testing.T) {
	path, nb := gateSession(t, false)
	stalePath, staleNB := gateSession(t, true)
	world := func(u Usage) World {
		return World{Path: path, Notebook: nb, Usage: u, Pi: testPi, Config: testConfig()}
	}
	staleWorld := World{Path: stalePath, Notebook: staleNB, Usage: usageFallback, Pi: testPi, Config: testConfig()}
	requested := State{Window: 1, Stage: StageRequested, Attempt: 4, Active: 4}

	cases := []struct {
		name  string
		state State
		ev    Event
		world World
		want  func(t *testing.T, s State, d Decision)
	}{
		{name: "turn end below the zones does nothing", ev: Event{Kind: EvTurnEnd}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "turn end with unknown usage does nothing", ev: Event{Kind: EvTurnEnd}, world: world(usageUnknown),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "reminder once per window", ev: Event{Kind: EvTurnEnd}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) {
				if !s.ReminderSent || d.SteerType != ReminderType || !strings.HasPrefix(d.Steer, reminderText+"\n<notebook revision=\"2\">\n## Task\n") {
					t.Errorf("state %+v decision %+v", s, d)
				}
				if strings.ContainsAny(d.Steer, "0123456789K") && strings.Contains(d.Steer, "tokens") {
					t.Error("reminder carries token figures")
				}
			}},
		{name: "no second reminder", state: State{Window: 1, ReminderSent: true}, ev: Event{Kind: EvTurnEnd}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "fallback zone requests a checkpoint", state: State{Window: 1, Attempt: 4}, ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.Stage != StageRequested || s.Active != 5 || d.Attempt != 5 || d.SteerType != MaintenanceType ||
					!strings.HasPrefix(d.Steer, "[note-context maintenance #5] The host needs a notes checkpoint") {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "aborted turn gets no steer", ev: Event{Kind: EvTurnEnd, Aborted: true}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				expectNoAction(t, d)
				if !s.Aborted || s.Stage != StageIdle {
					t.Errorf("state %+v", s)
				}
			}},
		{name: "pending rollover masks maintenance", state: State{Window: 1, Pending: ReasonModel}, ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "exhausted window gets only the reminder", state: State{Window: 1, Exhausted: true}, ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.Stage != StageIdle || d.SteerType != ReminderType {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "a failed rollover drops its schedule, so the next run asks nothing", state: State{Window: 1, Pending: ReasonModel, Confirmed: true},
			ev: Event{Kind: EvRolloverFailed, Why: "no_model"}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != "" || s.Confirmed || d.Failed != ReasonModel || d.FailedWhy != "no_model" || d.GiveUp {
					t.Errorf("state %+v decision %+v", s, d)
				}
				if s2, d2 := Step(s, Event{Kind: EvSettle}, world(usageLow)); d2.RollOver != "" || s2.Pending != "" {
					t.Errorf("after the failure, settle still asks for a rollover: state %+v decision %+v", s2, d2)
				}
				rows := DecisionRows("s", s, d)
				if len(rows) != 1 || rows[0].Kind != RowRolloverFailed || rows[0].Reason != ReasonModel || rows[0].Why != "no_model" {
					t.Errorf("ledger rows %+v, want one rollover_failed row", rows)
				}
			}},
		{name: "a failed fallback rollover gives up for the window", state: State{Window: 1, Stage: StageCheckpointed, Attempt: 4, Active: 4},
			ev: Event{Kind: EvRolloverFailed, Why: "other"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.Stage != StageIdle || !s.Exhausted || d.Failed != ReasonFallback || !d.GiveUp {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "another handler's compaction at the boundary cancels the schedule instead of failing it", state: State{Window: 1, Pending: ReasonHost},
			ev: Event{Kind: EvRolloverFailed, Why: WhyOtherCompaction}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != "" || d.Failed != "" || d.Cancel != WhyOtherCompaction || d.Cancelled != ReasonHost {
					t.Errorf("state %+v decision %+v", s, d)
				}
				rows := DecisionRows("s", s, d)
				if len(rows) != 1 || rows[0].Kind != RowRolloverCancelled || rows[0].Why != WhyOtherCompaction || rows[0].Reason != ReasonHost {
					t.Errorf("ledger rows %+v, want one rollover_cancelled row", rows)
				}
			}},
		{name: "another handler's compaction at the checkpoint's boundary ends maintenance without giving up", state: State{Window: 1, Stage: StageCheckpointed, Attempt: 4, Active: 4},
			ev: Event{Kind: EvRolloverFailed, Why: WhyOtherCompaction}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.Stage != StageIdle || s.Active != 0 || s.Exhausted || d.GiveUp || d.Cancelled != ReasonFallback {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "a boundary entry Pi rejected drops the schedule as failed", state: State{Window: 1, Pending: ReasonUser},
			ev: Event{Kind: EvRolloverFailed, Why: "boundary_rejected"}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != "" || d.Failed != ReasonUser || d.FailedWhy != "boundary_rejected" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "a session start drops what the session held before", state: State{Window: 1, Pending: ReasonModel, Confirmed: true, Stage: StageRequested, Attempt: 4, Active: 4, Blocked: 2},
			ev: Event{Kind: EvSessionStart}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				expectNoAction(t, d)
				if s.Pending != "" || s.Stage != StageIdle || s.Active != 0 || s.Blocked != 0 || s.Attempt != 4 || s.Window != 1 {
					t.Errorf("state %+v; want it rebuilt from the branch, keeping the attempt count", s)
				}
				if _, d2 := Step(s, Event{Kind: EvToolCall, Tool: "bash"}, world(usageLow)); d2.Block {
					t.Error("after a session start, a tool call is still blocked by old maintenance")
				}
			}},
		{name: "a failure with nothing under way changes nothing", state: State{Window: 1}, ev: Event{Kind: EvRolloverFailed, Why: "cancelled"}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				expectNoAction(t, d)
				if d.Failed != "" || len(DecisionRows("s", s, d)) != 0 {
					t.Errorf("decision %+v", d)
				}
			}},
		{name: "stale host schedule cancelled at turn end, maintenance takes over", state: State{Window: 1, Pending: ReasonHost}, ev: Event{Kind: EvTurnEnd}, world: staleWorld,
			want: func(t *testing.T, s State, d Decision) {
				if d.Cancel != string(BlockStaleNotebook) || s.Pending != "" || s.Stage != StageRequested || d.SteerType != MaintenanceType {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "confirmed host schedule is not re-checked", state: State{Window: 1, Pending: ReasonHost, Confirmed: true}, ev: Event{Kind: EvTurnEnd}, world: staleWorld,
			want: func(t *testing.T, s State, d Decision) {
				if d.Cancel != "" || s.Pending != ReasonHost {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "guard blocks other tools", state: requested, ev: Event{Kind: EvToolCall, Tool: "read"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if !d.Block || d.BlockReason != "context maintenance in progress — only notes is available until the checkpoint lands" || s.Blocked != 1 {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "guard lets notes through", state: requested, ev: Event{Kind: EvToolCall, Tool: "notes"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "guard gives up after the third block", state: func() State { s := requested; s.Blocked = 2; return s }(), ev: Event{Kind: EvToolCall, Tool: "bash"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if !d.Block || !d.GiveUp || !s.Exhausted || s.Stage != StageIdle || s.Active != 0 {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "no guard outside maintenance", ev: Event{Kind: EvToolCall, Tool: "bash"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "checkpoint lands", state: requested, ev: Event{Kind: EvNotes, NotesOK: true}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if !s.Checkpointed || d.Schedule != "" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "checkpointed turn end rolls over", state: func() State { s := requested; s.Checkpointed = true; return s }(), ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if d.RollOver != ReasonFallback || s.Stage != StageCheckpointed {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "failed checkpoint gets one repair", state: func() State { s := requested; s.NotesError = "section State is 20 KiB over the limit"; return s }(), ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.Repairs != 1 || !strings.Contains(d.Steer, "#4] The notes checkpoint failed: section State is 20 KiB over the limit") {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "second failure gives up", state: func() State { s := requested; s.Repairs = 1; s.NotesError = "still too big"; return s }(), ev: Event{Kind: EvTurnEnd}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if !d.GiveUp || !s.Exhausted || d.Steer != "" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "failed notes write is recorded for turn end", state: requested, ev: Event{Kind: EvNotes, NotesError: "oversized"}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if s.NotesError != "oversized" || s.Checkpointed {
					t.Errorf("state %+v", s)
				}
			}},
		{name: "notes write in the reminder zone schedules the host", ev: Event{Kind: EvNotes, NotesOK: true}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != ReasonHost || d.Schedule != ReasonHost || d.Gate == nil || !d.Gate.Auto ||
					!strings.HasPrefix(d.ToolText, "Rollover scheduled by the host: window #1 → #2") {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "notes write below the floor is logged, not scheduled", ev: Event{Kind: EvNotes, NotesOK: true}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != "" || d.Gate == nil || d.Gate.Blocker != BlockLowPressure || d.ToolText != "" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "notes write with a pending schedule", state: State{Window: 1, Pending: ReasonUser}, ev: Event{Kind: EvNotes, NotesOK: true}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) { expectNoAction(t, d) }},
		{name: "new_context schedules for the model", ev: Event{Kind: EvNewContext}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != ReasonModel || d.Schedule != ReasonModel || !strings.HasPrefix(d.ToolText, "rollover scheduled") {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "new_context confirms a host schedule", state: State{Window: 1, Pending: ReasonHost}, ev: Event{Kind: EvNewContext, UserRequested: true}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != ReasonUser || !s.Confirmed {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "new_context refused while a user schedule is pending", state: State{Window: 1, Pending: ReasonUser}, ev: Event{Kind: EvNewContext}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Pending != ReasonUser || d.ToolText != "rollover already scheduled" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "settle runs a model schedule", state: State{Window: 1, Pending: ReasonModel}, ev: Event{Kind: EvSettle}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if d.RollOver != ReasonModel {
					t.Errorf("decision %+v", d)
				}
			}},
		{name: "settle re-checks a host schedule", state: State{Window: 1, Pending: ReasonHost}, ev: Event{Kind: EvSettle}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if d.Cancel != string(BlockLowPressure) || d.RollOver != "" || s.Pending != "" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "settle runs a host schedule that still passes", state: State{Window: 1, Pending: ReasonHost}, ev: Event{Kind: EvSettle}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) {
				if d.RollOver != ReasonHost {
					t.Errorf("decision %+v", d)
				}
			}},
		{name: "user abort cancels a host schedule", state: State{Window: 1, Pending: ReasonHost, Aborted: true}, ev: Event{Kind: EvSettle}, world: world(usageReminder),
			want: func(t *testing.T, s State, d Decision) {
				if d.Cancel != "user_abort" || d.RollOver != "" || s.Pending != "" {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "user abort cancels a model schedule", state: State{Window: 1, Pending: ReasonModel}, ev: Event{Kind: EvSettle, Aborted: true}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if d.Cancel != "user_abort" {
					t.Errorf("decision %+v", d)
				}
			}},
		{name: "a user schedule survives an abort", state: State{Window: 1, Pending: ReasonUser, Aborted: true}, ev: Event{Kind: EvSettle}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if d.RollOver != ReasonUser || d.Cancel != "" {
					t.Errorf("decision %+v", d)
				}
			}},
		{name: "settle ends maintenance without a checkpoint", state: requested, ev: Event{Kind: EvSettle}, world: world(usageFallback),
			want: func(t *testing.T, s State, d Decision) {
				if !d.GiveUp || s.Stage != StageIdle {
					t.Errorf("state %+v decision %+v", s, d)
				}
			}},
		{name: "agent start clears an abort", state: State{Window: 1, Aborted: true}, ev: Event{Kind: EvAgentStart}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s.Aborted {
					t.Error("abort not cleared")
				}
			}},
		{name: "abort event", ev: Event{Kind: EvAbort}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if !s.Aborted {
					t.Error("abort not recorded")
				}
			}},
		{name: "compaction resets the window", state: State{Window: 1, Pending: ReasonHost, ReminderSent: true, Stage: StageCheckpointed, Attempt: 4, Active: 4, Exhausted: true}, ev: Event{Kind: EvCompaction}, world: world(usageLow),
			want: func(t *testing.T, s State, d Decision) {
				if s != (State{Window: 1, Attempt: 4}) {
					t.Errorf("state %+v", s)
				}
				if !s.StaleMaintenance(4) {
					t.Error("attempt 4 should read as stale after the compaction")
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, d := Step(c.state, c.ev, c.world)
			if s.Window != 1 {
				t.Errorf("window %d", s.Window)
			}
			c.want(t, s, d)
		})
	}
}

func expectNoAction(t *testing.T, d Decision) {
	t.Helper()
	if d.Steer != "" || d.Block || d.Schedule != "" || d.RollOver != "" || d.Cancel != "" || d.GiveUp || d.ToolText != "" {
		t.Errorf("unexpected action %+v", d)
	}
}

// TestDisabledDoesNothing: with enabled false in the configuration, no
// event leads to a steer, a blocked tool, a schedule or a rollover, and
// Pi's compaction is left to Pi, even where an enabled plugin would act.
func TestDisabledDoesNothing(t *testing.T) {
	path, nb := gateSession(t, false)
	cfg := testConfig()
	cfg.Enabled = false
	w := World{Path: path, Notebook: nb, Usage: usageFallback, Pi: testPi, Config: cfg}
	states := []State{{Window: 1}, {Window: 1, Stage: StageRequested, Attempt: 1, Active: 1}, {Window: 1, Pending: ReasonModel}}
	events := []Event{{Kind: EvTurnEnd}, {Kind: EvToolCall, Tool: "bash"}, {Kind: EvNotes, NotesOK: true}, {Kind: EvSettle}}
	for _, st := range states {
		for _, ev := range events {
			if _, d := Step(st, ev, w); d != (Decision{}) {
				t.Errorf("disabled, state %+v, event %+v: decision %+v", st, ev, d)
			}
		}
		// new_context is refused with the gate's reason, not a bare no.
		for _, ev := range []Event{{Kind: EvNewContext}, {Kind: EvNewContext, UserRequested: true}} {
			ns, d := Step(st, ev, w)
			if d.Schedule != "" || d.RollOver != "" || d.Gate == nil || d.Gate.Blocker != BlockDisabled || !strings.Contains(d.ToolText, "disabled") || ns.Pending != st.Pending {
				t.Errorf("disabled, state %+v, %+v: decision %+v; want the gate's refusal, nothing scheduled", st, ev, d)
			}
		}
	}
	enabled := w
	enabled.Config = testConfig()
	if _, d := Step(State{Window: 1}, Event{Kind: EvTurnEnd}, enabled); d.Steer == "" {
		t.Fatal("the same turn end with the plugin enabled sends no steer: the test shows nothing")
	}
	if d := BeforeCompact(BeforeCompactInput{RolloverInput: RolloverInput{Path: path, Notebook: nb, Pi: testPi, Config: cfg}}); d.Compaction != nil || d.Declined != DeclineDisabled {
		t.Errorf("disabled, Pi's compaction: %+v; want it left to Pi", d)
	}
}

// TestFallbackRun walks one whole fallback: reminder, maintenance request,
// a blocked read, the checkpoint, the rollover at turn end, the compaction.
func TestFallbackRun(t *testing.T) {
	path, nb := gateSession(t, false)
	w := World{Path: path, Notebook: nb, Usage: usageReminder, Pi: testPi, Config: testConfig()}
	var s State
	var d Decision
	s, d = Step(s, Event{Kind: EvTurnEnd}, w)
	if d.SteerType != ReminderType {
		t.Fatalf("reminder: %+v", d)
	}
	w.Usage = usageFallback
	s, d = Step(s, Event{Kind: EvTurnEnd}, w)
	if d.SteerType != MaintenanceType || d.Attempt != 1 {
		t.Fatalf("maintenance: %+v", d)
	}
	s, d = Step(s, Event{Kind: EvToolCall, Tool: "read"}, w)
	if !d.Block {
		t.Fatal("read not blocked")
	}
	s, _ = Step(s, Event{Kind: EvToolCall, Tool: "notes"}, w)
	s, _ = Step(s, Event{Kind: EvNotes, NotesOK: true}, w)
	s, d = Step(s, Event{Kind: EvTurnEnd}, w)
	if d.RollOver != ReasonFallback {
		t.Fatalf("rollover: %+v", d)
	}
	c := BeforeCompact(BeforeCompactInput{RolloverInput: RolloverInput{Path: path, Notebook: nb, Reason: d.RollOver, Pi: testPi, Config: testConfig()}, Ours: true})
	if c.Compaction == nil || c.Compaction.Details.Reason != ReasonFallback {
		t.Fatalf("compaction: %+v", c)
	}
	s, _ = Step(s, Event{Kind: EvCompaction}, w)
	if s.Stage != StageIdle || s.Attempt != 1 || !s.StaleMaintenance(1) {
		t.Fatalf("after compaction: %+v", s)
	}
}

func TestRebuildState(t *testing.T) {
	b := newJB(t)
	b.turn("q", 10)
	b.add("custom_message", map[string]any{"customType": ReminderType, "content": "r", "display": true})
	b.add("custom_message", map[string]any{"customType": MaintenanceType, "content": "m", "display": true, "details": map[string]any{"attempt": 3}})
	if s := RebuildState(b.path()); s != (State{Window: 1, ReminderSent: true, Attempt: 3}) {
		t.Errorf("window 1: %+v", s)
	}
	u := b.turn("q2", 10)
	b.compaction(u, 2)
	b.turn("q3", 10)
	if s := RebuildState(b.path()); s != (State{Window: 2, Attempt: 3}) {
		t.Errorf("window 2: %+v", s)
	}
}
