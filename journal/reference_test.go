package journal

// The reference parser: the line reader as it was written with
// encoding/json before scan.go replaced it on the import path. The
// differential tests hold the scanner to it: same lines accepted, same
// entries and texts.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// refParser reads lines as Parser did with encoding/json.
type refParser struct {
	State
}

func (p *refParser) HeaderSeen() bool { return p.Version != 0 }

// rawEntry mirrors the fields of an entry line that pi-history reads, for
// encoding/json.
type rawEntry struct {
	Type                string          `json:"type"`
	ID                  *string         `json:"id"`
	ParentID            *string         `json:"parentId"`
	Timestamp           json.RawMessage `json:"timestamp"`
	Version             *int            `json:"version"`
	Cwd                 string          `json:"cwd"`
	ParentSession       string          `json:"parentSession"`
	Message             json.RawMessage `json:"message"`
	CustomType          string          `json:"customType"`
	Content             json.RawMessage `json:"content"`
	Data                json.RawMessage `json:"data"`
	Summary             *string         `json:"summary"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex"`
	FromHook            bool            `json:"fromHook"`
	TargetID            string          `json:"targetId"`
	Label               *string         `json:"label"`
	Name                *string         `json:"name"`
	Replacement         json.RawMessage `json:"replacement"`
}

// Line parses one line as Parser.Line did before scan.go, with
// encoding/json.
func (p *refParser) Line(line []byte) (*Header, *Entry, error) {
	p.State.Line++
	n := p.State.Line
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil, nil, &LineError{Line: n, Reason: "empty line"}
	}
	var r rawEntry
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, nil, &LineError{Line: n, Reason: "not a JSON object: " + refShortErr(err)}
	}
	if !p.HeaderSeen() {
		if r.Type != "session" || r.ID == nil || *r.ID == "" {
			// Pi treats such a file as invalid; so do we, but we keep reading
			// to say so only once.
			p.State.Line = 0
			return nil, nil, ErrNoHeader
		}
		h := &Header{ID: *r.ID, Version: 1, Timestamp: refJSONString(r.Timestamp), Cwd: r.Cwd,
			ParentSession: r.ParentSession, Raw: append([]byte(nil), line...)}
		if r.Version != nil {
			h.Version = *r.Version
		}
		if h.Version < 1 {
			h.Version = 1
		}
		p.SessionID, p.Version = h.ID, h.Version
		return h, nil, nil
	}
	if r.Type == "" {
		return nil, nil, &LineError{Line: n, Reason: `entry has no "type"`}
	}
	if r.Type == "session" {
		return nil, nil, &LineError{Line: n, Reason: "a second session header in the middle of the file"}
	}
	e := &Entry{Type: r.Type, Line: n, Timestamp: refJSONString(r.Timestamp), Raw: append([]byte(nil), line...),
		CustomType: r.CustomType, FirstKeptEntryID: r.FirstKeptEntryID, FromHook: r.FromHook, TargetID: r.TargetID}
	if p.Version == 1 {
		// v1: ids are assigned in file order; each entry's parent is the previous one.
		e.ID = V1ID(p.SessionID, n-1)
		e.ParentID = p.PrevID
		if r.FirstKeptEntryIndex != nil && e.FirstKeptEntryID == "" {
			e.FirstKeptEntryID = V1ID(p.SessionID, *r.FirstKeptEntryIndex)
		}
	} else {
		if r.ID == nil || *r.ID == "" {
			return nil, nil, &LineError{Line: n, Reason: `entry has no "id"`}
		}
		e.ID = *r.ID
		if r.ParentID != nil {
			e.ParentID = *r.ParentID
		}
	}
	if e.ParentID == e.ID {
		e.ParentID = "" // an entry cannot be its own parent; treat it as a root
	}
	if r.Label != nil {
		e.Label = *r.Label
	}
	if r.Name != nil {
		e.Name, e.HasName = *r.Name, true
	}
	if err := refFillContent(e, &r); err != nil {
		return nil, nil, &LineError{Line: n, Reason: err.Error()}
	}
	p.PrevID = e.ID
	return nil, e, nil
}

// fillContent sets role fields and the searchable text.
func refFillContent(e *Entry, r *rawEntry) error {
	switch r.Type {
	case "message":
		if len(r.Message) == 0 || r.Message[0] != '{' {
			return errors.New(`message entry has no "message" object`)
		}
		var m Message
		if err := json.Unmarshal(r.Message, &m); err != nil {
			return errors.New("message is malformed: " + refShortErr(err))
		}
		if m.Role == "hookMessage" { // v2 → v3 migration
			m.Role = "custom"
		}
		e.Role, e.ToolName, e.ToolCallID, e.IsError = m.Role, m.ToolName, m.ToolCallID, m.IsError
		if m.CustomType != "" {
			e.CustomType = m.CustomType
		}
		_ = json.Unmarshal(m.ThinkingLevel, &e.ThinkingLevel)
		_ = json.Unmarshal(m.DurationMs, &e.DurationMs)
		e.Text, e.Searchable = refMessageText(&m)
	case "custom_message":
		e.Text, e.Searchable = ContentText(r.Content), true
	case "compaction", "branch_summary":
		if r.Summary != nil {
			e.Text, e.Searchable = *r.Summary, true
		}
	case "custom":
		switch r.CustomType {
		case NotebookType:
			e.Text, e.Searchable = refNotebookText(r.Data)
		case HandoffType:
			var h struct{ Text string }
			if json.Unmarshal(r.Data, &h) == nil && h.Text != "" {
				e.Text, e.Searchable = h.Text, true
			}
		}
	case "context_edit":
		var rep struct {
			Content json.RawMessage `json:"content"`
		}
		if len(r.Replacement) > 0 && r.Replacement[0] == '{' && json.Unmarshal(r.Replacement, &rep) == nil {
			if c := rep.Content; len(c) > 0 && (c[0] == '"' || c[0] == '[') {
				e.Text, e.Searchable = refAssistantText(c), true
			}
		}
	}
	return nil
}

// messageText applies the allowlist to a message.
func refMessageText(m *Message) (string, bool) {
	switch m.Role {
	case "user", "custom":
		return ContentText(m.Content), true
	case "assistant":
		return refAssistantText(m.Content), true
	case "toolResult":
		if m.ToolName == "history" {
			return "", false
		}
		return ContentText(m.Content), true
	case "bashExecution":
		if m.ExcludeFromContext {
			return "", false
		}
		return m.Command + "\n" + m.Output, true
	case "branchSummary", "compactionSummary":
		return m.Summary, true
	}
	return "", false
}

// assistantText joins text blocks and, for each tool call, the tool name and
// every string value of its arguments (depth-first, in written order).
func refAssistantText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return ContentText(raw)
	}
	var blocks []Block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			parts = append(parts, bl.Text)
		case "toolCall":
			parts = append(parts, bl.Name)
			parts = append(parts, StringValues(bl.Arguments)...)
		}
	}
	return strings.Join(parts, "\n")
}

// notebookText renders a notebook entry's sections as "## Name" followed by
// the section text, in the order the sections were written.
func refNotebookText(data json.RawMessage) (string, bool) {
	sections := NotebookSections(data)
	if sections == nil {
		return "", false
	}
	var b strings.Builder
	for i, s := range sections {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("## ")
		b.WriteString(s.Name)
		b.WriteByte('\n')
		b.WriteString(s.Text)
	}
	return b.String(), true
}

func refJSONString(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func refShortErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "json: ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
