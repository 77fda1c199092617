package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pi-history/pi-history/journal"
)

// The md and html formats share one reading of the journal: each entry
// becomes an item (a titled block of parts), items are grouped into context
// windows, and a renderer writes them one at a time.

// item is one rendered entry.
type item struct {
	ID    string // entry id
	Time  string // display time
	Kind  string // user, assistant, tool, bash, custom, summary, compaction, notebook, meta, unknown
	Title string
	Sub   string // a detail after the title: model, tool, custom type
	Meta  bool   // a one-line entry (model change, label, extension state, …)
	Took  string // a tool result: how long the tool ran ("" when not recorded)
	Parts []part
}

// part is one piece of an item.
type part struct {
	Kind     string // text, thinking, image, code, call, note, section, summary
	Text     string
	Label    string // code: caption; image: media type; call: tool name; section: name
	CallID   string // call: the tool call id
	Args     string // call: the arguments, indented JSON
	Result   []part // call: the paired result's parts (code and image)
	Error    bool   // code, call: the tool failed
	Answered bool   // call: a result was found on the branch
	Took     string // call: how long the tool ran, when its result says
}

// long reports whether a code part should be collapsed in HTML.
func (p part) Long() bool {
	return len(p.Text) > 2000 || strings.Count(p.Text, "\n") >= 20
}

// Lines counts the lines of a part's text.
func (p part) Lines() int {
	if p.Text == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(p.Text, "\n"), "\n") + 1
}

// docHead describes the export as a whole.
type docHead struct {
	Title     string
	SessionID string
	Cwd       string
	Created   string
	Parent    string
	Scope     string
	Entries   int
	Windows   int
	Branches  int // other branches included after the selected one
}

// windowHead starts a context window.
type windowHead struct {
	N        int
	Started  string
	Kind     string // start, compaction, hook
	By       string // the compaction that started it
	Branch   string // for other branches: their leaf
	BranchAt string // for other branches: the entry they branch off after ("" for a separate root)
	First    bool   // the first window of an other-branch section
	// Continued is set when the window began on the branch above (an other
	// branch's section starts where it leaves that branch, mid-window);
	// Kind and By then say how it began there.
	Continued bool
}

// Label describes how a window started.
func (w windowHead) Label() string {
	l := "session start"
	switch w.Kind {
	case "compaction":
		l = "after compaction"
	case "hook":
		l = "after a new context (compaction by an extension)"
	}
	if w.Continued {
		if w.Kind != "compaction" && w.Kind != "hook" {
			l = "at " + l
		}
		return "continues a window of the branch above, begun " + l
	}
	return l
}

type renderer interface {
	begin(h *docHead) error
	window(w *windowHead) error
	item(it *item) error
	end() error
}

// section is a run of entries rendered together.
type section struct {
	entries  []*journal.Entry
	windows  []int
	leaf     string
	branchAt string
	other    bool
	// opener began the window of entries[0] when that lies on the branch
	// above (nil for session start); continued says entries[0] does not
	// begin its window.
	opener    *journal.Entry
	continued bool
}

func (x *Export) render(w *bufio.Writer) error {
	var r renderer
	if x.Opts.Format == HTML {
		r = newHTMLRenderer(w)
	} else {
		r = &mdRenderer{w: w}
	}
	secs, err := x.sections()
	if err != nil {
		return err
	}
	h := &docHead{Title: x.Info.Name, SessionID: x.Info.ID, Cwd: x.Info.Cwd, Created: displayTime(x.Info.Created), Parent: x.Info.ParentSession}
	if strings.TrimSpace(h.Title) == "" {
		// As the CLI and the web UI call it: its first user message.
		h.Title = x.firstPrompt()
	}
	if h.Title == "" {
		h.Title = "Session " + x.Info.ID
	}
	if len(secs) > 0 {
		main := secs[0]
		h.Entries = len(main.entries)
		if n := len(main.windows); n > 0 {
			h.Windows = main.windows[n-1] - main.windows[0] + 1
		}
		h.Branches = len(secs) - 1
		switch {
		case x.Opts.Window > 0:
			h.Scope = fmt.Sprintf("window %d of the branch ending at %s", x.Opts.Window, x.leaf)
		case x.Opts.Leaf != "":
			h.Scope = "the branch ending at " + main.leaf
		default:
			h.Scope = "the current branch (leaf " + main.leaf + ")"
			if h.Branches > 0 {
				h.Scope += fmt.Sprintf(", then the entries of %d other branch(es)", h.Branches)
			}
		}
	} else {
		h.Scope = "an empty session"
	}
	if err := r.begin(h); err != nil {
		return err
	}
	for _, s := range secs {
		if err := x.renderSection(r, s); err != nil {
			return err
		}
	}
	return r.end()
}

// sections returns what to render: the chosen path; for a whole-session
// export also, after the current branch, each other branch's own entries
// (those not already shown), in the file order of their leaves.
func (x *Export) sections() ([]section, error) {
	if len(x.path) == 0 {
		return nil, nil
	}
	main := section{entries: x.path, windows: x.windows, leaf: x.path[len(x.path)-1].ID}
	out := []section{main}
	if x.Opts.Leaf != "" || x.Opts.Window > 0 {
		return out, nil
	}
	shown := make(map[string]bool, x.tree.Len())
	for _, e := range x.path {
		shown[e.ID] = true
	}
	for _, leaf := range x.tree.Leaves() {
		if shown[leaf] {
			continue
		}
		p, err := x.tree.Path(leaf)
		if err != nil {
			return nil, err
		}
		k := 0
		for k < len(p) && shown[p[k].ID] {
			k++
		}
		if k == len(p) {
			continue
		}
		s := section{entries: p[k:], windows: journal.WindowOf(p)[k:], leaf: leaf, other: true}
		if k > 0 {
			s.branchAt = p[k-1].ID
		}
		for _, w := range journal.Windows(p) {
			if w.Start < k && k < w.End {
				s.continued = true
				if w.CompactionID != "" {
					s.opener = x.tree.Get(w.CompactionID)
				}
			}
		}
		for _, e := range s.entries {
			shown[e.ID] = true
		}
		out = append(out, s)
	}
	return out, nil
}

func (x *Export) renderSection(r renderer, s section) error {
	// Tool results are shown with their calls: index them by call id.
	results := map[string]int{}
	for i, e := range s.entries {
		if e.Type == "message" && e.Role == "toolResult" && e.ToolCallID != "" {
			if _, dup := results[e.ToolCallID]; !dup {
				results[e.ToolCallID] = i
			}
		}
	}
	paired := map[int]bool{}
	cur := -1
	// The first system message from a branch's root declares the whole
	// prompt; a section that starts further on (another branch, a window)
	// shows changes only.
	declared := s.other || len(s.entries) > 0 && s.entries[0].ParentID != ""
	for i, e := range s.entries {
		if s.windows[i] != cur {
			cur = s.windows[i]
			wh := &windowHead{N: cur, Started: displayTime(e.Timestamp), Kind: "start", First: i == 0}
			opener := e
			if i == 0 && s.continued {
				wh.Continued, opener = true, s.opener
			}
			if opener != nil && opener.Type == "compaction" {
				wh.Kind, wh.By = "compaction", opener.ID
				if opener.FromHook {
					wh.Kind = "hook"
				}
			}
			if s.other {
				wh.Branch, wh.BranchAt = s.leaf, s.branchAt
			}
			if err := r.window(wh); err != nil {
				return err
			}
		}
		if paired[i] {
			continue
		}
		raw, err := x.raw(e)
		if err != nil {
			return err
		}
		it := buildItem(e, raw)
		if it.Kind == "system" && !declared {
			it.Title, declared = "System prompt", true
		}
		// Pair tool calls with their results.
		for pi := range it.Parts {
			p := &it.Parts[pi]
			if p.Kind != "call" || p.CallID == "" {
				continue
			}
			j, ok := results[p.CallID]
			if !ok || j <= i || paired[j] {
				continue
			}
			rr, err := x.raw(s.entries[j])
			if err != nil {
				return err
			}
			res := buildItem(s.entries[j], rr)
			p.Result, p.Answered, p.Error, p.Took = res.Parts, true, s.entries[j].IsError, res.Took
			paired[j] = true
		}
		if err := r.item(it); err != nil {
			return err
		}
	}
	return nil
}

func (x *Export) raw(e *journal.Entry) ([]byte, error) {
	m := x.tree.MetaOf(e.ID)
	if m == nil {
		return nil, fmt.Errorf("entry %q of session %q has no stored record", e.ID, x.Info.ID)
	}
	return x.src.Raw(m.Seq)
}

// Journal shapes read for rendering.
type rLine struct {
	Type             string          `json:"type"`
	Message          json.RawMessage `json:"message"`
	Summary          *string         `json:"summary"`
	TokensBefore     *int            `json:"tokensBefore"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	FromID           string          `json:"fromId"`
	CustomType       string          `json:"customType"`
	Data             json.RawMessage `json:"data"`
	Content          json.RawMessage `json:"content"`
	Display          *bool           `json:"display"`
	TargetID         string          `json:"targetId"`
	Label            *string         `json:"label"`
	Name             *string         `json:"name"`
	Provider         string          `json:"provider"`
	ModelID          string          `json:"modelId"`
	ThinkingLevel    string          `json:"thinkingLevel"`
	// Pi 1.6
	SystemMessage json.RawMessage `json:"systemMessage"`
	Usage         *rUsage         `json:"usage"`
	Kind          string          `json:"kind"`
	Model         string          `json:"model"`
	Note          string          `json:"note"`
	Replacement   json.RawMessage `json:"replacement"`
}

type rMessage struct {
	Role               string          `json:"role"`
	Content            json.RawMessage `json:"content"`
	ToolCallID         string          `json:"toolCallId"`
	ToolName           string          `json:"toolName"`
	IsError            bool            `json:"isError"`
	Command            string          `json:"command"`
	Output             string          `json:"output"`
	ExitCode           *int            `json:"exitCode"`
	Cancelled          bool            `json:"cancelled"`
	Truncated          bool            `json:"truncated"`
	FullOutputPath     string          `json:"fullOutputPath"`
	ExcludeFromContext bool            `json:"excludeFromContext"`
	Provider           string          `json:"provider"`
	Model              string          `json:"model"`
	StopReason         string          `json:"stopReason"`
	ErrorMessage       string          `json:"errorMessage"`
	CustomType         string          `json:"customType"`
	Display            *bool           `json:"display"`
	Summary            string          `json:"summary"`
	ThinkingLevel      string          `json:"thinkingLevel"`
	DurationMs         *float64        `json:"durationMs"`
}

type rBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Redacted  bool            `json:"redacted"`
	Name      string          `json:"name"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
	MimeType  string          `json:"mimeType"`
	Data      string          `json:"data"`
}

// buildItem reads one entry's raw line into an item.
func buildItem(e *journal.Entry, raw []byte) *item {
	it := &item{ID: e.ID, Time: displayTime(e.Timestamp)}
	var l rLine
	if err := json.Unmarshal(raw, &l); err != nil {
		it.Kind, it.Title, it.Meta = "unknown", "Unreadable entry", true
		return it
	}
	switch l.Type {
	case "message":
		var m rMessage
		_ = json.Unmarshal(l.Message, &m)
		if m.Role == "hookMessage" {
			m.Role = "custom"
		}
		if m.Role == "system" {
			systemItem(it, l.Message)
			return it
		}
		messageItem(it, &m)
	case "compaction":
		it.Kind, it.Title = "compaction", "Compaction"
		if e.FromHook {
			it.Title = "New context (compaction by an extension)"
		}
		var notes []string
		if l.TokensBefore != nil {
			notes = append(notes, fmt.Sprintf("%d tokens before", *l.TokensBefore))
		}
		switch e.FirstKeptEntryID {
		case "":
		case e.ID:
			notes = append(notes, "keeps no earlier entry")
		default:
			notes = append(notes, "kept from entry "+e.FirstKeptEntryID)
		}
		if l.Usage != nil {
			notes = append(notes, "the summary used "+l.Usage.String())
		}
		if len(notes) > 0 {
			it.Parts = append(it.Parts, part{Kind: "note", Text: strings.Join(notes, " · ")})
		}
		if p, ok := checkpointNote(l.SystemMessage); ok {
			it.Parts = append(it.Parts, p)
		}
		if l.Summary != nil {
			it.Parts = append(it.Parts, part{Kind: "summary", Text: *l.Summary})
		}
	case "branch_summary":
		it.Kind, it.Title = "summary", "Branch summary"
		if l.FromID != "" {
			it.Parts = append(it.Parts, part{Kind: "note", Text: "summary of the branch left at " + l.FromID})
		}
		if l.Summary != nil {
			it.Parts = append(it.Parts, part{Kind: "summary", Text: *l.Summary})
		}
	case "custom":
		if l.CustomType == journal.NotebookType {
			it.Kind, it.Title = "notebook", "Notebook revision"
			var d struct {
				Revision *int `json:"revision"`
			}
			_ = json.Unmarshal(l.Data, &d)
			if d.Revision != nil {
				it.Title += " " + strconv.Itoa(*d.Revision)
			}
			for _, s := range journal.NotebookSections(l.Data) {
				it.Parts = append(it.Parts, part{Kind: "section", Label: s.Name, Text: s.Text})
			}
			return it
		}
		it.Kind, it.Meta, it.Title = "meta", true, "Extension state"
		it.Sub = l.CustomType
	case "custom_message":
		it.Kind, it.Title, it.Sub = "custom", "Extension message", l.CustomType
		if l.Display != nil && !*l.Display {
			it.Parts = append(it.Parts, part{Kind: "note", Text: "not displayed to the user"})
		}
		it.Parts = append(it.Parts, contentParts(l.Content, "text")...)
	case "label":
		it.Kind, it.Meta = "meta", true
		if l.Label == nil || *l.Label == "" {
			it.Title = "Label cleared on " + l.TargetID
		} else {
			it.Title = fmt.Sprintf("Label %q on %s", *l.Label, l.TargetID)
		}
	case "session_info":
		it.Kind, it.Meta = "meta", true
		if l.Name == nil || *l.Name == "" {
			it.Title = "Session name cleared"
		} else {
			it.Title = fmt.Sprintf("Session named %q", *l.Name)
		}
	case "model_change":
		it.Kind, it.Meta, it.Title = "meta", true, "Model: "+joinNonEmpty("/", l.Provider, l.ModelID)
	case "thinking_level_change":
		it.Kind, it.Meta, it.Title = "meta", true, "Thinking level: "+l.ThinkingLevel
	case "usage":
		it.Kind, it.Meta, it.Title = "meta", true, "Usage outside the conversation ("+l.Kind+")"
		if l.Usage != nil {
			it.Title += ": " + l.Usage.String()
		}
		it.Sub = joinNonEmpty("/", l.Provider, l.Model)
		if l.Note != "" {
			it.Title += " · " + l.Note
		}
	case "context_edit":
		contextEditItem(it, l.TargetID, l.Replacement)
	default:
		it.Kind, it.Meta, it.Title = "unknown", true, "Entry of type "+strconv.Quote(l.Type)
	}
	return it
}

func messageItem(it *item, m *rMessage) {
	switch m.Role {
	case "user":
		it.Kind, it.Title = "user", "User"
		it.Parts = contentParts(m.Content, "text")
	case "assistant":
		it.Kind, it.Title = "assistant", "Assistant"
		it.Sub = m.Model
		if m.ThinkingLevel != "" {
			it.Sub = joinNonEmpty(", ", m.Model, "thinking "+m.ThinkingLevel)
		}
		it.Parts = assistantParts(m.Content)
		if m.StopReason == "error" || m.StopReason == "aborted" || m.ErrorMessage != "" {
			msg := "stopped: " + m.StopReason
			if m.ErrorMessage != "" {
				msg += ": " + m.ErrorMessage
			}
			it.Parts = append(it.Parts, part{Kind: "note", Text: msg})
		}
	case "toolResult":
		it.Kind, it.Title, it.Sub = "tool", "Tool result", m.ToolName
		if m.DurationMs != nil {
			it.Took = formatMs(*m.DurationMs)
		}
		if m.IsError {
			it.Title = "Tool error"
		}
		it.Parts = contentParts(m.Content, "code")
		for i := range it.Parts {
			it.Parts[i].Error = m.IsError
		}
		if len(it.Parts) == 0 {
			it.Parts = []part{{Kind: "note", Text: "no output"}}
		}
	case "bashExecution":
		it.Kind, it.Title = "bash", "Shell command"
		cmd := "!" + m.Command
		if m.ExcludeFromContext {
			cmd = "!" + cmd
		}
		it.Parts = append(it.Parts, part{Kind: "code", Label: "command", Text: cmd})
		var notes []string
		if m.ExitCode != nil {
			notes = append(notes, "exit code "+strconv.Itoa(*m.ExitCode))
		}
		if m.Cancelled {
			notes = append(notes, "cancelled")
		}
		if m.Truncated {
			notes = append(notes, "output truncated")
		}
		if m.FullOutputPath != "" {
			notes = append(notes, "full output in "+m.FullOutputPath)
		}
		if m.ExcludeFromContext {
			notes = append(notes, "not sent to the model")
		}
		it.Parts = append(it.Parts, part{Kind: "code", Label: "output", Text: m.Output, Error: m.ExitCode != nil && *m.ExitCode != 0})
		if len(notes) > 0 {
			it.Parts = append(it.Parts, part{Kind: "note", Text: strings.Join(notes, " · ")})
		}
	case "custom":
		it.Kind, it.Title, it.Sub = "custom", "Extension message", m.CustomType
		if m.Display != nil && !*m.Display {
			it.Parts = append(it.Parts, part{Kind: "note", Text: "not displayed to the user"})
		}
		it.Parts = append(it.Parts, contentParts(m.Content, "text")...)
	case "branchSummary", "compactionSummary":
		it.Kind, it.Title = "summary", "Summary ("+m.Role+")"
		it.Parts = []part{{Kind: "summary", Text: m.Summary}}
	default:
		it.Kind, it.Title = "unknown", "Message"
		it.Sub = m.Role
		it.Parts = contentParts(m.Content, "text")
	}
}

// contentParts reads a content field (a string or blocks); text becomes
// parts of kind textKind, images become references.
func contentParts(raw json.RawMessage, textKind string) []part {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return []part{{Kind: textKind, Text: s}}
	}
	var blocks []rBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return []part{{Kind: "code", Label: "content", Text: string(raw)}}
	}
	var out []part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, part{Kind: textKind, Text: b.Text})
		case "image":
			out = append(out, imagePart(b))
		default:
			out = append(out, part{Kind: "note", Text: "content block of type " + strconv.Quote(b.Type)})
		}
	}
	return out
}

func assistantParts(raw json.RawMessage) []part {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return contentParts(raw, "text")
	}
	var blocks []rBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, part{Kind: "text", Text: b.Text})
		case "thinking":
			t := b.Thinking
			if b.Redacted && t == "" {
				t = "(redacted)"
			}
			out = append(out, part{Kind: "thinking", Text: t})
		case "toolCall":
			out = append(out, part{Kind: "call", Label: b.Name, CallID: b.ID, Args: indentJSON(b.Arguments)})
		case "image":
			out = append(out, imagePart(b))
		default:
			out = append(out, part{Kind: "note", Text: "content block of type " + strconv.Quote(b.Type)})
		}
	}
	return out
}

// imagePart references an image without embedding it.
func imagePart(b rBlock) part {
	n := len(b.Data) * 3 / 4
	if strings.HasSuffix(b.Data, "==") {
		n -= 2
	} else if strings.HasSuffix(b.Data, "=") {
		n--
	}
	mt := b.MimeType
	if mt == "" {
		mt = "image"
	}
	return part{Kind: "image", Label: mt, Text: fmt.Sprintf("%s, %s (not embedded; in the jsonl export)", mt, humanBytes(n))}
}

func indentJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.Itoa(n) + " bytes"
}

// displayTime shows an ISO timestamp as "2006-01-02 15:04:05 UTC".
func displayTime(s string) string {
	t := journal.ParseTime(s)
	if t.IsZero() {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// firstPrompt is the title of the first user message on the exported
// branch (its first line, shortened), "" when there is none.
func (x *Export) firstPrompt() string {
	for _, e := range x.path {
		if e.Type != "message" || e.Role != "user" {
			continue
		}
		raw, err := x.raw(e)
		if err != nil {
			continue
		}
		var line struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(raw, &line) != nil {
			continue
		}
		if t := journal.TitleLine(journal.ContentText(line.Message.Content), journal.TitleRunes); t != "" {
			return t
		}
	}
	return ""
}
