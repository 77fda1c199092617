package rollover

import (
	"fmt"
	"slices"
	"strings"

	pihistory "github.com/pi-history/pi-history"

	"github.com/pi-history/pi-history/journal"
)

// Reason says who asked for a rollover. It is carried into gate verdicts,
// the compaction details and ledger rows.
type Reason = pihistory.RolloverReason

// Rollover reasons (docs/spec-notes.md, "The gate", "The rollover summary", "Reminder and fallback").
const (
	ReasonModel     Reason = "model"     // new_context from the model
	ReasonUser      Reason = "user"      // new_context({userRequested: true})
	ReasonHost      Reason = "host"      // the host after a notes write (docs/spec-notes.md, "Host-initiated rollover")
	ReasonThreshold Reason = "threshold" // Pi's own threshold compaction, template accepted
	ReasonFallback  Reason = "fallback"  // the maintenance state machine (docs/spec-notes.md, "Reminder and fallback")
	// ReasonEmergency is Pi's native context overflow (seed B's Emergency
	// Rollover): the template with the last saved Handoff marked stale,
	// Pi's own cut. docs/decisions/310.
	ReasonEmergency Reason = "emergency"
)

// Reasons are the known reasons, in the order messages list them.
var Reasons = []Reason{ReasonModel, ReasonUser, ReasonHost, ReasonThreshold, ReasonFallback, ReasonEmergency}

// ValidReason reports whether r is one of the known reasons.
func ValidReason(r Reason) bool { return slices.Contains(Reasons, r) }

// ReasonNames lists the known reasons for a message: "model, user, …
// or emergency".
func ReasonNames() string {
	names := make([]string, len(Reasons))
	for i, r := range Reasons {
		names[i] = string(r)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// PiSettings are the user's Pi compaction settings, read by the extension
// through Pi's SettingsManager.
type PiSettings struct {
	KeepRecentTokens int `json:"keepRecentTokens"`
	ReserveTokens    int `json:"reserveTokens"`
	// TailTokens is contextManagement.tailTokens from Pi's settings (seed
	// B's Tail): when set, the raw history a rollover of this extension
	// keeps is sized by it instead of by KeepRecentTokens. Nil keeps Pi's
	// keepRecentTokens (seed A). docs/decisions/310.
	TailTokens *int `json:"tailTokens,omitempty"`
}

// Pi's documented defaults (DEFAULT_COMPACTION_SETTINGS in 0.73.1).
const (
	DefaultKeepRecentTokens = 20000
	DefaultReserveTokens    = 16384
)

// withDefaults fills zero or negative settings with Pi's defaults.
func (s PiSettings) withDefaults() PiSettings {
	if s.KeepRecentTokens <= 0 {
		s.KeepRecentTokens = DefaultKeepRecentTokens
	}
	if s.ReserveTokens <= 0 {
		s.ReserveTokens = DefaultReserveTokens
	}
	return s
}

// Usage is the context usage the extension reads from ctx.getContextUsage().
// Tokens < 0 means unknown (Pi reports null right after a compaction).
type Usage struct {
	Tokens        int `json:"tokens"`
	ContextWindow int `json:"contextWindow"` // the model's window; 0 when unknown
}

// indexOf returns the position of id in path, or -1.
func indexOf(path []*journal.Entry, id string) int {
	if id == "" {
		return -1
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].ID == id {
			return i
		}
	}
	return -1
}

// windowNumber is the number of the window the end of path is in: one plus
// the compactions on the path (package journal's numbering).
func windowNumber(path []*journal.Entry) int {
	n := 1
	for i, e := range path {
		if e.Type == "compaction" && i > 0 {
			n++
		}
	}
	return n
}

// kTokens formats a token count as the gate's blocker text does: 84K.
func kTokens(n int) string { return fmt.Sprintf("%dK", (n+500)/1000) }
