// Package notebook keeps the model's working notes for a Pi session branch:
// the sectioned notebook of the note-context design (tool `notes`), the named
// notes of the context-management design (tool `context_notes`), the history
// of notebook revisions, and the notes-staleness status line. What it takes
// from those designs is summarised in docs/spec-notes.md.
//
// The package stores nothing. Notes live in the session journal as `custom`
// entries, and every function here takes the branch it works on as a path of
// journal entries, root first, with Raw populated (journal.Tree.Path gives
// exactly that). State for a leaf is rebuilt from its ancestor chain on every
// call, so moving the leaf in the tree restores the notes as of that point,
// and a forked or reloaded session needs no migration.
//
// A write never changes anything by itself: it validates the request against
// the state the path yields and returns the exact `data` of the custom entry
// that, once appended to the journal (by the Pi extension, with
// pi.appendEntry), makes the write real. A rejected write returns a typed
// error (*LimitError, *StaleError, *InvalidError, *NotFoundError) and no
// data, so the previous state stands.
//
// Two custom types are used:
//
//   - NotebookType ("note-context/notebook"): one record per notebook write or
//     review, holding the whole notebook. The latest valid record on the path
//     is the notebook.
//   - NoteType ("note-context/note"): one record per named-note operation
//     (write, append, delete, copy). Replaying the records on the path
//     rebuilds the set of named notes.
//
// The package is pure logic over journal entries: the store, the HTTP API and
// the Pi extension are its clients.
package notebook

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pi-history/pi-history/journal"
)

// Journal custom types and the notebook record format.
const (
	NotebookType    = journal.NotebookType // customType of notebook records
	NotebookVersion = 1                    // the "version" written in notebook records
)

// Notebook limits (docs/spec-notes.md, "Notebook limits").
const (
	MaxSections        = 8     // sections per notebook
	MaxSectionNameLen  = 32    // characters in a section name
	DefaultMaxBytes    = 16384 // UTF-8 bytes of the rendered notebook
	DefaultMaxTokens   = 4096  // token estimate of the rendered notebook
	DefaultStatusSteps = 40000 // tokens per staleness step of the status line
)

// CanonicalSections are the documented section names, in display order. New
// sections with these names are placed before free-named ones.
var CanonicalSections = []string{"Task", "State", "Decisions", "Next", "Refs"}

// Limits are the notebook's hard ceilings. Zero fields take the defaults.
type Limits struct {
	MaxBytes  int // UTF-8 bytes of the rendered notebook; default DefaultMaxBytes
	MaxTokens int // token estimate of the rendered notebook; default DefaultMaxTokens
}

// DefaultLimits are the ceilings of the default configuration.
func DefaultLimits() Limits { return Limits{MaxBytes: DefaultMaxBytes, MaxTokens: DefaultMaxTokens} }

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	return l
}

// EstimateTokens is Pi's token estimate for text: its length in UTF-16 code
// units (JavaScript's string length) divided by four, rounded up.
func EstimateTokens(text string) int {
	n := 0
	for _, r := range text {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return (n + 3) / 4
}

// Render is the notebook as the model and the rollover summary see it: each
// section as "## Name", a newline and its text, separated by blank lines.
// Sizes are measured on this text.
func (s Sections) Render() string {
	var b strings.Builder
	for i, sec := range s {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## ")
		b.WriteString(sec.Name)
		b.WriteByte('\n')
		b.WriteString(sec.Text)
	}
	return b.String()
}

// Measure returns the rendered notebook's UTF-8 size and token estimate.
func (s Sections) Measure() (bytes, tokens int) {
	text := s.Render()
	return len(text), EstimateTokens(text)
}

// Record is the data of one notebook journal entry (customType
// NotebookType): the whole notebook after a write or review.
type Record struct {
	Version  int      // NotebookVersion
	Revision int      // 1 for the first write; each write or review adds one
	Sections Sections // the whole notebook, in display order
	// ReviewedThrough is the id of the assistant message entry that issued
	// the write: everything before it was visible to the model. "" is
	// written as null.
	ReviewedThrough string
	// ReviewedTokens is the context usage in tokens when the write or review
	// happened; nil when unknown (written as null). Staleness counts from it.
	ReviewedTokens *int
	// ReviewOnly marks a record made by `reviewed: true`: the sections are
	// those of the previous revision.
	ReviewOnly bool
}

// MarshalJSON writes the record with its keys in a fixed order: version,
// revision, sections, reviewedThrough, reviewedTokens and, for a review,
// reviewOnly.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"version":`)
	b.WriteString(strconv.Itoa(r.Version))
	b.WriteString(`,"revision":`)
	b.WriteString(strconv.Itoa(r.Revision))
	b.WriteString(`,"sections":`)
	sec, _ := r.Sections.MarshalJSON()
	if r.Sections == nil {
		sec = []byte("{}")
	}
	b.Write(sec)
	b.WriteString(`,"reviewedThrough":`)
	if r.ReviewedThrough == "" {
		b.WriteString("null")
	} else {
		writeJSONString(&b, r.ReviewedThrough)
	}
	b.WriteString(`,"reviewedTokens":`)
	if r.ReviewedTokens == nil {
		b.WriteString("null")
	} else {
		b.WriteString(strconv.Itoa(*r.ReviewedTokens))
	}
	if r.ReviewOnly {
		b.WriteString(`,"reviewOnly":true`)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseRecord reads the data of a notebook entry. It accepts what the Pi
// extension and picorpus write: an integer version ≥ 1, an integer revision
// ≥ 0, a sections object whose values are all strings, reviewedThrough as a
// string or null, reviewedTokens as a number, null or absent.
func ParseRecord(data []byte) (Record, error) {
	var d struct {
		Version         json.RawMessage `json:"version"`
		Revision        json.RawMessage `json:"revision"`
		Sections        json.RawMessage `json:"sections"`
		ReviewedThrough json.RawMessage `json:"reviewedThrough"`
		ReviewedTokens  json.RawMessage `json:"reviewedTokens"`
		ReviewOnly      bool            `json:"reviewOnly"`
	}
	bad := func(reason string) (Record, error) {
		return Record{}, &InvalidError{Field: "notebook record", Reason: reason}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return bad("not a JSON object")
	}
	var r Record
	var ok bool
	if r.Version, ok = jsonInt(d.Version); !ok || r.Version < 1 {
		return bad("version is not a positive integer")
	}
	if r.Revision, ok = jsonInt(d.Revision); !ok || r.Revision < 0 {
		return bad("revision is not a non-negative integer")
	}
	if len(d.Sections) == 0 || d.Sections[0] != '{' {
		return bad("sections is not an object")
	}
	if err := json.Unmarshal(d.Sections, &r.Sections); err != nil {
		return bad("sections: " + err.Error())
	}
	switch {
	case len(d.ReviewedThrough) == 0 || string(d.ReviewedThrough) == "null":
	case d.ReviewedThrough[0] == '"':
		_ = json.Unmarshal(d.ReviewedThrough, &r.ReviewedThrough)
	default:
		return bad("reviewedThrough is neither a string nor null")
	}
	if len(d.ReviewedTokens) > 0 && string(d.ReviewedTokens) != "null" {
		n, ok := jsonInt(d.ReviewedTokens)
		if !ok {
			return bad("reviewedTokens is not a number")
		}
		r.ReviewedTokens = &n
	}
	r.ReviewOnly = d.ReviewOnly
	return r, nil
}

// jsonInt reads a JSON number with an integral value.
func jsonInt(raw json.RawMessage) (int, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// customData returns the data of a custom entry of the given type.
func customData(e *journal.Entry, customType string) (json.RawMessage, bool) {
	if e == nil || e.Type != "custom" || e.CustomType != customType || len(e.Raw) == 0 {
		return nil, false
	}
	var d struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(e.Raw, &d) != nil || len(d.Data) == 0 {
		return nil, false
	}
	return d.Data, true
}

// State is the notebook of a branch: the latest valid notebook record on the
// path. The zero State (EntryID "") means no notebook on this branch.
type State struct {
	Revision        int      `json:"revision"`
	Sections        Sections `json:"sections"`
	Bytes           int      `json:"bytes"`
	TokensEstimate  int      `json:"tokensEstimate"`
	ReviewedThrough string   `json:"reviewedThrough,omitempty"`
	ReviewedTokens  *int     `json:"reviewedTokens,omitempty"`
	ReviewOnly      bool     `json:"reviewOnly,omitempty"`
	EntryID         string   `json:"entryId,omitempty"`   // the custom entry holding this revision
	Timestamp       string   `json:"timestamp,omitempty"` // when that entry was appended
	// PrecedesCompaction is true when a compaction lies on the path after
	// the notebook record: context usage restarted since ReviewedTokens was
	// taken, so staleness counts from the current window's first usage.
	PrecedesCompaction bool `json:"precedesCompaction,omitempty"`
}

// Exists reports whether the branch has a notebook.
func (s State) Exists() bool { return s.EntryID != "" }

// Read rebuilds the notebook of the branch whose path (root first) is given:
// the latest notebook record on it that parses. Malformed records are
// skipped, so one cannot hide an earlier valid revision.
func Read(path []*journal.Entry) State {
	var st State
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		if e != nil && e.Type == "compaction" && !st.Exists() {
			st.PrecedesCompaction = true
		}
		data, ok := customData(e, NotebookType)
		if !ok {
			continue
		}
		rec, err := ParseRecord(data)
		if err != nil {
			continue
		}
		st.Revision, st.Sections = rec.Revision, rec.Sections
		st.ReviewedThrough, st.ReviewedTokens, st.ReviewOnly = rec.ReviewedThrough, rec.ReviewedTokens, rec.ReviewOnly
		st.EntryID, st.Timestamp = e.ID, e.Timestamp
		st.Bytes, st.TokensEstimate = rec.Sections.Measure()
		return st
	}
	return State{Sections: Sections{}}
}

// WriteRequest is one `notes` call that changes the notebook. Its JSON form
// is the tool's arguments plus the bookkeeping the extension supplies.
type WriteRequest struct {
	// Sections to replace, by name; a section absent here is untouched and
	// "" (or only white space) deletes one. Texts are trimmed of surrounding
	// white space.
	Sections Sections `json:"sections,omitempty"`
	// ReplaceAll makes Sections the whole notebook.
	ReplaceAll bool `json:"replaceAll,omitempty"`
	// Reviewed attests that the current revision needs no change: a record
	// with the same sections and an advanced review marker. It cannot be
	// combined with Sections or ReplaceAll.
	Reviewed bool `json:"reviewed,omitempty"`
	// ExpectedRevision, when set, must be the current revision (0: no
	// notebook yet), or the write fails with *StaleError.
	ExpectedRevision *int `json:"expectedRevision,omitempty"`
	// ReviewedThrough is the id of the assistant message entry that issued
	// the call; it must be on the path. Empty: the last assistant message
	// on the path.
	ReviewedThrough string `json:"reviewedThrough,omitempty"`
	// ReviewedTokens is the context usage at the call, in tokens; nil when
	// unknown (the notes then never go stale on tokens).
	ReviewedTokens *int `json:"reviewedTokens,omitempty"`
}

// ParseWriteRequest decodes a JSON write request. Unlike encoding/json alone
// it rejects invalid UTF-8 instead of replacing it, and reports every defect
// as an *InvalidError.
func ParseWriteRequest(body []byte) (WriteRequest, error) {
	var req WriteRequest
	if !utf8.Valid(body) {
		return req, &InvalidError{Field: "request", Reason: "not valid UTF-8", Hint: "send the request as UTF-8 JSON"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if ie, ok := err.(*InvalidError); ok {
			return WriteRequest{}, ie
		}
		return WriteRequest{}, &InvalidError{Field: "request", Reason: "malformed: " + strings.TrimPrefix(err.Error(), "json: "),
			Hint: `send {"sections": {...}}, optionally with "replaceAll": true, or {"reviewed": true}`}
	}
	if dec.More() {
		return WriteRequest{}, &InvalidError{Field: "request", Reason: "trailing data after the JSON object"}
	}
	return req, nil
}

// Result is what a successful write reports. The notebook text is not echoed.
type Result struct {
	Revision       int  `json:"revision"`
	Bytes          int  `json:"bytes"`
	TokensEstimate int  `json:"tokensEstimate"`
	RemainingBytes int  `json:"remainingBytes"`
	Changed        bool `json:"changed"` // the sections differ from the previous revision
}

// Write validates req against the notebook of path and returns the result and
// the record to append (as the data of a custom entry of type NotebookType).
// Nothing is written here. On error the record is the zero Record.
//
// Outcomes: *InvalidError for a malformed request (bad section name or text,
// a ninth section, an empty result, reviewed without a notebook, an unknown
// ReviewedThrough); *StaleError when ExpectedRevision is not current;
// *LimitError when the rendered notebook would exceed limits.
func Write(path []*journal.Entry, req WriteRequest, limits Limits) (Result, Record, error) {
	limits = limits.withDefaults()
	if err := req.validate(); err != nil {
		return Result{}, Record{}, err
	}
	cur := Read(path)
	if req.ExpectedRevision != nil && *req.ExpectedRevision != cur.Revision {
		return Result{}, Record{}, &StaleError{Expected: *req.ExpectedRevision, Current: cur.Revision}
	}
	through, err := reviewedThrough(path, req.ReviewedThrough)
	if err != nil {
		return Result{}, Record{}, err
	}
	var next Sections
	if req.Reviewed {
		if !cur.Exists() {
			return Result{}, Record{}, &InvalidError{Field: "reviewed", Reason: "there is no notebook on this branch to review",
				Hint: "write notes first"}
		}
		next = append(Sections{}, cur.Sections...)
	} else {
		next = apply(cur.Sections, req.Sections, req.ReplaceAll)
	}
	if len(next) == 0 {
		return Result{}, Record{}, &InvalidError{Field: "sections", Reason: "the write would leave the notebook empty",
			Hint: "keep at least one non-empty section"}
	}
	if len(next) > MaxSections {
		return Result{}, Record{}, &InvalidError{Field: "sections",
			Reason: "the write would make " + strconv.Itoa(len(next)) + " sections; at most " + strconv.Itoa(MaxSections) + " are allowed",
			Hint:   "merge or delete sections (\"\" deletes one); canonical: " + strings.Join(CanonicalSections, ", ")}
	}
	size, tokens := next.Measure()
	var over []Excess
	if size > limits.MaxBytes {
		over = append(over, Excess{What: "bytes", Limit: limits.MaxBytes, Actual: size})
	}
	if tokens > limits.MaxTokens {
		over = append(over, Excess{What: "tokens", Limit: limits.MaxTokens, Actual: tokens})
	}
	if over != nil {
		return Result{}, Record{}, &LimitError{Subject: "notebook", Excess: over}
	}
	rec := Record{Version: NotebookVersion, Revision: cur.Revision + 1, Sections: next,
		ReviewedThrough: through, ReviewedTokens: req.ReviewedTokens, ReviewOnly: req.Reviewed}
	res := Result{Revision: rec.Revision, Bytes: size, TokensEstimate: tokens,
		RemainingBytes: limits.MaxBytes - size, Changed: !sameSections(cur.Sections, next)}
	return res, rec, nil
}

func (req *WriteRequest) validate() error {
	if req.Reviewed && (len(req.Sections) > 0 || req.ReplaceAll) {
		return &InvalidError{Field: "reviewed", Reason: "cannot be combined with sections or replaceAll",
			Hint: "send either sections (a content write) or reviewed: true (no content change)"}
	}
	if !req.Reviewed && req.Sections == nil {
		return &InvalidError{Field: "sections", Reason: "missing: nothing to write",
			Hint: `send {"sections": {...}} or {"reviewed": true}`}
	}
	if req.ExpectedRevision != nil && *req.ExpectedRevision < 0 {
		return &InvalidError{Field: "expectedRevision", Reason: "is negative", Hint: "send the revision you read (0 for none)"}
	}
	if req.ReviewedTokens != nil && *req.ReviewedTokens < 0 {
		return &InvalidError{Field: "reviewedTokens", Reason: "is negative", Hint: "send the context usage in tokens, or omit it"}
	}
	if !utf8.ValidString(req.ReviewedThrough) {
		return &InvalidError{Field: "reviewedThrough", Reason: "not valid UTF-8"}
	}
	for _, s := range req.Sections {
		if !utf8.ValidString(s.Name) || !utf8.ValidString(s.Text) {
			return &InvalidError{Field: "section " + strconv.Quote(s.Name), Reason: "not valid UTF-8",
				Hint: "send section names and texts as UTF-8 text"}
		}
		if strings.TrimSpace(s.Text) == "" {
			continue // deleting: any name may go, even one an older writer allowed
		}
		if reason := checkSectionName(s.Name); reason != "" {
			return &InvalidError{Field: "section " + strconv.Quote(s.Name), Reason: reason,
				Hint: "use a short title such as " + strings.Join(CanonicalSections, ", ")}
		}
	}
	return nil
}

// checkSectionName says what is wrong with a section name, or "".
// A name starts with a letter and continues with letters, digits, marks,
// spaces, '_' or '-', up to MaxSectionNameLen characters: one line that
// renders as a heading.
func checkSectionName(name string) string {
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0:
		return "name is empty"
	case n > MaxSectionNameLen:
		return "name is " + strconv.Itoa(n) + " characters; at most " + strconv.Itoa(MaxSectionNameLen)
	}
	for i, r := range name {
		if i == 0 && !unicode.IsLetter(r) {
			return "name must start with a letter"
		}
		if !(unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || r == ' ' || r == '_' || r == '-') {
			return "name may hold only letters, digits, spaces, '_' and '-'"
		}
	}
	return ""
}

// apply returns the sections after a write: existing sections keep their
// place, deleted ones go, new ones are appended (canonical names first, in
// canonical order, then the others in request order). With replaceAll the
// request is the whole notebook, ordered the same way.
func apply(cur, req Sections, replaceAll bool) Sections {
	next := Sections{}
	if !replaceAll {
		next = append(next, cur...)
	}
	var added Sections
	for _, s := range req {
		text := strings.TrimSpace(s.Text)
		i := next.index(s.Name)
		switch {
		case text == "" && i >= 0:
			next = append(next[:i], next[i+1:]...)
		case text == "":
			if j := added.index(s.Name); j >= 0 {
				added = append(added[:j], added[j+1:]...)
			}
		case i >= 0:
			next[i].Text = text
		default:
			if j := added.index(s.Name); j >= 0 {
				added[j].Text = text
			} else {
				added = append(added, Section{Name: s.Name, Text: text})
			}
		}
	}
	for _, name := range CanonicalSections {
		if j := added.index(name); j >= 0 {
			next = append(next, added[j])
		}
	}
	for _, s := range added {
		if !isCanonical(s.Name) {
			next = append(next, s)
		}
	}
	return next
}

func isCanonical(name string) bool {
	for _, c := range CanonicalSections {
		if c == name {
			return true
		}
	}
	return false
}

func sameSections(a, b Sections) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reviewedThrough resolves the review marker of a write: the given id, which
// must be an assistant message on the path (the freshness rules measure
// what the model saw up to the message that called; a later entry, the leaf
// or a tool result, would count as reviewed what it never read), or the last
// assistant message on the path.
func reviewedThrough(path []*journal.Entry, id string) (string, error) {
	if id != "" {
		for _, e := range path {
			if e != nil && e.ID == id {
				if e.Type != "message" || e.Role != "assistant" {
					return "", &InvalidError{Field: "reviewedThrough", Reason: "entry " + strconv.Quote(id) + " is not an assistant message",
						Hint: "send the id of the assistant message that issued the call, or omit it"}
				}
				return id, nil
			}
		}
		return "", &InvalidError{Field: "reviewedThrough", Reason: "entry " + strconv.Quote(id) + " is not on this branch",
			Hint: "send the id of the assistant message that issued the call, or omit it"}
	}
	for i := len(path) - 1; i >= 0; i-- {
		if e := path[i]; e != nil && e.Type == "message" && e.Role == "assistant" {
			return e.ID, nil
		}
	}
	return "", nil
}

// Revision is one notebook record on a branch, for a timeline.
type Revision struct {
	Revision        int      `json:"revision"`
	EntryID         string   `json:"entryId"`
	Timestamp       string   `json:"timestamp"`
	ReviewOnly      bool     `json:"reviewOnly,omitempty"`
	ReviewedThrough string   `json:"reviewedThrough,omitempty"`
	Bytes           int      `json:"bytes"`
	TokensEstimate  int      `json:"tokensEstimate"`
	Sections        []string `json:"sections"`          // section names after this revision, in order
	Added           []string `json:"added,omitempty"`   // sections new in this revision
	Changed         []string `json:"changed,omitempty"` // sections whose text changed
	Removed         []string `json:"removed,omitempty"` // sections gone in this revision
}

// Revisions lists every valid notebook record on the path, oldest first,
// each with what changed since the previous one (the first revision adds all
// its sections).
func Revisions(path []*journal.Entry) []Revision {
	out := []Revision{}
	var prev Sections
	for _, e := range path {
		data, ok := customData(e, NotebookType)
		if !ok {
			continue
		}
		rec, err := ParseRecord(data)
		if err != nil {
			continue
		}
		r := Revision{Revision: rec.Revision, EntryID: e.ID, Timestamp: e.Timestamp, ReviewOnly: rec.ReviewOnly,
			ReviewedThrough: rec.ReviewedThrough, Sections: rec.Sections.Names()}
		r.Bytes, r.TokensEstimate = rec.Sections.Measure()
		for _, s := range rec.Sections {
			if old, ok := prev.Get(s.Name); !ok {
				r.Added = append(r.Added, s.Name)
			} else if old != s.Text {
				r.Changed = append(r.Changed, s.Name)
			}
		}
		for _, s := range prev {
			if _, ok := rec.Sections.Get(s.Name); !ok {
				r.Removed = append(r.Removed, s.Name)
			}
		}
		out = append(out, r)
		prev = rec.Sections
	}
	return out
}
