package rollover

import (
	"encoding/json"
	"fmt"
	pihistory "github.com/pi-history/pi-history"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// Blocker is the stable name of a gate refusal, used in ledger rows and
// API responses. The text shown to the model is in Verdict.Text.
type Blocker = pihistory.GateBlocker

// Gate blockers (docs/spec-notes.md, "The gate", "Host-initiated rollover").
const (
	BlockNoNotebook    Blocker = "no_notebook"
	BlockStaleNotebook Blocker = "stale_notebook"
	BlockNothingToDrop Blocker = "nothing_to_drop"
	BlockLowReclaim    Blocker = "low_reclaim"
	BlockLowPressure   Blocker = "low_pressure"   // host only: the pressure floor
	BlockExternalOwner Blocker = "external_owner" // host only: another extension owns compaction
	BlockPending       Blocker = "already_pending"
	BlockDisabled      Blocker = "disabled"          // the plugin is disabled in the configuration
	BlockAutoOff       Blocker = "auto_rollover_off" // host only: autoRollover is false
	BlockBadRequest    Blocker = "bad_request"       // the request names no known reason
)

// blockerText is the fixed text of each blocker. The pressure floor's text
// carries figures and is built in Gate.
var blockerText = map[Blocker]string{
	BlockNoNotebook:    "no notebook on this branch — write notes first",
	BlockStaleNotebook: "notebook predates material that would be dropped — update or review notes first",
	BlockNothingToDrop: "nothing would leave the window",
	BlockLowReclaim:    "too little would leave the window for a rollover to help — continue working",
	BlockExternalOwner: "another extension owns compaction for this model; the host does not roll over on its own",
	BlockPending:       "rollover already scheduled",
	BlockDisabled:      "note-context is disabled in its configuration",
	BlockAutoOff:       "host-initiated rollover is turned off (autoRollover: false)",
	BlockBadRequest:    "a rollover request must say model, user or host",
}

// GateInput is everything the gate reads. Request is who asks now; Pending
// is the reason of the schedule already pending ("" when none).
type GateInput struct {
	Path     []*journal.Entry // active branch, root first, Raw populated
	Notebook *notebook.State  // nil when the branch has none
	Request  Reason           // ReasonModel, ReasonUser or ReasonHost
	Pending  Reason           // "" when no rollover is scheduled
	Usage    Usage            // ctx.getContextUsage(); Tokens < 0 when unknown
	Model    string           // current model "provider/id", for the external-owner list
	Pi       PiSettings
	Config   Config
}

// Verdict is the gate's answer.
type Verdict struct {
	OK      bool    `json:"ok"`
	Blocker Blocker `json:"blocker,omitempty"`
	// Text is what the tool result says: the blocker text on refusal, the
	// scheduling sentence on success.
	Text   string `json:"text"`
	Reason Reason `json:"reason"`         // attribution: the request's reason
	Auto   bool   `json:"auto,omitempty"` // the host initiated it
	// Confirms is set when a model or user request turns a pending host
	// schedule into its own: host-only checks no longer cancel it at settle.
	Confirms bool `json:"confirms,omitempty"`
	// Reconfirm is the external-owner legacy path: a repeated model request
	// re-confirms its own model schedule; no second compaction is made.
	Reconfirm bool `json:"reconfirm,omitempty"`
	// Deferred is set when the current batch has unresolved tool calls: the
	// rollover runs after the batch completes (not a refusal).
	Deferred bool `json:"deferred,omitempty"`
	// ExternalOwner is set when another extension owns compaction for the
	// model: the extension calls ctx.compact() and the owner writes the
	// summary; this package's template is not used.
	ExternalOwner    bool       `json:"externalOwner,omitempty"`
	Window           int        `json:"window"` // the current window; the rollover opens Window+1
	FirstKeptEntryID string     `json:"firstKeptEntryId,omitempty"`
	Projection       Projection `json:"projection"`
}

// Projection is the reclaim the gate projects, in Pi's estimate: the current
// context minus the context after the rollover (template summary plus the
// entries from the cut on). Pressure is the usage the floor was judged on.
type Projection struct {
	Before         int  `json:"before"`
	After          int  `json:"after"`
	Reclaim        int  `json:"reclaim"`
	Pressure       int  `json:"pressure"`
	PressureEstim  bool `json:"pressureEstimated,omitempty"` // usage was unknown or absurd; Pi's estimate was used
	ReminderAt     int  `json:"reminderAt"`
	SummaryTokens  int  `json:"summaryTokens"`
	DroppedEntries int  `json:"droppedEntries"`
}

// Gate runs the structural checks of docs/spec-notes.md, "The gate" in the order the design lists
// them and returns the verdict. It is pure: the same input gives the same
// verdict.
func Gate(in GateInput) Verdict {
	v := Verdict{Reason: in.Request, Auto: in.Request == ReasonHost, Window: windowNumber(in.Path)}
	cfg := in.Config
	block := func(b Blocker) Verdict {
		v.OK, v.Blocker, v.Text = false, b, blockerText[b]
		return v
	}
	switch in.Request {
	case ReasonModel, ReasonUser, ReasonHost:
	default:
		return block(BlockBadRequest)
	}
	if !cfg.Enabled {
		return block(BlockDisabled)
	}
	if in.Request == ReasonHost && !cfg.AutoRollover {
		return block(BlockAutoOff)
	}
	if !notebookOnBranch(in.Path, in.Notebook) {
		return block(BlockNoNotebook)
	}
	p, err := makePlan(in.Path, "", in.Pi)
	if err != nil {
		return block(BlockNothingToDrop)
	}
	v.FirstKeptEntryID = p.prep.FirstKeptEntryID
	if !p.fresh(in.Path, in.Notebook) {
		return block(BlockStaleNotebook)
	}
	v.Deferred = unresolvedToolCalls(in.Path)
	if p.lastDropped < 0 {
		return block(BlockNothingToDrop)
	}
	v.Projection = project(in.Path, p, in.Notebook, in.Request, cfg)
	if in.Request != ReasonUser && v.Projection.Reclaim < cfg.MinReclaimTokens {
		return block(BlockLowReclaim)
	}
	owner := cfg.ExternalOwner(in.Model)
	zones := cfg.Zones(in.Usage.ContextWindow, in.Pi)
	v.Projection.ReminderAt = zones.Reminder
	v.Projection.Pressure, v.Projection.PressureEstim = pressure(in.Path, in.Usage)
	if in.Request == ReasonHost {
		if v.Projection.Pressure < zones.Reminder {
			v = block(BlockLowPressure)
			v.Text = fmt.Sprintf("window at %s; the host rolls over on its own from the %s reminder threshold",
				kTokens(v.Projection.Pressure), kTokens(zones.Reminder))
			return v
		}
		if owner {
			return block(BlockExternalOwner)
		}
	}
	switch in.Pending {
	case "":
	case ReasonHost:
		if in.Request == ReasonHost {
			return block(BlockPending)
		}
		v.Confirms = true
	case ReasonModel:
		if in.Request != ReasonModel || !owner {
			return block(BlockPending)
		}
		v.Reconfirm = true
	default:
		return block(BlockPending)
	}
	v.OK, v.ExternalOwner = true, owner
	if in.Request == ReasonHost {
		v.Text = fmt.Sprintf("Rollover scheduled by the host: window #%d → #%d at the end of this turn. Finish what this turn needs; the new window opens with these notes.", v.Window, v.Window+1)
	} else {
		v.Text = fmt.Sprintf("rollover scheduled: window #%d → #%d at the end of this turn. End the turn now without further tool calls.", v.Window, v.Window+1)
	}
	return v
}

// project computes the reclaim of the plan: Pi's estimate of the context now
// minus that of the summary message and the entries kept from the cut on.
func project(path []*journal.Entry, p *plan, nb *notebook.State, reason Reason, cfg Config) Projection {
	var pr Projection
	for _, m := range BuildContext(path) {
		pr.Before += EstimateTokens(m)
	}
	c := compose(path, p, nb, reason, cfg)
	sum, _ := json.Marshal(c.Summary)
	pr.SummaryTokens = EstimateTokens(Message{Role: "compactionSummary", Summary: sum})
	pr.After = pr.SummaryTokens
	for i := p.prep.Cut.FirstKeptIndex; i < len(path); i++ {
		if m, ok := contextMessage(path[i]); ok {
			pr.After += EstimateTokens(m)
		}
	}
	for i := p.prep.BoundaryStart; i < p.prep.Cut.FirstKeptIndex; i++ {
		if producesMessage(path[i]) {
			pr.DroppedEntries++
		}
	}
	pr.Reclaim = pr.Before - pr.After
	return pr
}

// pressure is the usage the host floor is judged on: the reported tokens,
// or Pi's own context estimate when they are unknown or absurd (negative,
// or more than four times the model's window).
func pressure(path []*journal.Entry, u Usage) (int, bool) {
	if u.Tokens >= 0 && (u.ContextWindow <= 0 || u.Tokens <= 4*u.ContextWindow) && u.Tokens < 1e9 {
		return u.Tokens, false
	}
	return EstimateContextTokens(BuildContext(path)).Tokens, true
}

// unresolvedToolCalls reports whether the last assistant message on the
// path made tool calls that have no result after it yet.
func unresolvedToolCalls(path []*journal.Entry) bool {
	last := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == "message" && path[i].Role == "assistant" {
			last = i
			break
		}
	}
	if last < 0 {
		return false
	}
	m, ok := EntryMessage(path[last])
	if !ok {
		return false
	}
	bs, _ := blocks(m.Content)
	calls := map[string]bool{}
	for i := range bs {
		if bs[i].typ() == "toolCall" {
			calls[jsonStr(bs[i].ID)] = true
		}
	}
	for _, e := range path[last+1:] {
		if e.Type == "message" && e.Role == "toolResult" {
			delete(calls, e.ToolCallID)
		}
	}
	return len(calls) > 0
}
