package window

// This file holds the notebook and named-note operations: reads of the
// branch's notebook, notes and revisions, and the validated writes whose
// custom entry the extension appends.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/pi-history/pi-history/notebook"
)

// NotebookView is a branch's notebook (GET /v1/sessions/{id}/notebook).
type NotebookView struct {
	Session        string         `json:"session"`
	Leaf           string         `json:"leaf"`
	Exists         bool           `json:"exists"`
	Notebook       notebook.State `json:"notebook"`
	Text           string         `json:"text"` // the notebook as notes() shows it
	RemainingBytes int            `json:"remainingBytes"`
	Window         int            `json:"window"`
}

// NotebookWriteRequest is a notes call (notebook.WriteRequest) on a branch
// (POST /v1/sessions/{id}/notebook).
type NotebookWriteRequest struct {
	Leaf string `json:"leaf,omitempty"`
	notebook.WriteRequest
}

// EntryToAppend is a custom entry the extension appends with
// pi.appendEntry(customType, data) to make a write real.
type EntryToAppend struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data"`
}

// NotebookWriteResponse is a validated notebook write.
type NotebookWriteResponse struct {
	Session string          `json:"session"`
	Leaf    string          `json:"leaf"`
	Result  notebook.Result `json:"result"`
	Append  EntryToAppend   `json:"append"`
}

// ReviewRequest confirms the notebook without changing it
// (POST /v1/sessions/{id}/notebook/review).
type ReviewRequest struct {
	Leaf             string `json:"leaf,omitempty"`
	ReviewedThrough  string `json:"reviewedThrough,omitempty"`
	ReviewedTokens   *int   `json:"reviewedTokens,omitempty"`
	ExpectedRevision *int   `json:"expectedRevision,omitempty"`
}

// RevisionsResponse is the notebook's revisions on a branch
// (GET /v1/sessions/{id}/notebook/revisions).
type RevisionsResponse struct {
	Session   string              `json:"session"`
	Leaf      string              `json:"leaf"`
	Revisions []notebook.Revision `json:"revisions"`
}

// Notebook reads the notebook of session sid's branch ending at leaf (the
// current leaf when "").
func (s *Service) Notebook(sid, leaf string) (NotebookView, error) {
	b, err := s.branch(sid, leaf)
	if err != nil {
		return NotebookView{}, err
	}
	nb := notebook.Read(b.path)
	lim := s.limits()
	if lim.MaxBytes == 0 {
		lim = notebook.DefaultLimits()
	}
	return NotebookView{Session: b.sid, Leaf: b.leaf, Exists: nb.Exists(), Notebook: nb, Text: nb.Sections.Render(),
		RemainingBytes: max(0, lim.MaxBytes-nb.Bytes), Window: windowOf(b.path)}, nil
}

// WriteNotebook validates a notebook write against the branch it names and
// returns the entry that makes it real. Errors from package notebook
// (*LimitError, *StaleError, *InvalidError) come back as they are.
func (s *Service) WriteNotebook(sid string, in NotebookWriteRequest) (NotebookWriteResponse, error) {
	b, err := s.branch(sid, in.Leaf)
	if err != nil {
		return NotebookWriteResponse{}, err
	}
	res, rec, err := notebook.Write(b.path, in.WriteRequest, s.limits())
	if err != nil {
		return NotebookWriteResponse{}, err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return NotebookWriteResponse{}, err
	}
	return NotebookWriteResponse{Session: b.sid, Leaf: b.leaf, Result: res,
		Append: EntryToAppend{CustomType: notebook.NotebookType, Data: data}}, nil
}

// Review validates a review: a notebook write that confirms the sections as
// they are.
func (s *Service) Review(sid string, in ReviewRequest) (NotebookWriteResponse, error) {
	return s.WriteNotebook(sid, NotebookWriteRequest{Leaf: in.Leaf, WriteRequest: notebook.WriteRequest{Reviewed: true,
		ReviewedThrough: in.ReviewedThrough, ReviewedTokens: in.ReviewedTokens, ExpectedRevision: in.ExpectedRevision}})
}

// Revisions lists the notebook's revisions on the branch, oldest first.
func (s *Service) Revisions(sid, leaf string) (RevisionsResponse, error) {
	b, err := s.branch(sid, leaf)
	if err != nil {
		return RevisionsResponse{}, err
	}
	revs := notebook.Revisions(b.path)
	if revs == nil {
		revs = []notebook.Revision{}
	}
	return RevisionsResponse{Session: b.sid, Leaf: b.leaf, Revisions: revs}, nil
}

// NoteQuery names the branch a named-note read works on and what it reads.
// Scope is branch (the default) or lineage (the current branches of the
// session's lineage as well).
type NoteQuery struct {
	Leaf   string
	Scope  string
	Query  string // SearchNotes: the text to find (required)
	Name   string // ReadNote: the note; exactly one of Name and Ref
	Ref    string // ReadNote: context:<session>:<entry>
	Offset int
	Limit  int // ReadNote: characters to read; 0 or less reads to the end
}

// Notes lists the named notes in scope.
func (s *Service) Notes(sid string, q NoteQuery) (notebook.NoteList, error) {
	bs, _, err := s.branches(sid, q.Leaf, q.Scope)
	if err != nil {
		return notebook.NoteList{}, err
	}
	list := notebook.ListNotes(bs, q.Offset)
	if list.Notes == nil {
		list.Notes = []notebook.NoteInfo{}
	}
	return list, nil
}

// SearchNotes finds q.Query in the named notes in scope.
func (s *Service) SearchNotes(sid string, q NoteQuery) (notebook.SearchPage, error) {
	if q.Query == "" {
		return notebook.SearchPage{}, invalid("query", "query must not be empty")
	}
	bs, _, err := s.branches(sid, q.Leaf, q.Scope)
	if err != nil {
		return notebook.SearchPage{}, err
	}
	page, err := notebook.SearchNotes(bs, q.Query, q.Offset)
	if err != nil {
		return notebook.SearchPage{}, err
	}
	if page.Matches == nil {
		page.Matches = []notebook.Match{}
	}
	return page, nil
}

// ReadNote reads a named note by name (on the caller's branch) or by
// reference (in the lineage unless the scope says otherwise).
func (s *Service) ReadNote(sid string, q NoteQuery) (notebook.NoteText, error) {
	if (q.Name == "") == (q.Ref == "") {
		return notebook.NoteText{}, invalid("name", "give exactly one of name and ref")
	}
	scope := q.Scope
	if q.Ref != "" && scope == "" {
		scope = "lineage" // a reference names its session; let it resolve there
	}
	bs, _, err := s.branches(sid, q.Leaf, scope)
	if err != nil {
		return notebook.NoteText{}, err
	}
	if q.Name != "" {
		return notebook.ReadNote(bs[0], q.Name, q.Offset, q.Limit)
	}
	return notebook.ReadNoteRef(bs, q.Ref, q.Offset, q.Limit)
}

// NoteOpRequest is one named-note change (POST /v1/sessions/{id}/notes).
type NoteOpRequest struct {
	Leaf    string  `json:"leaf,omitempty"`
	Op      string  `json:"op"`                // write, append, delete, copy
	Name    string  `json:"name,omitempty"`    // the note (copy: the new name, "" keeps the source's)
	Content *string `json:"content,omitempty"` // write: the whole note (required; "" empties it)
	Text    *string `json:"text,omitempty"`    // append: what to add (required)
	Ref     string  `json:"ref,omitempty"`     // copy: context:<session>:<entry>
	Scope   string  `json:"scope,omitempty"`   // copy: where ref may point: branch (default) or lineage
}

// check refuses a change missing the field its op needs, or carrying one
// that belongs to another op. A write without content used to save an empty
// note: a model that put its text in "text" (append's field) erased the
// note and was told it was saved.
func (in *NoteOpRequest) check() error {
	fields := []struct {
		name    string
		present bool
		ops     []string // the ops it belongs to
	}{
		{"content", in.Content != nil, []string{notebook.OpWrite}},
		{"text", in.Text != nil, []string{notebook.OpAppend}},
		{"ref", in.Ref != "", []string{notebook.OpCopy}},
		{"scope", in.Scope != "", []string{notebook.OpCopy}},
	}
	known := false
	for _, f := range fields {
		for _, op := range f.ops {
			known = known || op == in.Op
		}
	}
	if !known && in.Op != notebook.OpDelete {
		return invalid("op", "op must be one of write, append, delete, copy; not %q", in.Op)
	}
	for _, f := range fields {
		if f.present && !slices.Contains(f.ops, in.Op) {
			return invalid(f.name, "%s belongs to op %s, not %s: nothing was changed", f.name, strings.Join(f.ops, " or "), in.Op)
		}
	}
	needs := map[string]string{"content": `the note's text in full; "" empties it`, "text": "the text to add", "ref": "context:<session>:<entry>"}
	for _, f := range fields {
		if !f.present && slices.Contains(f.ops, in.Op) && needs[f.name] != "" {
			return invalid(f.name, "op %s needs %s (%s); nothing was changed", in.Op, f.name, needs[f.name])
		}
	}
	return nil
}

// NoteOpResponse is a validated named-note change. Append is absent when
// nothing changes (appending "").
type NoteOpResponse struct {
	Session string              `json:"session"`
	Leaf    string              `json:"leaf"`
	Result  notebook.NoteResult `json:"result"`
	Append  *EntryToAppend      `json:"append,omitempty"`
}

// ChangeNote validates one named-note change against the branch and returns
// the entry that makes it real. A copy resolves its reference in the
// lineage unless the request names a scope.
func (s *Service) ChangeNote(sid string, in NoteOpRequest) (NoteOpResponse, error) {
	if err := in.check(); err != nil {
		return NoteOpResponse{}, err
	}
	scope := in.Scope
	if in.Op == notebook.OpCopy && scope == "" {
		scope = "lineage"
	}
	bs, leaf, err := s.branches(sid, in.Leaf, scope)
	if err != nil {
		return NoteOpResponse{}, err
	}
	var res notebook.NoteResult
	var rec *notebook.NoteRecord
	switch in.Op {
	case notebook.OpWrite:
		res, rec, err = notebook.WriteNote(bs[0], in.Name, *in.Content)
	case notebook.OpAppend:
		res, rec, err = notebook.AppendNote(bs[0], in.Name, *in.Text)
	case notebook.OpDelete:
		res, rec, err = notebook.DeleteNote(bs[0], in.Name)
	case notebook.OpCopy:
		res, rec, err = notebook.CopyNote(bs, in.Ref, in.Name)
	default:
		err = invalid("op", "op must be one of write, append, delete, copy; not %q", in.Op)
	}
	if err != nil {
		return NoteOpResponse{}, err
	}
	out := NoteOpResponse{Session: sid, Leaf: leaf, Result: res}
	if rec != nil {
		data, err := json.Marshal(rec)
		if err != nil {
			return NoteOpResponse{}, err
		}
		out.Append = &EntryToAppend{CustomType: notebook.NoteType, Data: data}
	}
	return out, nil
}
