package export

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/pi-history/pi-history/journal"
)

// Rendering what Pi 1.6 added to the journal (journal/pi16.go).

// rUsage is the usage Pi records with a compaction, a branch summary or a
// usage entry.
type rUsage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

// String gives the total and, when any, its input, output and cache parts.
func (u *rUsage) String() string {
	s := thousands(u.TotalTokens) + " tokens"
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{u.Input, "in"}, {u.Output, "out"}, {u.CacheRead, "cache read"}, {u.CacheWrite, "cache write"}} {
		if p.n > 0 {
			parts = append(parts, thousands(p.n)+" "+p.name)
		}
	}
	if len(parts) > 0 {
		s += " (" + joinNonEmpty(", ", parts...) + ")"
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// formatMs shows a duration in milliseconds, as seconds from one second up.
func formatMs(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// systemItem renders a system message: the prompt text and every section
// verbatim (long ones fold away in HTML), then the tools it adds and
// removes. It is titled a change; renderSection retitles the first one of
// a branch, which declares the whole prompt.
func systemItem(it *item, raw json.RawMessage) {
	it.Kind, it.Title = "system", "System prompt change"
	sm, ok := journal.ReadSystemMessage(raw)
	if !ok {
		return
	}
	if sm.Content != "" {
		it.Parts = append(it.Parts, part{Kind: "code", Label: "prompt", Text: sm.Content})
	}
	for _, s := range sm.Sections {
		if s.Removed {
			it.Parts = append(it.Parts, part{Kind: "note", Text: "section " + s.Name + " removed"})
			continue
		}
		it.Parts = append(it.Parts, part{Kind: "code", Label: "section " + s.Name, Text: s.Text})
	}
	if len(sm.ToolsAdded) > 0 {
		it.Parts = append(it.Parts, part{Kind: "note", Text: "tools added: " + joinNonEmpty(", ", sm.ToolsAdded...)})
	}
	if len(sm.ToolsRemoved) > 0 {
		it.Parts = append(it.Parts, part{Kind: "note", Text: "tools removed: " + joinNonEmpty(", ", sm.ToolsRemoved...)})
	}
}

// contextEditItem renders a context edit: an omission is one line; a
// replacement shows the content the model reads from here on.
func contextEditItem(it *item, target string, replacement json.RawMessage) {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if len(replacement) == 0 || replacement[0] != '{' || json.Unmarshal(replacement, &r) != nil || len(r.Content) == 0 {
		it.Kind, it.Meta, it.Title = "meta", true, "Context edit: entry "+target+" is left out of the model's context from here on"
		return
	}
	it.Kind, it.Title, it.Sub = "custom", "Context edit", "replaces "+target
	it.Parts = append(it.Parts, part{Kind: "note", Text: "the model reads this in place of entry " + target + " from here on; the entry itself is unchanged"})
	it.Parts = append(it.Parts, assistantParts(r.Content)...)
}

// checkpointNote describes a compaction's system checkpoint: the whole
// prompt the window after it starts from.
func checkpointNote(raw json.RawMessage) (part, bool) {
	sm, ok := journal.ReadSystemMessage(raw)
	if !ok {
		return part{}, false
	}
	var names []string
	for _, s := range sm.Sections {
		names = append(names, s.Name)
	}
	text := "the window starts from the system prompt checkpointed here"
	if len(names) > 0 {
		text += ": sections " + joinNonEmpty(", ", names...)
	}
	if len(sm.ToolsAdded) > 0 {
		text += "; tools " + joinNonEmpty(", ", sm.ToolsAdded...)
	}
	return part{Kind: "note", Text: text}, true
}
