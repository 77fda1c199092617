package rollover

import (
	"encoding/json"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"strings"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// This file is the reminder and fallback state machine (docs/spec-notes.md,
// "Reminder and fallback", "Implementation notes" and "Host-initiated
// rollover"), written as pure decisions: the extension sends each event with
// the session's volatile State and the World as it is now, applies the returned
// Decision and keeps the returned State. Nothing here has side effects.

// Custom types of the messages this package asks the extension to send.
const (
	ReminderType    = "note-context/reminder"
	MaintenanceType = "note-context/maintenance"
	ContinueType    = "note-context/continue"
)

// Stage is the fallback state machine's stage.
type Stage = pihistory.FallbackStage

// Fallback stages (docs/spec-notes.md, "Reminder and fallback").
const (
	StageIdle         Stage = ""
	StageRequested    Stage = "requested"    // a checkpoint was asked for; only notes may run
	StageCheckpointed Stage = "checkpointed" // the checkpoint landed; the host rolls over at this turn_end
)

// State is the per-session volatile state. The zero value is a fresh
// session in window 1; RebuildState recovers it from a journal path after a
// restart.
type State struct {
	Window       int    `json:"window"`
	Pending      Reason `json:"pending,omitempty"`   // the scheduled rollover's reason; "" when none
	Confirmed    bool   `json:"confirmed,omitempty"` // a host schedule confirmed by the model or user
	ReminderSent bool   `json:"reminderSent,omitempty"`
	Stage        Stage  `json:"stage,omitempty"`
	Attempt      int    `json:"attempt"`                // last maintenance attempt id used in this session
	Active       int    `json:"active,omitempty"`       // the attempt in progress; 0 when none
	Repairs      int    `json:"repairs,omitempty"`      // repair steers sent in this attempt
	Blocked      int    `json:"blocked,omitempty"`      // non-notes calls blocked in this attempt
	Exhausted    bool   `json:"exhausted,omitempty"`    // maintenance gave up for this window
	NotesError   string `json:"notesError,omitempty"`   // the failed checkpoint write, awaiting turn_end
	Checkpointed bool   `json:"checkpointed,omitempty"` // a checkpoint landed during maintenance
	Aborted      bool   `json:"aborted,omitempty"`      // the current run was aborted by the user
}

// World is what the state machine reads besides its own state: the branch,
// its notebook, usage and settings. The gate runs on it.
type World struct {
	Path     []*journal.Entry
	Notebook *notebook.State // nil when the branch has none
	Usage    Usage
	Model    string
	Pi       PiSettings
	Config   Config
}

// EventKind names an event the extension reports.
type EventKind string

// Events (Pi extension hooks, or tool calls of this plugin).
const (
	EvAgentStart EventKind = "agent_start" // clears a user abort
	EvTurnEnd    EventKind = "turn_end"    // an assistant turn ended
	EvToolCall   EventKind = "tool_call"   // a tool is about to run
	EvNotes      EventKind = "notes"       // a notes write or review finished
	EvNewContext EventKind = "new_context" // the model called new_context
	EvSettle     EventKind = "settle"      // agent_before_settle / agent_settled
	EvCompaction EventKind = "compaction"  // a compaction reached the branch (ours or Pi's)
	EvAbort      EventKind = "abort"       // ctx.signal.aborted was seen
	// EvRolloverFailed: the compaction the extension started for a
	// rollover (ctx.compact) failed; Why classifies the error.
	EvRolloverFailed EventKind = "rollover_failed"
	// EvSessionStart: Pi started, resumed, reloaded or replaced the
	// session. Pending schedules, maintenance and the reminder marker are
	// volatile (docs/spec-notes.md, "Branch semantics and volatile state"): they start again from the branch.
	EvSessionStart EventKind = "session_start"
)

// Why a rollover's compaction failed (EvRolloverFailed), as the ledger's
// rollover_failed rows name it. boundary_rejected: the compaction returned
// as a boundary entry (Pi ≥ 1.6) never reached the branch.
var FailureWhys = []string{"cancelled", "already_compacted", "nothing_to_compact", "no_model", "other", "boundary_rejected", WhyOtherCompaction}

// WhyOtherCompaction is reported (EvRolloverFailed) when another handler
// already proposes a compaction at the boundary a rollover was due at: that
// compaction opens the new window, so the schedule is cancelled (a
// rollover_cancelled row), not failed, and no second compaction is stacked
// on it (docs/spec-notes.md, "The rollover summary").
const WhyOtherCompaction = "other_compaction"

// Event is one event. Only the fields of its kind are read.
type Event struct {
	Kind          EventKind `json:"kind"`
	Aborted       bool      `json:"aborted,omitempty"`       // turn_end, settle: ctx.signal.aborted
	Tool          string    `json:"tool,omitempty"`          // tool_call: the tool's name
	NotesOK       bool      `json:"notesOk,omitempty"`       // notes: the write or review landed
	NotesError    string    `json:"notesError,omitempty"`    // notes: why it failed
	UserRequested bool      `json:"userRequested,omitempty"` // new_context: the userRequested argument
	Handoff       string    `json:"handoff,omitempty"`       // new_context: the agent's Handoff (CheckHandoff)
	Why           string    `json:"why,omitempty"`           // rollover_failed: one of FailureWhys
}

// Decision is what the extension must do for an event.
type Decision struct {
	// Steer is a message to steer into the run (custom type SteerType),
	// with details {attempt} for maintenance messages.
	Steer     string `json:"steer,omitempty"`
	SteerType string `json:"steerType,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	// Block refuses the tool call with BlockReason.
	Block       bool   `json:"block,omitempty"`
	BlockReason string `json:"blockReason,omitempty"`
	// ToolText is the text of this plugin's tool result (new_context) or
	// the sentence to append to the notes result.
	ToolText string `json:"toolText,omitempty"`
	// Schedule is set when a rollover was scheduled (or confirmed) with
	// this reason; Gate holds the verdict for the ledger.
	Schedule Reason   `json:"schedule,omitempty"`
	Gate     *Verdict `json:"gate,omitempty"`
	// RollOver asks for the rollover now, at this boundary, with this
	// reason: the extension calls BeforeCompact (boundary entries) or
	// ctx.compact() for an external owner.
	RollOver Reason `json:"rollOver,omitempty"`
	// Cancel names why a pending schedule was cancelled (a gate blocker,
	// external_owner or user_abort) for the rollover_cancelled ledger row.
	Cancel    string `json:"cancel,omitempty"`
	Cancelled Reason `json:"cancelled,omitempty"` // the reason of the cancelled schedule
	// GiveUp is set when maintenance gives up for the window: Pi's own
	// compaction (with its LLM summary) proceeds.
	GiveUp bool `json:"giveUp,omitempty"`
	// Failed names the reason of a rollover whose compaction failed, and
	// FailedWhy why, for the rollover_failed ledger row.
	Failed    Reason `json:"failed,omitempty"`
	FailedWhy string `json:"failedWhy,omitempty"`
}

// Texts the state machine sends.
const (
	maintenanceBlockReason = "context maintenance in progress — only notes is available until the checkpoint lands"
	reminderText           = "[note-context] A context-window rollover is due. Update notes against what will leave the window (current notebook below), or call notes({reviewed:true}) if they are already sufficient. Then call new_context."
)

func maintenanceText(attempt int) string {
	return fmt.Sprintf("[note-context maintenance #%d] The host needs a notes checkpoint before it starts a new window. Make one notes write (or notes({reviewed:true})) now; the host will start a new window as soon as it lands. Do not call other tools.", attempt)
}

func repairText(attempt int, err string) string {
	return fmt.Sprintf("[note-context maintenance #%d] The notes checkpoint failed: %s. Fix that and make one notes write now; do not call other tools.", attempt, err)
}

// NeutralText replaces a maintenance message whose attempt is no longer
// active (it survived into the kept tail of a new window).
func NeutralText(attempt int) string {
	return fmt.Sprintf("[note-context maintenance #%d] completed; no action required.", attempt)
}

// StaleMaintenance reports whether a maintenance message of the given
// attempt should be shown as NeutralText in the context.
func (s State) StaleMaintenance(attempt int) bool { return attempt != s.Active }

// RenderNotebook is the notebook as the reminder attaches it.
func RenderNotebook(nb *notebook.State) string {
	if nb == nil {
		return "(no notebook yet)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<notebook revision=\"%d\">\n%s\n</notebook>", nb.Revision, nb.Sections.Render())
	return b.String()
}

// usageOf is the usage the zones are judged on (see pressure).
func usageOf(w World) (int, bool) {
	if w.Usage.Tokens < 0 {
		return 0, false // unknown: no reminder, no fallback
	}
	n, _ := pressure(w.Path, w.Usage)
	return n, true
}

// hostGate runs the gate for the host with the given pending schedule.
func hostGate(w World, pending Reason) Verdict {
	return Gate(GateInput{Path: w.Path, Notebook: w.Notebook, Request: ReasonHost, Pending: pending,
		Usage: w.Usage, Model: w.Model, Pi: w.Pi, Config: w.Config})
}

// recheckHost re-runs the host gate on an unconfirmed host schedule and
// cancels it when it no longer passes (docs/spec-notes.md, "Host-initiated rollover").
func recheckHost(s *State, w World, d *Decision) {
	if s.Pending != ReasonHost || s.Confirmed {
		return
	}
	if v := hostGate(w, ""); !v.OK {
		d.Cancel, d.Cancelled = string(v.Blocker), ReasonHost
		s.Pending = ""
	}
}

// giveUp ends maintenance for the window.
func giveUp(s *State, d *Decision) {
	s.Stage, s.Active, s.Exhausted, s.NotesError, s.Checkpointed = StageIdle, 0, true, "", false
	d.GiveUp = true
}

// Step applies one event. It returns the new state and what to do.
func Step(s State, ev Event, w World) (State, Decision) {
	if s.Window == 0 {
		s.Window = windowNumber(w.Path)
	}
	var d Decision
	cfg := w.Config
	if !cfg.Enabled && ev.Kind != EvCompaction && ev.Kind != EvSessionStart && ev.Kind != EvNewContext {
		// Off (the configuration's enabled is false): no reminder, no
		// maintenance, no tool blocked, nothing scheduled; a compaction
		// still starts the next window's state afresh, and new_context
		// still gets the gate's answer (it refuses, saying why).
		return s, d
	}
	switch ev.Kind {
	case EvAgentStart:
		s.Aborted = false

	case EvAbort:
		s.Aborted = true

	case EvToolCall:
		if s.Stage != StageRequested || ev.Tool == "notes" {
			break
		}
		s.Blocked++
		d.Block, d.BlockReason = true, maintenanceBlockReason
		if s.Blocked >= cfg.MaxBlockedCalls {
			giveUp(&s, &d)
		}

	case EvNotes:
		if s.Stage == StageRequested {
			if ev.NotesOK {
				s.Checkpointed, s.NotesError = true, ""
			} else {
				s.NotesError = ev.NotesError
			}
			break
		}
		if !ev.NotesOK || s.Pending != "" {
			break
		}
		v := hostGate(w, s.Pending)
		d.Gate = &v
		if v.OK {
			s.Pending, s.Confirmed = ReasonHost, false
			d.Schedule, d.ToolText = ReasonHost, v.Text
		}

	case EvNewContext:
		req := ReasonModel
		if ev.UserRequested {
			req = ReasonUser
		}
		v := Gate(GateInput{Path: w.Path, Notebook: w.Notebook, Request: req, Pending: s.Pending,
			Usage: w.Usage, Model: w.Model, Pi: w.Pi, Config: cfg})
		d.Gate, d.ToolText = &v, v.Text
		if v.OK {
			s.Pending, s.Confirmed = req, v.Confirms || s.Confirmed
			d.Schedule = req
		}

	case EvTurnEnd:
		if ev.Aborted {
			s.Aborted = true
			break // an aborted turn gets no reminder and no maintenance steer
		}
		recheckHost(&s, w, &d)
		switch s.Stage {
		case StageRequested:
			switch {
			case s.Checkpointed:
				s.Stage = StageCheckpointed
				d.RollOver = ReasonFallback
			case s.NotesError != "":
				if s.Repairs < cfg.MaxRepairs {
					s.Repairs++
					d.Steer, d.SteerType, d.Attempt = repairText(s.Active, s.NotesError), MaintenanceType, s.Active
					s.NotesError = ""
				} else {
					giveUp(&s, &d)
				}
			}
			return s, d
		case StageCheckpointed:
			return s, d // the rollover is under way
		}
		if s.Pending != "" {
			return s, d // the pending rollover will relieve the pressure
		}
		used, known := usageOf(w)
		if !known {
			return s, d
		}
		zones := cfg.Zones(w.Usage.ContextWindow, w.Pi)
		if !s.Exhausted && used >= zones.Fallback {
			s.Attempt++
			s.Active, s.Stage, s.Repairs, s.Blocked, s.Checkpointed, s.NotesError = s.Attempt, StageRequested, 0, 0, false, ""
			d.Steer, d.SteerType, d.Attempt = maintenanceText(s.Active), MaintenanceType, s.Active
			return s, d
		}
		if !s.ReminderSent && used >= zones.Reminder {
			s.ReminderSent = true
			d.Steer, d.SteerType = reminderText+"\n"+RenderNotebook(w.Notebook), ReminderType
		}

	case EvSettle:
		if ev.Aborted {
			s.Aborted = true
		}
		if s.Stage == StageRequested {
			giveUp(&s, &d) // no checkpoint by the end of the run
		}
		if s.Pending == "" {
			break
		}
		if s.Aborted && s.Pending != ReasonUser {
			d.Cancel, d.Cancelled = "user_abort", s.Pending
			s.Pending, s.Confirmed = "", false
			break
		}
		recheckHost(&s, w, &d)
		if s.Pending != "" {
			d.RollOver = s.Pending
		}

	case EvCompaction:
		s = State{Window: windowNumber(w.Path), Attempt: s.Attempt}

	case EvSessionStart:
		r := RebuildState(w.Path)
		r.Attempt = max(r.Attempt, s.Attempt) // new maintenance ids stay new
		s = r

	case EvRolloverFailed:
		// The rollover asked for is dropped, so the next run does not ask
		// for it again (and fail again). A failed fallback ends
		// maintenance for the window: Pi's own compaction takes over.
		var was Reason
		switch {
		case s.Stage == StageCheckpointed:
			was = ReasonFallback
			s.Stage, s.Active, s.NotesError, s.Checkpointed = StageIdle, 0, "", false
			if ev.Why != WhyOtherCompaction {
				giveUp(&s, &d)
			}
		case s.Pending != "":
			was = s.Pending
		default:
			return s, d // nothing was under way (a late or repeated report)
		}
		if ev.Why == WhyOtherCompaction {
			d.Cancel, d.Cancelled = ev.Why, was
		} else {
			d.Failed, d.FailedWhy = was, ev.Why
		}
		s.Pending, s.Confirmed = "", false
	}
	return s, d
}

// RebuildState recovers the state after a restart from the active path:
// the window number, whether this window already got its reminder, and the
// last maintenance attempt id (so new attempts get new ids and old
// messages stay neutral). Pending schedules and maintenance are volatile
// and start empty (docs/spec-notes.md, "Branch semantics and volatile state").
func RebuildState(path []*journal.Entry) State {
	s := State{Window: windowNumber(path)}
	for _, e := range path {
		switch {
		case e.Type == "compaction":
			s.ReminderSent = false
		case e.Type == "custom_message" && e.CustomType == ReminderType:
			s.ReminderSent = true
		case e.Type == "custom_message" && e.CustomType == MaintenanceType:
			var r struct {
				Details struct {
					Attempt int `json:"attempt"`
				} `json:"details"`
			}
			if json.Unmarshal(e.Raw, &r) == nil && r.Details.Attempt > s.Attempt {
				s.Attempt = r.Details.Attempt
			}
		}
	}
	return s
}
