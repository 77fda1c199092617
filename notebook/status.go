package notebook

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pi-history/pi-history/journal"
)

// Status-line protocol strings (docs/spec-notes.md, "The status line"). The line
// never carries token, budget or window figures.
const (
	StatusPrefix       = "[note-context] "
	statusStale        = " not reviewed for a while — update them, or call notes({reviewed:true}) if they are still accurate"
	statusNoNotes      = "no notes yet"
	statusNoNotesDue   = "no notes yet — write them once there is working state worth keeping"
	statusBranch       = "branch changed — verify workspace state"
	statusExternal     = "compaction: external"
	statusFactSep      = " · "
	statusNotesRevWord = "notes rev "
)

// StatusInput is everything the status line depends on. The caller keeps
// the delivery bookkeeping (which steps and one-shot facts were already
// shown) and passes it in; this package keeps none.
type StatusInput struct {
	// Notebook is the branch's notebook (Read of the path).
	Notebook State
	// ContextTokens is the current context usage; nil when unknown.
	ContextTokens *int
	// WindowStartTokens is the first known usage of the current window
	// (WindowStartTokens of the path, or the first reading after a reload).
	// It replaces the notebook's ReviewedTokens as the baseline when the
	// notebook record precedes the latest compaction.
	WindowStartTokens *int
	// BranchChanged: the leaf moved in the tree (/tree) and the fact has not
	// been shown yet.
	BranchChanged bool
	// ExternalCompaction: another extension owns compaction and the fact has
	// not been shown in this window yet.
	ExternalCompaction bool
	// StepTokens is the staleness step; ≤ 0 means DefaultStatusSteps.
	StepTokens int
	// DeliveredStep is the highest staleness step already shown for this
	// notebook record (or, without a notebook, for the branch); 0 for none.
	DeliveredStep int
	// Suppressed: the tool result is this plugin's own or an error; no line.
	Suppressed bool
}

// Status is the status-line decision for one tool result.
type Status struct {
	Due  bool   `json:"due"`            // append Text to the tool result
	Text string `json:"text,omitempty"` // the line, when due
	// Step is the staleness step this line delivers (0: the line carries no
	// staleness step); record it as delivered for RecordID.
	Step int `json:"step"`
	// RecordID is the notebook record the step belongs to ("": no notebook).
	RecordID string `json:"recordId,omitempty"`
	// BranchChanged and ExternalCompaction say which one-shot facts the line
	// delivers, so the caller can mark them shown.
	BranchChanged      bool `json:"branchChanged,omitempty"`
	ExternalCompaction bool `json:"externalCompaction,omitempty"`
}

// StatusLine decides whether a tool result carries the status line and
// what it says.
//
// With a notebook, the line is due when floor(tokens since the last write
// or review / step) is at least 1 and above DeliveredStep. Tokens since
// review are counted from the record's ReviewedTokens, or from
// WindowStartTokens when a compaction followed the record; a record without
// ReviewedTokens never goes stale on tokens. Without a notebook the whole
// context counts, from step 1; unknown usage gives no step. A pending
// one-shot fact (branch changed, external compaction) makes the line due on
// its own. Usage falling back never repeats a step.
func StatusLine(in StatusInput) Status {
	st := Status{RecordID: in.Notebook.EntryID}
	if in.Suppressed {
		return st
	}
	step := in.StepTokens
	if step <= 0 {
		step = DefaultStatusSteps
	}
	since, known := tokensSinceReview(in)
	if known && since >= step {
		if n := since / step; n > in.DeliveredStep {
			st.Step = n
		}
	}
	var parts []string
	switch {
	case in.Notebook.Exists() && st.Step > 0:
		parts = append(parts, statusNotesRevWord+strconv.Itoa(in.Notebook.Revision)+statusStale)
	case in.Notebook.Exists():
		parts = append(parts, statusNotesRevWord+strconv.Itoa(in.Notebook.Revision))
	case st.Step > 0:
		parts = append(parts, statusNoNotesDue)
	default:
		parts = append(parts, statusNoNotes)
	}
	if in.BranchChanged {
		parts = append(parts, statusBranch)
		st.BranchChanged = true
	}
	if in.ExternalCompaction {
		parts = append(parts, statusExternal)
		st.ExternalCompaction = true
	}
	st.Due = st.Step > 0 || st.BranchChanged || st.ExternalCompaction
	if st.Due {
		st.Text = StatusPrefix + strings.Join(parts, statusFactSep)
	}
	return st
}

// tokensSinceReview is the context added since the notebook was last
// written or reviewed, and whether it is known.
func tokensSinceReview(in StatusInput) (int, bool) {
	if in.ContextTokens == nil {
		return 0, false
	}
	cur := *in.ContextTokens
	nb := in.Notebook
	switch {
	case !nb.Exists():
		return cur, true
	case nb.PrecedesCompaction:
		if in.WindowStartTokens == nil {
			return 0, false
		}
		return cur - *in.WindowStartTokens, true
	case nb.ReviewedTokens == nil:
		return 0, false // an older record: never stale on tokens
	default:
		return cur - *nb.ReviewedTokens, true
	}
}

// WindowStartTokens is the first known context usage of the current window
// of path: the usage reported by the first assistant message after the
// latest compaction (Pi's count: totalTokens, or input + output + cacheRead
// + cacheWrite when that is 0). Nil when the path has no compaction or no
// assistant usage after it.
func WindowStartTokens(path []*journal.Entry) *int {
	last := -1
	for i, e := range path {
		if e != nil && e.Type == "compaction" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	for _, e := range path[last+1:] {
		if e == nil || e.Type != "message" || e.Role != "assistant" || len(e.Raw) == 0 {
			continue
		}
		var m struct {
			Message struct {
				Usage *struct {
					Input       int `json:"input"`
					Output      int `json:"output"`
					CacheRead   int `json:"cacheRead"`
					CacheWrite  int `json:"cacheWrite"`
					TotalTokens int `json:"totalTokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(e.Raw, &m) != nil || m.Message.Usage == nil {
			continue
		}
		u := m.Message.Usage
		n := u.TotalTokens
		if n == 0 {
			n = u.Input + u.Output + u.CacheRead + u.CacheWrite
		}
		if n > 0 {
			return &n
		}
	}
	return nil
}
