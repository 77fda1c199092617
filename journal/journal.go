// Package journal reads Pi session journals: the JSONL files Pi's
// SessionManager writes, in format versions 1, 2 and 3.
//
// It never rewrites a file. Older versions are migrated in memory the way Pi
// migrates them on open (v1 entries get ids and parents, v2 "hookMessage"
// roles become "custom"), except that v1 ids here are derived from the session
// id and line number, so reading the same file twice gives the same ids.
//
// Each line is parsed into an Entry that keeps the original bytes exactly, the
// fields the rest of pi-history needs (id, parent, type, role, time), and the
// entry's searchable text: the allowlisted, JSON-decoded text that literal
// search runs over. Which parts of an entry are searchable is decided here and
// nowhere else (see Searchable).
package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CurrentVersion is the newest journal format Pi writes (0.73.1 and 1.6
// both write version 3; 1.6 adds entry types and fields, see pi16.go).
const CurrentVersion = 3

// Header is the first line of a journal: the session's identity.
type Header struct {
	ID            string // session id (a UUID in files Pi writes)
	Version       int    // format version; 1 when the field is absent
	Timestamp     string // ISO-8601 creation time
	Cwd           string // the project directory the session ran in
	ParentSession string // absolute path of the journal this one was forked from, if any
	Raw           []byte // the header line exactly as written
}

// Entry is one non-header line of a journal.
type Entry struct {
	Type      string // "message", "compaction", "custom", … or any unknown type
	ID        string // entry id (derived for v1 files)
	ParentID  string // "" when the entry is a root
	Timestamp string // ISO-8601 time the entry was appended ("" if absent)
	Line      int    // 1-based line number in the file (the header is line 1)

	Role       string // message role (user, assistant, toolResult, bashExecution, custom, …); "" for non-messages
	CustomType string // customType of custom, custom_message and role-custom messages
	ToolName   string // toolResult: the tool whose result this is
	ToolCallID string // toolResult: the call it answers
	IsError    bool   // toolResult: the tool failed

	ThinkingLevel string  // assistant (Pi 1.6): the thinking level Pi asked for; "" when not recorded
	DurationMs    float64 // assistant and toolResult (Pi 1.6): how long the response or the tool took; 0 when not recorded

	FirstKeptEntryID string // compaction: where the kept tail starts (migrated from v1's index)
	FromHook         bool   // compaction and branch_summary: written by an extension
	TargetID         string // label: the entry labelled; context_edit: the entry whose context it edits
	Label            string // label: the label ("" clears it)
	Name             string // session_info: the session name ("" clears it)
	HasName          bool   // session_info: the name field is present

	Searchable bool   // the entry has searchable text under the allowlist
	Text       string // the searchable text (decoded, allowlisted); "" when not searchable
	Raw        []byte // the line exactly as written, without its newline
}

// Time parses the entry's timestamp; the zero time when absent or malformed.
func (e *Entry) Time() time.Time { return ParseTime(e.Timestamp) }

// ParseTime parses an ISO-8601 timestamp as Pi writes them; zero on failure.
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// LineError describes a line that could not be read as an entry.
type LineError struct {
	Line   int    // 1-based line number
	Reason string // what is wrong with it
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// ErrNoHeader is returned for a first line that is not a session header.
var ErrNoHeader = errors.New(`first line is not a session header ({"type":"session","id":…})`)

// Parser turns the lines of one journal into a Header and Entries, in order.
// Its State can be saved and restored so that reading resumes mid-file.
type Parser struct {
	State
}

// State is what a Parser must remember between lines.
type State struct {
	SessionID string `json:"sessionId"`
	Version   int    `json:"version"`
	Line      int    `json:"line"`   // lines consumed so far, header included
	PrevID    string `json:"prevId"` // v1: id of the previous entry (the next one's parent)
}

// HeaderSeen reports whether the header has been read.
func (p *Parser) HeaderSeen() bool { return p.Version != 0 }

// Message is the part of a message entry pi-history reads.
type Message struct {
	Role               string          `json:"role"`
	Content            json.RawMessage `json:"content"`
	CustomType         string          `json:"customType"`
	ToolName           string          `json:"toolName"`
	ToolCallID         string          `json:"toolCallId"`
	IsError            bool            `json:"isError"`
	Command            string          `json:"command"`
	Output             string          `json:"output"`
	ExcludeFromContext bool            `json:"excludeFromContext"`
	Summary            string          `json:"summary"`
	ThinkingLevel      json.RawMessage `json:"thinkingLevel"` // a string; read leniently
	DurationMs         json.RawMessage `json:"durationMs"`    // a number; read leniently
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
	MimeType  string          `json:"mimeType"`
	Data      string          `json:"data"`
}

// Line parses one line (without its newline). The first line must be the
// header: it returns (header, nil, nil). Later lines return (nil, entry, nil).
// A line that cannot be read returns a *LineError and leaves the parser's
// state as if the line had been consumed, so reading continues with the next.
func (p *Parser) Line(line []byte) (*Header, *Entry, error) {
	p.State.Line++
	n := p.State.Line
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil, nil, &LineError{Line: n, Reason: "empty line"}
	}
	var r lineFields
	if err := r.parse(trimmed); err != nil {
		if _, ok := err.(*typeError); ok {
			return nil, nil, &LineError{Line: n, Reason: "not a journal entry: " + err.Error()}
		}
		return nil, nil, &LineError{Line: n, Reason: "not valid JSON: " + err.Error()}
	}
	if r.typeErr != nil {
		return nil, nil, &LineError{Line: n, Reason: "not a journal entry: " + r.typeErr.Error()}
	}
	if !p.HeaderSeen() {
		if r.typ != "session" || !r.id.set || r.id.v == "" {
			// Pi treats such a file as invalid; so do we, but we keep reading
			// to say so only once.
			p.State.Line = 0
			return nil, nil, ErrNoHeader
		}
		h := &Header{ID: r.id.v, Version: 1, Timestamp: rawString(r.timestamp), Cwd: r.cwd,
			ParentSession: r.parentSession, Raw: append([]byte(nil), line...)}
		if r.version.set {
			h.Version = r.version.v
		}
		if h.Version < 1 {
			h.Version = 1
		}
		p.SessionID, p.Version = h.ID, h.Version
		return h, nil, nil
	}
	if r.typ == "" {
		return nil, nil, &LineError{Line: n, Reason: `entry has no "type"`}
	}
	if r.typ == "session" {
		return nil, nil, &LineError{Line: n, Reason: "a second session header in the middle of the file"}
	}
	e := &Entry{Type: r.typ, Line: n, Timestamp: rawString(r.timestamp), Raw: append([]byte(nil), line...),
		CustomType: r.customType, FirstKeptEntryID: r.firstKept, FromHook: r.fromHook, TargetID: r.targetID}
	if p.Version == 1 {
		// v1: ids are assigned in file order; each entry's parent is the previous one.
		e.ID = V1ID(p.SessionID, n-1)
		e.ParentID = p.PrevID
		if r.firstKeptIndex.set && e.FirstKeptEntryID == "" {
			e.FirstKeptEntryID = V1ID(p.SessionID, r.firstKeptIndex.v)
		}
	} else {
		if !r.id.set || r.id.v == "" {
			return nil, nil, &LineError{Line: n, Reason: `entry has no "id"`}
		}
		e.ID = r.id.v
		if r.parentID.set {
			e.ParentID = r.parentID.v
		}
	}
	if e.ParentID == e.ID {
		e.ParentID = "" // an entry cannot be its own parent; treat it as a root
	}
	if r.label.set {
		e.Label = r.label.v
	}
	if r.name.set {
		e.Name, e.HasName = r.name.v, true
	}
	if err := fillContent(e, &r); err != nil {
		return nil, nil, &LineError{Line: n, Reason: err.Error()}
	}
	p.PrevID = e.ID
	return nil, e, nil
}

// V1ID is the deterministic id given to the entry at line index idx (the
// header is index 0) of a version-1 journal whose session id is sessionID.
func V1ID(sessionID string, idx int) string {
	sum := sha256.Sum256([]byte("pi-history/v1/" + sessionID + "/" + strconv.Itoa(idx)))
	return hex.EncodeToString(sum[:4])
}

// fillContent sets role fields and the searchable text.
func fillContent(e *Entry, r *lineFields) error {
	switch r.typ {
	case "message":
		if len(r.message) == 0 || r.message[0] != '{' {
			return errors.New(`message entry has no "message" object`)
		}
		m := &r.msg
		if m.typeErr != nil {
			return errors.New("message is malformed: " + m.typeErr.Error())
		}
		if m.role == "hookMessage" { // v2 → v3 migration
			m.role = "custom"
		}
		e.Role, e.ToolName, e.ToolCallID, e.IsError = m.role, m.toolName, m.toolCallID, m.isError
		if m.customType != "" {
			e.CustomType = m.customType
		}
		e.ThinkingLevel, e.DurationMs = rawString(m.thinkingLevel), rawNumber(m.durationMs)
		e.Text, e.Searchable = messageText(m)
	case "custom_message":
		e.Text, e.Searchable = contentText(r.content), true
	case "compaction", "branch_summary":
		if r.summary.set {
			e.Text, e.Searchable = r.summary.v, true
		}
	case "custom":
		switch r.customType {
		case NotebookType:
			e.Text, e.Searchable = notebookContent(r.data)
		case HandoffType:
			e.Text, e.Searchable = handoffContent(r.data)
		}
	case "context_edit":
		// What the model reads in the target's place from here on; an
		// omission (replacement null) has no text of its own.
		if c := replacementContent(r.replacement); len(c) > 0 && (c[0] == '"' || c[0] == '[') {
			e.Text, e.Searchable = assistantContent(c), true
		}
	}
	return nil
}

// SearchableTypes and SearchableRoles are the entry types and message roles
// that can have searchable text (see messageText and the cases above): a
// search filtered on anything else could never match.
var (
	SearchableTypes = []string{"message", "custom_message", "compaction", "branch_summary", "custom", "context_edit"}
	SearchableRoles = []string{"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)

// NotebookType is the customType of sectioned-notebook entries.
const NotebookType = "note-context/notebook"

// HandoffType is the customType of the agent's Handoff records (package
// rollover writes them): their text is searchable and read back like the
// notebook's.
const HandoffType = "note-context/handoff"

// messageText applies the allowlist to a message.
func messageText(m *msgFields) (string, bool) {
	switch m.role {
	case "user", "custom":
		return contentText(m.content), true
	case "assistant":
		return assistantContent(m.content), true
	case "toolResult":
		if m.toolName == "history" {
			return "", false
		}
		return contentText(m.content), true
	case "bashExecution":
		if m.excludeFromContext {
			return "", false
		}
		return m.command + "\n" + m.output, true
	case "branchSummary", "compactionSummary":
		return m.summary, true
	}
	return "", false
}

// ContentText returns the text of a content field: the string itself, or
// the text blocks of an array joined by newlines (other blocks add nothing).
func ContentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []Block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	first := true
	for _, bl := range blocks {
		if bl.Type != "text" {
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		first = false
		b.WriteString(bl.Text)
	}
	return b.String()
}

// StringValues returns every string value (not object keys) in a JSON
// document, depth-first in the order written. It walks iteratively, so deep
// nesting costs memory proportional to the depth, not stack frames.
func StringValues(raw json.RawMessage) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// stack of containers: true = object. In an object, keys and values
	// alternate; expectKey tracks which comes next at the top of the stack.
	var stack []bool
	var expectKey []bool
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1] {
					expectKey[len(expectKey)-1] = true // the container was a value
				}
				stack = append(stack, t == '{')
				expectKey = append(expectKey, t == '{')
			case '}', ']':
				stack = stack[:len(stack)-1]
				expectKey = expectKey[:len(expectKey)-1]
			}
		case string:
			if len(stack) > 0 && stack[len(stack)-1] {
				if expectKey[len(expectKey)-1] {
					expectKey[len(expectKey)-1] = false
					continue
				}
				expectKey[len(expectKey)-1] = true
			}
			out = append(out, t)
		default:
			if len(stack) > 0 && stack[len(stack)-1] {
				expectKey[len(expectKey)-1] = true
			}
		}
	}
}

// Section is one named section of a notebook entry.
type Section struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// NotebookSections returns the string-valued sections of a notebook entry's
// data in written order; nil when data has no "sections" object.
func NotebookSections(data json.RawMessage) []Section {
	var d struct {
		Sections json.RawMessage `json:"sections"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Sections) == 0 || d.Sections[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(d.Sections))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	out := []Section{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := kt.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		var text string
		if json.Unmarshal(v, &text) != nil {
			continue // non-string sections are not text
		}
		out = append(out, Section{Name: name, Text: text})
	}
	return out
}
