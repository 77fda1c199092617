package journal

// What Pi 1.6 added to the version-3 journal, and where each addition
// stands under the history allowlist (docs/decisions/120-pi16-journal.md):
//
//   - message entries with role "system": the prompt and tool loadout,
//     declared in full by a session's first request and patched later
//     (sections replaced by name, null removing one; toolsAdded,
//     toolsRemoved). Standing instructions, not history: listed and
//     readable, never searched.
//   - compaction.systemMessage: the whole prompt at the boundary (the
//     checkpoint Pi rebuilds a compacted context from) and compaction.usage:
//     the summary stays searchable, neither addition is.
//   - "usage" entries: model usage outside the conversation (cache warming).
//     No text; neither listed in the history nor searched.
//   - "context_edit" entries: what the model reads in place of an earlier
//     entry from then on. A replacement's text is model-facing and
//     searched; an omission (replacement null) has no text. The target
//     keeps its own text and class: raw history is unchanged, as Pi keeps it.
//   - assistant thinkingLevel and durationMs, tool results' durationMs:
//     read into Entry, not text.

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Class is where an entry stands under the history allowlist.
type Class uint8

const (
	// Hidden entries are outside the history the model can read back: no
	// model-facing text (settings, usage, other extensions' state) or text
	// kept from the model (a command excluded from context).
	Hidden Class = iota
	// Listed entries appear in history lists and can be read, but their
	// text is never searched: the system prompt, standing instructions that
	// every request carries anyway.
	Listed
	// Searched entries are listed, readable and searched.
	Searched
)

func (c Class) String() string {
	switch c {
	case Listed:
		return "listed"
	case Searched:
		return "searched"
	}
	return "hidden"
}

// Classify places an entry under the allowlist. It reads only Type, Role
// and Searchable, so a store's entry metadata (without text) classifies
// the same as the parsed line.
func Classify(e *Entry) Class {
	switch {
	case e.Searchable:
		return Searched
	case e.Type == "message" && e.Role == "system":
		return Listed
	}
	return Hidden
}

// SystemSection is one named section of a system message.
type SystemSection struct {
	Name    string
	Text    string
	Removed bool // the message removes the section (its value is null)
}

// SystemMessage is a Pi 1.6 system message: the prompt text, its named
// sections and the tools it adds and removes.
type SystemMessage struct {
	Content      string          // the instruction text (the base prompt on a session's first system message)
	Sections     []SystemSection // in written order
	ToolsAdded   []string        // names of the tools declared
	ToolsRemoved []string        // names of the tools withdrawn
}

// ReadSystemMessage reads a system message object (a message entry's
// "message", or a compaction's "systemMessage"); false when raw is not one.
func ReadSystemMessage(raw json.RawMessage) (*SystemMessage, bool) {
	var m struct {
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		Sections     json.RawMessage `json:"sections"`
		ToolsAdded   []toolRef       `json:"toolsAdded"`
		ToolsRemoved []toolRef       `json:"toolsRemoved"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Role != "system" {
		return nil, false
	}
	sm := &SystemMessage{Content: ContentText(m.Content), Sections: systemSections(m.Sections)}
	for _, t := range m.ToolsAdded {
		sm.ToolsAdded = append(sm.ToolsAdded, t.Name)
	}
	for _, t := range m.ToolsRemoved {
		sm.ToolsRemoved = append(sm.ToolsRemoved, t.Name)
	}
	return sm, true
}

type toolRef struct {
	Name string `json:"name"`
}

// systemSections reads a sections object in written order (JSON objects
// keep it; a Go map would not).
func systemSections(raw json.RawMessage) []SystemSection {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var out []SystemSection
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := kt.(string)
		var v *string
		if dec.Decode(&v) != nil {
			continue // not text: left out
		}
		if v == nil {
			out = append(out, SystemSection{Name: name, Removed: true})
		} else {
			out = append(out, SystemSection{Name: name, Text: *v})
		}
	}
	return out
}

// Text renders the message for reading: the instruction text, each
// section as "## name" and its text (or "## name (removed)"), then the
// tools added and removed, one line each.
func (m *SystemMessage) Text() string {
	var b strings.Builder
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	if m.Content != "" {
		line(m.Content)
	}
	for _, s := range m.Sections {
		if s.Removed {
			line("## " + s.Name + " (removed)")
			continue
		}
		line("## " + s.Name)
		line(s.Text)
	}
	if len(m.ToolsAdded) > 0 {
		line("tools added: " + strings.Join(m.ToolsAdded, ", "))
	}
	if len(m.ToolsRemoved) > 0 {
		line("tools removed: " + strings.Join(m.ToolsRemoved, ", "))
	}
	return b.String()
}

// Summary is a one-line description: which sections are set and removed,
// and which tools come and go.
func (m *SystemMessage) Summary() string {
	var set, removed []string
	for _, s := range m.Sections {
		if s.Removed {
			removed = append(removed, s.Name)
		} else {
			set = append(set, s.Name)
		}
	}
	var parts []string
	if len(set) > 0 {
		parts = append(parts, "sections "+strings.Join(set, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	if len(m.ToolsAdded) > 0 {
		parts = append(parts, "+tools "+strings.Join(m.ToolsAdded, ", "))
	}
	if len(m.ToolsRemoved) > 0 {
		parts = append(parts, "-tools "+strings.Join(m.ToolsRemoved, ", "))
	}
	if len(parts) == 0 {
		return "prompt text only"
	}
	return strings.Join(parts, "; ")
}

// ListedText is the text a read shows for an entry: its searchable text,
// or, for a listed entry that has none (a system message), the message
// rendered by SystemMessage.Text from its raw line.
func ListedText(e *Entry, text string, raw []byte) string {
	if text != "" || Classify(e) != Listed {
		return text
	}
	var r struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	if sm, ok := ReadSystemMessage(r.Message); ok {
		return sm.Text()
	}
	return ""
}

// Prompt replays the system messages of a path (root first, entries with
// their Raw lines) into the prompt in effect at path[i], as Pi's
// getCurrentSystemMessage does over the context it rebuilds: from the
// latest compaction at or before i, its system checkpoint, then each
// system message after it up to i; without a compaction, every system
// message from the root. Later content is appended (joined by a blank
// line), sections are patched by name (null removes one; a new name goes
// last), and a tool removed and added again moves to the end. False when
// nothing declared a prompt or a tool.
func Prompt(path []*Entry, i int) (*SystemMessage, bool) {
	if i < 0 || i >= len(path) {
		return nil, false
	}
	start := 0
	var msgs []*SystemMessage
	for k := i; k >= 0; k-- {
		if path[k].Type != "compaction" {
			continue
		}
		start = k + 1
		var r struct {
			SystemMessage json.RawMessage `json:"systemMessage"`
		}
		if json.Unmarshal(path[k].Raw, &r) == nil {
			if sm, ok := ReadSystemMessage(r.SystemMessage); ok {
				msgs = append(msgs, sm)
			}
		}
		break
	}
	for _, e := range path[start : i+1] {
		if e.Type != "message" || e.Role != "system" {
			continue
		}
		var r struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(e.Raw, &r) == nil {
			if sm, ok := ReadSystemMessage(r.Message); ok {
				msgs = append(msgs, sm)
			}
		}
	}
	if len(msgs) == 0 {
		return nil, false
	}
	out := &SystemMessage{}
	var content []string
	for _, m := range msgs {
		if m.Content != "" {
			content = append(content, m.Content)
		}
		for _, s := range m.Sections {
			j := slices.IndexFunc(out.Sections, func(o SystemSection) bool { return o.Name == s.Name })
			switch {
			case s.Removed && j >= 0:
				out.Sections = append(out.Sections[:j], out.Sections[j+1:]...)
			case s.Removed:
			case j >= 0:
				out.Sections[j].Text = s.Text
			default:
				out.Sections = append(out.Sections, s)
			}
		}
		for _, name := range m.ToolsRemoved {
			out.ToolsAdded = removeName(out.ToolsAdded, name)
		}
		for _, name := range m.ToolsAdded {
			out.ToolsAdded = append(removeName(out.ToolsAdded, name), name)
		}
	}
	out.Content = strings.Join(content, "\n\n")
	if len(out.ToolsAdded) == 0 {
		out.ToolsAdded = nil // as ReadSystemMessage leaves an empty list
	}
	if len(out.Sections) == 0 {
		out.Sections = nil
	}
	return out, true
}

func removeName(names []string, name string) []string {
	out := names[:0]
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}
