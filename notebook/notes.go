package notebook

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pi-history/pi-history/journal"
)

// Named-note record format and limits (context_notes of the
// context-management design; docs/spec-notes.md, "Named notes"). Characters
// are Unicode code points.
const (
	NoteType        = "note-context/note" // customType of named-note records
	NoteVersion     = 1                   // the "version" written in named-note records
	MaxNotes        = 128                 // notes per branch
	MaxNoteNameLen  = 64                  // characters in a note name
	MaxNoteChars    = 64000               // characters of note content
	PageSize        = 20                  // list entries or search matches per page
	RefPrefix       = "context:"          // references read context:<session>:<entry>
	previewRadius   = 40                  // characters of context either side of a search match
	maxPreviewChars = 120
)

// Note operations, as recorded in NoteRecord.Op.
const (
	OpWrite  = "write"
	OpAppend = "append"
	OpDelete = "delete"
	OpCopy   = "copy"
)

// NoteRecord is the data of one named-note journal entry (customType
// NoteType): one operation. Replaying a path's records in order rebuilds
// its notes.
type NoteRecord struct {
	Version int    `json:"version"`
	Op      string `json:"op"`                // OpWrite, OpAppend, OpDelete or OpCopy
	Name    string `json:"name"`              // the note operated on
	Content string `json:"content,omitempty"` // write and copy: the whole new content
	Text    string `json:"text,omitempty"`    // append: the text appended (the separator is implied)
	Source  string `json:"source,omitempty"`  // copy: the reference copied from
}

// Branch is one session's selected branch, for operations that may span
// sessions (lineage scope). Path is root first, with Raw populated.
type Branch struct {
	Session string // session id, used in references
	Agent   string // owning agent id ("root", a child id), or "" when not known
	Path    []*journal.Entry
}

// Note is one named note as of a branch's leaf.
type Note struct {
	Name       string `json:"name"`
	Content    string `json:"content"`
	Characters int    `json:"characters"`
	EntryID    string `json:"entryId"`   // the record that last changed the note
	UpdatedAt  string `json:"updatedAt"` // that record's timestamp
	Ref        string `json:"ref"`       // context:<session>:<entry>
	Session    string `json:"session,omitempty"`
	Agent      string `json:"agent,omitempty"`
}

// Ref formats a stable note reference.
func Ref(session, entry string) string { return RefPrefix + session + ":" + entry }

// ParseRef splits a reference context:<session>:<entry>.
func ParseRef(ref string) (session, entry string, err error) {
	rest, ok := strings.CutPrefix(ref, RefPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 || i == len(rest)-1 {
		return "", "", &InvalidError{Field: "ref " + strconv.Quote(ref), Reason: "not a reference",
			Hint: "use a ref as given by list or search: context:<session>:<entry>"}
	}
	return rest[:i], rest[i+1:], nil
}

// parseNoteRecord reads a named-note record, or reports false for one that
// is malformed (it is then ignored on replay).
func parseNoteRecord(e *journal.Entry) (NoteRecord, bool) {
	data, ok := customData(e, NoteType)
	if !ok {
		return NoteRecord{}, false
	}
	var r NoteRecord
	if json.Unmarshal(data, &r) != nil || r.Name == "" {
		return NoteRecord{}, false
	}
	switch r.Op {
	case OpWrite, OpAppend, OpDelete, OpCopy:
		return r, true
	}
	return NoteRecord{}, false
}

// Notes rebuilds the named notes of a branch by replaying the note records
// on its path, and returns them sorted by name. Malformed records are
// ignored.
func Notes(b Branch) []Note {
	m := noteMap(b)
	out := make([]Note, 0, len(m))
	for _, n := range m {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func noteMap(b Branch) map[string]*Note {
	m := map[string]*Note{}
	for _, e := range b.Path {
		r, ok := parseNoteRecord(e)
		if !ok {
			continue
		}
		var content string
		switch r.Op {
		case OpDelete:
			delete(m, r.Name)
			continue
		case OpWrite, OpCopy:
			content = r.Content
		case OpAppend:
			if old, ok := m[r.Name]; ok {
				content = joinAppend(old.Content, r.Text)
			} else {
				content = r.Text
			}
		}
		m[r.Name] = &Note{Name: r.Name, Content: content, Characters: utf8.RuneCountInString(content),
			EntryID: e.ID, UpdatedAt: e.Timestamp, Ref: Ref(b.Session, e.ID), Session: b.Session, Agent: b.Agent}
	}
	return m
}

// joinAppend appends text to a note: one newline goes between them when the
// note is non-empty and does not already end with one.
func joinAppend(content, text string) string {
	if content != "" && !strings.HasSuffix(content, "\n") {
		return content + "\n" + text
	}
	return content + text
}

// NoteResult is what a successful named-note change reports.
type NoteResult struct {
	Action     string `json:"action"` // OpWrite, OpAppend, OpDelete or OpCopy
	Name       string `json:"name"`
	Saved      bool   `json:"saved"`
	Unchanged  bool   `json:"unchanged,omitempty"` // nothing to append: no record
	Characters int    `json:"characters"`          // the note's length afterwards (0 after delete)
}

// checkNoteName says why name cannot name a note, or returns nil.
func checkNoteName(name string) error {
	bad := func(reason string) error {
		return &InvalidError{Field: "note name " + strconv.Quote(name), Reason: reason,
			Hint: "use a label of 1–" + strconv.Itoa(MaxNoteNameLen) + " characters without control characters"}
	}
	if !utf8.ValidString(name) {
		return bad("not valid UTF-8")
	}
	n := utf8.RuneCountInString(name)
	if n == 0 {
		return bad("is empty")
	}
	if n > MaxNoteNameLen {
		return bad("is " + strconv.Itoa(n) + " characters; at most " + strconv.Itoa(MaxNoteNameLen))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return bad("contains a control character")
		}
	}
	return nil
}

func checkNoteContent(name, content, field string) error {
	if !utf8.ValidString(content) {
		return &InvalidError{Field: field + " of note " + strconv.Quote(name), Reason: "not valid UTF-8",
			Hint: "send the text as UTF-8"}
	}
	if n := utf8.RuneCountInString(content); n > MaxNoteChars {
		return &LimitError{Subject: "note " + strconv.Quote(name), Excess: []Excess{{What: "characters", Limit: MaxNoteChars, Actual: n}}}
	}
	return nil
}

// checkRoom fails when a new note would exceed MaxNotes.
func checkRoom(m map[string]*Note, name string) error {
	if _, ok := m[name]; !ok && len(m) >= MaxNotes {
		return &LimitError{Subject: "notes on this branch", Excess: []Excess{{What: "notes", Limit: MaxNotes, Actual: len(m) + 1}}}
	}
	return nil
}

// WriteNote validates replacing (or creating) note name with content and
// returns the record to append (customType NoteType).
func WriteNote(b Branch, name, content string) (NoteResult, *NoteRecord, error) {
	if err := checkNoteName(name); err != nil {
		return NoteResult{}, nil, err
	}
	if err := checkNoteContent(name, content, "content"); err != nil {
		return NoteResult{}, nil, err
	}
	if err := checkRoom(noteMap(b), name); err != nil {
		return NoteResult{}, nil, err
	}
	rec := &NoteRecord{Version: NoteVersion, Op: OpWrite, Name: name, Content: content}
	return NoteResult{Action: OpWrite, Name: name, Saved: true, Characters: utf8.RuneCountInString(content)}, rec, nil
}

// AppendNote validates appending text to note name (creating it when
// absent); the limit applies to the joined content, separator included.
// Appending "" changes nothing and returns no record.
func AppendNote(b Branch, name, text string) (NoteResult, *NoteRecord, error) {
	if err := checkNoteName(name); err != nil {
		return NoteResult{}, nil, err
	}
	if !utf8.ValidString(text) {
		return NoteResult{}, nil, checkNoteContent(name, text, "text")
	}
	m := noteMap(b)
	old := ""
	if n, ok := m[name]; ok {
		old = n.Content
	}
	if text == "" {
		return NoteResult{Action: OpAppend, Name: name, Saved: true, Unchanged: true, Characters: utf8.RuneCountInString(old)}, nil, nil
	}
	joined := joinAppend(old, text)
	if err := checkNoteContent(name, joined, "content"); err != nil {
		return NoteResult{}, nil, err
	}
	if err := checkRoom(m, name); err != nil {
		return NoteResult{}, nil, err
	}
	rec := &NoteRecord{Version: NoteVersion, Op: OpAppend, Name: name, Text: text}
	return NoteResult{Action: OpAppend, Name: name, Saved: true, Characters: utf8.RuneCountInString(joined)}, rec, nil
}

// DeleteNote validates deleting note name, which must exist.
func DeleteNote(b Branch, name string) (NoteResult, *NoteRecord, error) {
	if err := checkNoteName(name); err != nil {
		return NoteResult{}, nil, err
	}
	if _, ok := noteMap(b)[name]; !ok {
		return NoteResult{}, nil, &NotFoundError{What: "note " + strconv.Quote(name), Hint: "list notes to see their names"}
	}
	return NoteResult{Action: OpDelete, Name: name, Saved: true}, &NoteRecord{Version: NoteVersion, Op: OpDelete, Name: name}, nil
}

// CopyNote validates copying the note a reference points to (in any of
// branches) into branches[0], the caller's own branch, under name (the
// source's name when ""). The copy is an unlinked snapshot; it fails rather
// than overwrite an existing note.
func CopyNote(branches []Branch, ref, name string) (NoteResult, *NoteRecord, error) {
	if len(branches) == 0 {
		return NoteResult{}, nil, &InvalidError{Field: "branches", Reason: "no branch given", Hint: "pass the caller's branch first"}
	}
	src, err := resolveRef(branches, ref)
	if err != nil {
		return NoteResult{}, nil, err
	}
	if name == "" {
		name = src.Name
	}
	if err := checkNoteName(name); err != nil {
		return NoteResult{}, nil, err
	}
	m := noteMap(branches[0])
	if _, ok := m[name]; ok {
		return NoteResult{}, nil, &InvalidError{Field: "note name " + strconv.Quote(name), Reason: "a note of that name already exists on this branch",
			Hint: "copy under another name, or delete the existing note first"}
	}
	if err := checkRoom(m, name); err != nil {
		return NoteResult{}, nil, err
	}
	rec := &NoteRecord{Version: NoteVersion, Op: OpCopy, Name: name, Content: src.Content, Source: ref}
	return NoteResult{Action: OpCopy, Name: name, Saved: true, Characters: src.Characters}, rec, nil
}

// resolveRef finds the current version of the note a reference names: the
// reference's entry must be a note record on the path of the branch of its
// session, and the note must still exist there.
func resolveRef(branches []Branch, ref string) (Note, error) {
	session, entry, err := ParseRef(ref)
	if err != nil {
		return Note{}, err
	}
	notFound := &NotFoundError{What: "reference " + strconv.Quote(ref),
		Hint: "it is not on a branch in scope; list or search notes for a fresh reference"}
	for _, b := range branches {
		if b.Session != session {
			continue
		}
		for _, e := range b.Path {
			if e == nil || e.ID != entry {
				continue
			}
			r, ok := parseNoteRecord(e)
			if !ok {
				return Note{}, notFound
			}
			if n, ok := noteMap(b)[r.Name]; ok {
				return *n, nil
			}
			return Note{}, &NotFoundError{What: "note " + strconv.Quote(r.Name) + " (from " + ref + ")",
				Hint: "it was deleted since; list notes to see what remains"}
		}
	}
	return Note{}, notFound
}

// NoteText is a note read, whole or as a character range.
type NoteText struct {
	Name            string `json:"name"`
	Ref             string `json:"ref"`
	Content         string `json:"content"`
	Offset          int    `json:"offset"`
	TotalCharacters int    `json:"totalCharacters"`
	NextOffset      *int   `json:"nextOffset"` // nil when the read reaches the end
	Session         string `json:"session,omitempty"`
	Agent           string `json:"agent,omitempty"`
}

// ReadNote reads note name of branch b: characters [offset, offset+limit),
// or to the end when limit ≤ 0.
func ReadNote(b Branch, name string, offset, limit int) (NoteText, error) {
	if err := checkNoteName(name); err != nil {
		return NoteText{}, err
	}
	n, ok := noteMap(b)[name]
	if !ok {
		return NoteText{}, &NotFoundError{What: "note " + strconv.Quote(name), Hint: "list notes to see their names"}
	}
	return sliceNote(*n, offset, limit)
}

// ReadNoteRef reads the current version of the note a reference names, in
// any of branches (lineage scope), as ReadNote does.
func ReadNoteRef(branches []Branch, ref string, offset, limit int) (NoteText, error) {
	n, err := resolveRef(branches, ref)
	if err != nil {
		return NoteText{}, err
	}
	return sliceNote(n, offset, limit)
}

func sliceNote(n Note, offset, limit int) (NoteText, error) {
	if offset < 0 || offset > n.Characters {
		return NoteText{}, &InvalidError{Field: "offset", Reason: strconv.Itoa(offset) + " is outside the note's " + strconv.Itoa(n.Characters) + " characters",
			Hint: "use an offset from 0 to the note's length"}
	}
	runes := []rune(n.Content)
	end := len(runes)
	if limit > 0 && limit < end-offset { // not offset+limit: a huge limit overflows
		end = offset + limit
	}
	t := NoteText{Name: n.Name, Ref: n.Ref, Content: string(runes[offset:end]), Offset: offset,
		TotalCharacters: n.Characters, Session: n.Session, Agent: n.Agent}
	if end < len(runes) {
		t.NextOffset = &end
	}
	return t, nil
}

// NoteInfo is one line of a note listing.
type NoteInfo struct {
	Name       string `json:"name"`
	UpdatedAt  string `json:"updatedAt"`
	Ref        string `json:"ref"`
	Characters int    `json:"characters"`
	Session    string `json:"session,omitempty"`
	Agent      string `json:"agent,omitempty"`
}

// NoteList is one page of a listing.
type NoteList struct {
	Notes      []NoteInfo `json:"notes"`
	Total      int        `json:"total"`
	NextOffset *int       `json:"nextOffset"` // nil on the last page
}

// ListNotes lists the notes of branches — the caller's own first, then any
// others in scope — each branch's notes by name, PageSize per page from
// offset.
func ListNotes(branches []Branch, offset int) NoteList {
	var all []NoteInfo
	for _, b := range branches {
		for _, n := range Notes(b) {
			all = append(all, NoteInfo{Name: n.Name, UpdatedAt: n.UpdatedAt, Ref: n.Ref, Characters: n.Characters,
				Session: n.Session, Agent: n.Agent})
		}
	}
	page, next := pageOf(len(all), offset)
	return NoteList{Notes: append([]NoteInfo{}, all[page[0]:page[1]]...), Total: len(all), NextOffset: next}
}

// pageOf returns the [start, end) bounds of the page at offset and the next
// page's offset.
func pageOf(total, offset int) ([2]int, *int) {
	offset = max(0, min(offset, total))
	end := min(offset+PageSize, total)
	if end < total {
		return [2]int{offset, end}, &end
	}
	return [2]int{offset, end}, nil
}

// Match is one occurrence of a search query in a note.
type Match struct {
	Ref     string `json:"ref"`
	Name    string `json:"name"`
	Offset  int    `json:"offset"`  // character offset of the match in the note
	Preview string `json:"preview"` // one line around the match
	Session string `json:"session,omitempty"`
	Agent   string `json:"agent,omitempty"`
}

// SearchPage is one page of search matches.
type SearchPage struct {
	Matches    []Match `json:"matches"`
	Total      int     `json:"total"`
	NextOffset *int    `json:"nextOffset"` // nil on the last page
}

// SearchNotes finds every occurrence of query (a literal, case-sensitive
// substring; matches do not overlap) in the content of the notes of
// branches, in listing order, PageSize per page from offset (a count of
// matches to skip).
func SearchNotes(branches []Branch, query string, offset int) (SearchPage, error) {
	if query == "" || !utf8.ValidString(query) {
		return SearchPage{}, &InvalidError{Field: "query", Reason: "empty or not valid UTF-8", Hint: "search for a non-empty literal string"}
	}
	var all []Match
	for _, b := range branches {
		for _, n := range Notes(b) {
			at, chars := 0, 0
			for {
				i := strings.Index(n.Content[at:], query)
				if i < 0 {
					break
				}
				chars += utf8.RuneCountInString(n.Content[at : at+i])
				start := at + i
				all = append(all, Match{Ref: n.Ref, Name: n.Name, Offset: chars, Preview: preview(n.Content, start, len(query)),
					Session: n.Session, Agent: n.Agent})
				chars += utf8.RuneCountInString(query)
				at = start + len(query)
			}
		}
	}
	page, next := pageOf(len(all), offset)
	return SearchPage{Matches: append([]Match{}, all[page[0]:page[1]]...), Total: len(all), NextOffset: next}, nil
}

// preview is the text around content[start:start+n] on one line: up to
// previewRadius characters either side, line breaks and tabs as spaces, at
// most maxPreviewChars characters, with "…" where it was cut.
func preview(content string, start, n int) string {
	from := start
	for k := 0; k < previewRadius && from > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(content[:from])
		from -= size
	}
	to := start + n
	for k := 0; k < previewRadius && to < len(content); k++ {
		_, size := utf8.DecodeRuneInString(content[to:])
		to += size
	}
	var b bytes.Buffer
	if from > 0 {
		b.WriteString("…")
	}
	for _, r := range content[from:to] {
		if unicode.IsSpace(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	if to < len(content) {
		b.WriteString("…")
	}
	runes := []rune(b.String())
	if len(runes) > maxPreviewChars {
		runes = append(runes[:maxPreviewChars-1], '…')
	}
	return string(runes)
}
