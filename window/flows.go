package window

// This file holds the rollover flows: the status line, the gate, the
// template compaction, the state machine's events and the ledger rows each
// one produces.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
)

// UsageBody is the context usage the extension reads from
// ctx.getContextUsage(); tokens null or absent means unknown.
type UsageBody struct {
	Tokens        *int `json:"tokens"`
	ContextWindow int  `json:"contextWindow"`
}

func (u *UsageBody) usage() rollover.Usage {
	if u == nil || u.Tokens == nil {
		win := 0
		if u != nil {
			win = u.ContextWindow
		}
		return rollover.Usage{Tokens: -1, ContextWindow: win}
	}
	return rollover.Usage{Tokens: *u.Tokens, ContextWindow: u.ContextWindow}
}

// piSettings fills what the extension left out of the user's Pi compaction
// settings with Pi's defaults.
func piSettings(p *rollover.PiSettings) rollover.PiSettings {
	out := rollover.PiSettings{KeepRecentTokens: rollover.DefaultKeepRecentTokens, ReserveTokens: rollover.DefaultReserveTokens}
	if p != nil {
		if p.KeepRecentTokens > 0 {
			out.KeepRecentTokens = p.KeepRecentTokens
		}
		if p.ReserveTokens > 0 {
			out.ReserveTokens = p.ReserveTokens
		}
		if p.TailTokens != nil && *p.TailTokens >= 0 {
			t := *p.TailTokens
			out.TailTokens = &t
		}
	}
	return out
}

// rolloverNotebook is a branch's notebook as package rollover takes it: nil
// when the branch has none.
func rolloverNotebook(nb notebook.State) *notebook.State {
	if !nb.Exists() {
		return nil
	}
	return &nb
}

// StatusRequest asks for the notebook's staleness status line
// (POST /v1/sessions/{id}/status). The caller keeps the delivery
// bookkeeping (notebook.StatusInput).
type StatusRequest struct {
	Leaf               string `json:"leaf,omitempty"`
	ContextTokens      *int   `json:"contextTokens"`
	WindowStartTokens  *int   `json:"windowStartTokens,omitempty"` // default: the path's first usage after its last compaction
	BranchChanged      bool   `json:"branchChanged,omitempty"`
	ExternalCompaction bool   `json:"externalCompaction,omitempty"`
	DeliveredStep      int    `json:"deliveredStep,omitempty"`
	Suppressed         bool   `json:"suppressed,omitempty"`
}

// Status is the status line for the branch the request names.
func (s *Service) Status(sid string, in StatusRequest) (notebook.Status, error) {
	b, err := s.branch(sid, in.Leaf)
	if err != nil {
		return notebook.Status{}, err
	}
	ws := in.WindowStartTokens
	if ws == nil {
		ws = notebook.WindowStartTokens(b.path)
	}
	return notebook.StatusLine(notebook.StatusInput{Notebook: notebook.Read(b.path), ContextTokens: in.ContextTokens,
		WindowStartTokens: ws, BranchChanged: in.BranchChanged, ExternalCompaction: in.ExternalCompaction,
		StepTokens: s.config().StatusStepTokens, DeliveredStep: in.DeliveredStep, Suppressed: in.Suppressed}), nil
}

// GateRequest asks the gate alone, without scheduling anything
// (POST /v1/sessions/{id}/gate).
type GateRequest struct {
	Leaf    string               `json:"leaf,omitempty"`
	Request rollover.Reason      `json:"request"`           // model, user or host
	Pending *rollover.Reason     `json:"pending,omitempty"` // default: the session's pending schedule
	Usage   *UsageBody           `json:"usage,omitempty"`
	Model   string               `json:"model,omitempty"`
	Pi      *rollover.PiSettings `json:"pi,omitempty"`
}

func (in *GateRequest) check() error {
	switch in.Request {
	case rollover.ReasonModel, rollover.ReasonUser, rollover.ReasonHost:
	default:
		return invalid("request", "request must be model, user or host; not %q", in.Request)
	}
	if in.Pending != nil && *in.Pending != "" && !rollover.ValidReason(*in.Pending) {
		return invalid("pending", "pending must be empty (none) or %s; not %q", rollover.ReasonNames(), *in.Pending)
	}
	return nil
}

// Gate is the gate's verdict on a rollover request, against the session's
// pending schedule unless the request names one.
func (s *Service) Gate(sid string, in GateRequest) (rollover.Verdict, error) {
	if err := in.check(); err != nil {
		return rollover.Verdict{}, err
	}
	b, err := s.branch(sid, in.Leaf)
	if err != nil {
		return rollover.Verdict{}, err
	}
	s.mu.Lock()
	pending := s.state(b.sid, b.path).Pending
	s.mu.Unlock()
	if in.Pending != nil {
		pending = *in.Pending
	}
	return rollover.Gate(rollover.GateInput{Path: b.path, Notebook: rolloverNotebook(notebook.Read(b.path)), Request: in.Request,
		Pending: pending, Usage: in.Usage.usage(), Model: in.Model, Pi: piSettings(in.Pi), Config: s.config()}), nil
}

// CompactionRequest is Pi's session_before_compact, or a rollover the
// extension carries out (POST /v1/sessions/{id}/compaction).
type CompactionRequest struct {
	Leaf               string               `json:"leaf,omitempty"`
	FirstKeptEntryID   string               `json:"firstKeptEntryId,omitempty"` // preparation.firstKeptEntryId; "" projects the cut
	CustomInstructions string               `json:"customInstructions,omitempty"`
	Model              string               `json:"model,omitempty"`
	Ours               bool                 `json:"ours,omitempty"`   // this plugin asked for the compaction
	MidRun             bool                 `json:"midRun,omitempty"` // Pi's threshold compaction inside a run
	Reason             rollover.Reason      `json:"reason,omitempty"` // default: the pending schedule (ours) or threshold
	Pi                 *rollover.PiSettings `json:"pi,omitempty"`
}

func (in *CompactionRequest) check() error {
	if in.Reason != "" && !rollover.ValidReason(in.Reason) {
		return invalid("reason", "reason must be %s; not %q", rollover.ReasonNames(), in.Reason)
	}
	return nil
}

// Compaction decides a compaction: the template summary, or why Pi's own
// summary should run instead (that decline is written to the ledger).
// Without a reason in the request, a compaction that is not ours is Pi's
// threshold; ours is the fallback once maintenance checkpointed, else the
// pending schedule, else the model's.
func (s *Service) Compaction(sid string, in CompactionRequest) (rollover.CompactDecision, error) {
	if err := in.check(); err != nil {
		return rollover.CompactDecision{}, err
	}
	b, err := s.branch(sid, in.Leaf)
	if err != nil {
		return rollover.CompactDecision{}, err
	}
	reason := in.Reason
	s.mu.Lock()
	st := s.state(b.sid, b.path)
	if reason == "" {
		switch {
		case !in.Ours:
			reason = rollover.ReasonThreshold
		case st.Stage == rollover.StageCheckpointed:
			reason = rollover.ReasonFallback
		case st.Pending != "":
			reason = st.Pending
		default:
			reason = rollover.ReasonModel
		}
	}
	win := st.Window
	s.mu.Unlock()
	d := rollover.BeforeCompact(rollover.BeforeCompactInput{
		RolloverInput: rollover.RolloverInput{Path: b.path, Notebook: rolloverNotebook(notebook.Read(b.path)), Reason: reason,
			FirstKeptEntryID: in.FirstKeptEntryID, Pi: piSettings(in.Pi), Config: s.config()},
		CustomInstructions: in.CustomInstructions, Model: in.Model, Ours: in.Ours, MidRun: in.MidRun})
	if d.Compaction == nil && d.Declined != "" {
		s.record(rollover.Row{Kind: rollover.RowRolloverDeclined, Session: b.sid, Window: win, Reason: reason, Why: d.Declined})
	}
	return d, nil
}

// EventRequest is one state-machine event (POST /v1/sessions/{id}/events).
type EventRequest struct {
	Leaf  string               `json:"leaf,omitempty"`
	Event rollover.Event       `json:"event"`
	Usage *UsageBody           `json:"usage,omitempty"`
	Model string               `json:"model,omitempty"`
	Pi    *rollover.PiSettings `json:"pi,omitempty"`
}

func (in *EventRequest) check() error {
	if in.Event.Handoff != "" {
		if in.Event.Kind != rollover.EvNewContext {
			return invalid("event.handoff", "a handoff goes with a new_context event only, not %q", in.Event.Kind)
		}
		if err := rollover.CheckHandoff(in.Event.Handoff); err != nil {
			return invalid("event.handoff", "%s", err.Error())
		}
	}
	switch in.Event.Kind {
	case rollover.EvAgentStart, rollover.EvTurnEnd, rollover.EvToolCall, rollover.EvNotes, rollover.EvNewContext,
		rollover.EvSettle, rollover.EvCompaction, rollover.EvAbort, rollover.EvSessionStart:
		return nil
	case rollover.EvRolloverFailed:
		if !slices.Contains(rollover.FailureWhys, in.Event.Why) {
			return invalid("event.why", "why must be one of %s; not %q", strings.Join(rollover.FailureWhys, ", "), in.Event.Why)
		}
		return nil
	}
	return invalid("event.kind", "unknown event kind %q", in.Event.Kind)
}

// EventResponse is the decision for an event and the state after it.
type EventResponse struct {
	Session  string            `json:"session"`
	Leaf     string            `json:"leaf"`
	State    rollover.State    `json:"state"`
	Decision rollover.Decision `json:"decision"`
	// Notebook is the branch's notebook as the reminder and continuation
	// texts show it ("" without one).
	Notebook string `json:"notebook,omitempty"`
	// Append is the Handoff entry to append (new_context with a handoff
	// that scheduled a rollover); absent otherwise. A refused request
	// writes no Handoff, so the journal holds only Handoffs of rollovers.
	Append *EntryToAppend `json:"append,omitempty"`
}

// Event steps the session's state machine with one event and writes the
// ledger rows of the decision: a notes write that landed, the rollover a
// compaction of ours brought, a follow-up after a turn.
func (s *Service) Event(sid string, in EventRequest) (EventResponse, error) {
	if err := in.check(); err != nil {
		return EventResponse{}, err
	}
	cfg := s.config() // once: the check below and the step see the same file
	if in.Event.Kind == rollover.EvNewContext && in.Event.Handoff == "" && cfg.RequireHandoff {
		return EventResponse{}, invalid("event.handoff", "a handoff is required with new_context (requireHandoff is on): write what is done, what is in progress and what comes next, and call again")
	}
	b, err := s.branch(sid, in.Leaf)
	if err != nil {
		return EventResponse{}, err
	}
	path := b.path
	nb := notebook.Read(path)
	rnb := rolloverNotebook(nb)
	world := rollover.World{Path: path, Notebook: rnb, Usage: in.Usage.usage(), Model: in.Model, Pi: piSettings(in.Pi), Config: cfg}

	s.mu.Lock()
	st := s.state(sid, path)
	ns, d := rollover.Step(*st, in.Event, world)
	*st = ns
	s.mu.Unlock()

	rows := rollover.DecisionRows(sid, ns, d)
	switch in.Event.Kind {
	case rollover.EvNotes:
		if in.Event.NotesOK && nb.Exists() {
			rows = append(rows, rollover.Row{Kind: rollover.RowNotes, Session: sid, Window: ns.Window,
				NotebookRevision: nb.Revision, NotebookBytes: nb.Bytes, EntryID: nb.EntryID, Review: nb.ReviewOnly})
		}
	case rollover.EvCompaction:
		rows = append(rows, rolloverRowsOf(sid, path, rnb)...)
	case rollover.EvTurnEnd:
		if row, ok := rollover.FollowUpRow(sid, path); ok {
			rows = append(rows, row)
		}
	}
	s.record(rows...)
	text := ""
	if rnb != nil {
		text = rnb.Sections.Render()
	}
	out := EventResponse{Session: sid, Leaf: b.leaf, State: ns, Decision: d, Notebook: text}
	if in.Event.Kind == rollover.EvNewContext && in.Event.Handoff != "" && d.Schedule != "" {
		data, err := rollover.NewHandoffRecord(in.Event.Handoff)
		if err != nil {
			return EventResponse{}, invalid("event.handoff", "%s", err.Error())
		}
		out.Append = &EntryToAppend{CustomType: rollover.HandoffType, Data: data}
	}
	return out, nil
}

// StateView is a session's state-machine state as of a branch
// (GET /v1/sessions/{id}/rollover-state).
type StateView struct {
	Session string         `json:"session"`
	Leaf    string         `json:"leaf"`
	State   rollover.State `json:"state"`
}

// State reports the session's volatile state, rebuilt from the branch when
// this process has none for it or the branch is in another window.
func (s *Service) State(sid, leaf string) (StateView, error) {
	b, err := s.branch(sid, leaf)
	if err != nil {
		return StateView{}, err
	}
	s.mu.Lock()
	st := *s.state(b.sid, b.path)
	s.mu.Unlock()
	return StateView{Session: b.sid, Leaf: b.leaf, State: st}, nil
}

// contextTokens is Pi's estimate of the context a branch path gives the
// model.
func contextTokens(path []*journal.Entry) int {
	n := 0
	for _, m := range rollover.BuildContext(path) {
		n += rollover.EstimateTokens(m)
	}
	return n
}

// rolloverRowsOf are the ledger rows of the last compaction on path when
// this plugin wrote it (fromHook, with our details): the rollover, and the
// provider's cache figures of the window it ended.
func rolloverRowsOf(sid string, path []*journal.Entry, nb *notebook.State) []rollover.Row {
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		if e.Type != "compaction" {
			continue
		}
		if !e.FromHook {
			return nil
		}
		var v struct {
			Summary          string           `json:"summary"`
			FirstKeptEntryID string           `json:"firstKeptEntryId"`
			TokensBefore     int              `json:"tokensBefore"`
			Details          rollover.Details `json:"details"`
		}
		if json.Unmarshal(e.Raw, &v) != nil || !rollover.ValidReason(v.Details.Reason) {
			return nil
		}
		// What left the window: Pi's estimate of the context just before
		// the compaction, less that of the context it leaves.
		reclaim := contextTokens(path[:i]) - contextTokens(path[:i+1])
		row := rollover.RolloverRow(sid, rollover.Compaction{Summary: v.Summary, FirstKeptEntryID: v.FirstKeptEntryID,
			TokensBefore: v.TokensBefore, Details: v.Details}, nb, max(reclaim, 0))
		row.EntryID = e.ID
		// The notebook writes and reviews of the window that ended: the
		// records after the compaction before this one.
		start := 0
		for j := i - 1; j >= 0; j-- {
			if path[j].Type == "compaction" {
				start = j + 1
				break
			}
		}
		inWindow := map[string]bool{}
		for _, x := range path[start:i] {
			inWindow[x.ID] = true
		}
		for _, rev := range notebook.Revisions(path[:i]) {
			switch {
			case !inWindow[rev.EntryID]:
			case rev.ReviewOnly:
				row.NotebookReviews++
			default:
				row.NotebookWrites++
			}
		}
		return []rollover.Row{row, rollover.WindowCacheRow(sid, row.EndedWindow, path[start:i])}
	}
	return nil
}
