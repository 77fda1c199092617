package rollover

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// The Handoff (seed B): the agent's own account of where the work stands,
// written with the rollover request (new_context's handoff argument) and
// carried into the next window's summary beside the notebook. It is kept in
// the journal as a custom entry of type HandoffType, so history reads it
// and the web UI shows it, and it follows /tree like the notebook.
const (
	HandoffType    = journal.HandoffType // customType of Handoff records
	HandoffVersion = 1                   // the "version" written in Handoff records
	// MaxHandoffChars is the most a Handoff may hold, in characters
	// (Unicode code points). A longer one is refused whole: nothing is
	// scheduled and nothing is written.
	MaxHandoffChars = 12000
	// NoteIndexMaxChars bounds the Note Index of a rollover summary, in
	// characters, its heading included.
	NoteIndexMaxChars = 4000
)

// HandoffRecord is the data of one Handoff journal entry.
type HandoffRecord struct {
	Version int    `json:"version"`
	Text    string `json:"text"`
}

// CheckHandoff validates a Handoff's text: not blank and at most
// MaxHandoffChars characters. The error says by how much it is over.
func CheckHandoff(text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("the handoff is blank: write where the work stands and what comes next, or leave the argument out")
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("the handoff is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(text); n > MaxHandoffChars {
		return fmt.Errorf("the handoff has %d characters, over the limit of %d by %d: shorten it (details belong in notes) and call again", n, MaxHandoffChars, n-MaxHandoffChars)
	}
	return nil
}

// NewHandoffRecord returns the custom entry data for a valid Handoff.
func NewHandoffRecord(text string) (json.RawMessage, error) {
	if err := CheckHandoff(text); err != nil {
		return nil, err
	}
	return json.Marshal(HandoffRecord{Version: HandoffVersion, Text: text})
}

// Handoff is a Handoff found on a branch.
type Handoff struct {
	Text    string
	EntryID string
}

// handoffOf reads a Handoff entry; false for other entries and malformed ones.
func handoffOf(e *journal.Entry) (Handoff, bool) {
	if e == nil || e.Type != "custom" || e.CustomType != HandoffType {
		return Handoff{}, false
	}
	var r struct {
		Data HandoffRecord `json:"data"`
	}
	if json.Unmarshal(e.Raw, &r) != nil || strings.TrimSpace(r.Data.Text) == "" {
		return Handoff{}, false
	}
	return Handoff{Text: r.Data.Text, EntryID: e.ID}, true
}

// CurrentHandoff returns the newest Handoff written in the current window
// of path (after its last compaction, from index start on). A Handoff of
// an earlier window is never returned: it described a window that has
// already been replaced, and using it silently would pass stale state on.
func CurrentHandoff(path []*journal.Entry, start int) (Handoff, bool) {
	for i := len(path) - 1; i >= max(start, 0); i-- {
		if path[i].Type == "compaction" {
			break
		}
		if h, ok := handoffOf(path[i]); ok {
			return h, true
		}
	}
	return Handoff{}, false
}

// noteIndex lists the branch's named notes for the summary, newest first
// (by the entry that last changed each, ties by name), within
// NoteIndexMaxChars characters including the heading. The cut rule: lines
// are added newest first while they fit; the first that does not fit ends
// the list, and a count line naming how many were left out takes the place
// of as many of the last listed lines as it needs. A note's line names it,
// its size and the entry that last changed it, never its content.
func noteIndex(path []*journal.Entry) []string {
	notes := notebook.Notes(notebook.Branch{Path: path})
	if len(notes) == 0 {
		return nil
	}
	order := map[string]int{}
	for i, e := range path {
		order[e.ID] = i
	}
	sort.SliceStable(notes, func(i, j int) bool {
		a, b := order[notes[i].EntryID], order[notes[j].EntryID]
		if a != b {
			return a > b
		}
		return notes[i].Name < notes[j].Name
	})
	budget := NoteIndexMaxChars - utf8.RuneCountInString(noteIndexHeading) - 1
	lines := make([]string, 0, len(notes))
	used := 0
	for _, n := range notes {
		l := fmt.Sprintf("- %s (%d characters, updated %s) [history entry=%s]", n.Name, n.Characters, n.UpdatedAt, n.EntryID)
		c := utf8.RuneCountInString(l) + 1
		if used+c > budget {
			break
		}
		lines = append(lines, l)
		used += c
	}
	for len(lines) < len(notes) {
		more := fmt.Sprintf("(%d more named notes not listed; `notes({op: \"list\"})` shows them)", len(notes)-len(lines))
		if used+utf8.RuneCountInString(more)+1 <= budget || len(lines) == 0 {
			lines = append(lines, more)
			break
		}
		used -= utf8.RuneCountInString(lines[len(lines)-1]) + 1
		lines = lines[:len(lines)-1]
	}
	return lines
}

const noteIndexHeading = "\n## Note Index (this session's named notes, newest first; read one with `notes({op: \"read\", name})`)\n"
