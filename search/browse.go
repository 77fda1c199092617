package search

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// Windows returns the context windows of the branch ending at leaf (the
// session's current leaf when empty), and the leaf used.
func (e *Engine) Windows(ctx context.Context, session, leaf string) (string, []journal.Window, error) {
	_, path, leaf, err := e.branch(session, leaf)
	if err != nil {
		return "", nil, err
	}
	return leaf, journal.Windows(path), nil
}

// AllowlistedWindows is Windows for the model's history tool: each
// window's first and last entries and its count are of the entries the
// history allowlist admits (a window whose first entry is a model change
// starts, for the model, at its first message).
func (e *Engine) AllowlistedWindows(ctx context.Context, session, leaf string) (string, []journal.Window, error) {
	_, path, leaf, err := e.branch(session, leaf)
	if err != nil {
		return "", nil, err
	}
	ws := journal.Windows(path)
	for i := range ws {
		w := &ws[i]
		w.FirstEntry, w.LastEntry, w.Entries = "", "", 0
		for _, en := range path[w.Start:w.End] {
			if journal.Classify(en) == journal.Hidden {
				continue
			}
			if w.FirstEntry == "" {
				w.FirstEntry = en.ID
			}
			w.LastEntry = en.ID
			w.Entries++
		}
	}
	return leaf, ws, nil
}

// allowlisted says whether the history allowlist shows m to the model:
// searched entries and listed ones (Pi 1.6's system messages); see
// journal.Classify. Every model-facing route asks it.
func allowlisted(m *store.Meta) bool { return journal.Classify(m.Entry()) != journal.Hidden }

// visibleParent is the nearest ancestor of m that the history allowlist
// admits ("" for none): what an allowlisted item names as its parent, so
// that no hidden entry is named.
func visibleParent(t *store.SessionTree, m *store.Meta) string {
	for p := t.MetaOf(m.ParentID); p != nil; p = t.MetaOf(p.ParentID) {
		if allowlisted(p) {
			return p.ID
		}
		if p.ParentID == "" {
			break
		}
	}
	return ""
}

func (e *Engine) branch(session, leaf string) (*store.SessionTree, []*journal.Entry, string, error) {
	t, err := e.tree(session)
	if err != nil {
		return nil, nil, "", err
	}
	if leaf == "" {
		leaf = t.Leaf()
	}
	if leaf == "" {
		return t, nil, "", nil
	}
	if t.Index(leaf) < 0 {
		return nil, nil, "", notFoundf("leaf", "entry %q is not in session %q", leaf, session)
	}
	path, err := t.Path(leaf)
	return t, path, leaf, err
}

// List returns the entries of a branch (or one of its windows) in order.
func (e *Engine) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	if req.Session == "" {
		return nil, badf("session", "a session id is required")
	}
	if req.Limit < 0 || req.Limit > MaxLimit {
		return nil, badf("limit", "limit %d is out of range 1..%d", req.Limit, MaxLimit)
	}
	if req.Window < 0 {
		return nil, badf("window", "window %d is invalid; windows are numbered from 1", req.Window)
	}
	if req.Allowlisted {
		if err := searchableOnly("types", "type", req.Types, journal.SearchableTypes); err != nil {
			return nil, err
		}
		if err := searchableOnly("roles", "role", req.Roles, append(slices.Clip(journal.SearchableRoles), "system")); err != nil {
			return nil, err
		}
	}
	limit := req.Limit
	if limit == 0 {
		limit = 50
	}
	var t *store.SessionTree
	var entries []*journal.Entry
	var leaf string
	var err error
	if req.AllBranches {
		if req.Leaf != "" {
			return nil, badf("leaf", "allBranches lists every entry; do not give a leaf too")
		}
		t, err = e.tree(req.Session)
		if err != nil {
			return nil, err
		}
		entries = t.Entries
		leaf = t.Leaf()
	} else {
		t, entries, leaf, err = e.branch(req.Session, req.Leaf)
		if err != nil {
			return nil, err
		}
		if req.Window > 0 {
			ws := journal.Windows(entries)
			if req.Window > len(ws) {
				return nil, notFoundf("window", "window %d does not exist: this branch has %d window(s)", req.Window, len(ws))
			}
			w := ws[req.Window-1]
			entries = entries[w.Start:w.End]
		}
	}
	f := filter{types: req.Types, roles: req.Roles}
	if req.AllBranches {
		f.window = req.Window
	}
	var sel []*store.Meta
	for _, en := range entries {
		m := t.Metas[t.Index(en.ID)]
		if m.ID != en.ID {
			continue
		}
		if f.match(m) && (!req.Allowlisted || allowlisted(m)) {
			sel = append(sel, m)
		}
	}
	if req.NewestFirst {
		for l, r := 0, len(sel)-1; l < r; l, r = l+1, r-1 {
			sel[l], sel[r] = sel[r], sel[l]
		}
	}
	qh := queryHash("list", req.Session, leaf, strconv.Itoa(req.Window), strings.Join(req.Types, ","), strings.Join(req.Roles, ","),
		boolS(req.NewestFirst), boolS(req.AllBranches), boolS(req.Allowlisted))
	startAt := 0
	if req.Offset < 0 {
		return nil, badf("offset", "offset %d is negative; items are numbered from 0", req.Offset)
	}
	if req.Offset > 0 && req.Cursor != "" {
		return nil, badf("offset", "give a cursor or an offset, not both")
	}
	if req.Offset > len(sel) {
		return nil, badf("offset", "offset %d is past the end of the list (%d items); start from 0", req.Offset, len(sel))
	}
	startAt = req.Offset
	if req.Cursor != "" {
		pos, err := decodeCursor(req.Cursor, qh)
		if err == errOtherQuery && req.Leaf == "" {
			// The list of the current branch is of the leaf it had; new
			// entries move it.
			return nil, badf("cursor", "cursor belongs to a different list: the filters changed, or new entries moved the session's current leaf since the first page; start again without a cursor, or page a fixed branch by passing the leaf the first page answered with")
		}
		if err != nil {
			return nil, err
		}
		// Compared before the conversion: a forged position of 2^63 or more
		// would turn negative.
		if pos > uint64(len(sel)) {
			return nil, badf("cursor", "cursor points past the end of the list; start again without a cursor")
		}
		startAt = int(pos)
	}
	resp := &ListResponse{Session: req.Session, Leaf: leaf, Total: len(sel), Items: []Item{}}
	labels := t.Labels()
	end := min(startAt+limit, len(sel))
	for _, m := range sel[startAt:end] {
		it := e.item(m, labels)
		if req.Allowlisted {
			it.ParentID = visibleParent(t, m)
		}
		resp.Items = append(resp.Items, it)
	}
	if end < len(sel) {
		resp.Cursor = encodeCursor(qh, uint64(end))
		resp.NextOffset = &end
	}
	return resp, nil
}

func boolS(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (e *Engine) item(m *store.Meta, labels map[string]string) Item {
	it := Item{Entry: m.ID, ParentID: m.ParentID, Type: m.Type, Role: m.Role, CustomType: m.Extra.CustomType,
		ToolName: m.Extra.ToolName, IsError: m.Flags&store.FlagIsError != 0, Timestamp: m.Timestamp, Window: m.Window, Seq: m.Seq}
	if labels != nil {
		it.Label = labels[m.ID]
	}
	raw, err := e.st.Raw(m.Seq)
	if err == nil {
		it.Preview = Preview(m.Entry(), raw)
	}
	return it
}

// Read returns one entry with its neighbours on its branch.
func (e *Engine) Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error) {
	if req.Session == "" {
		return nil, badf("session", "a session id is required")
	}
	if req.Entry == "" {
		return nil, badf("entry", "an entry id is required")
	}
	if req.Context < 0 || req.Context > 50 {
		return nil, badf("context", "context %d is out of range 0..50", req.Context)
	}
	if req.Offset < 0 {
		return nil, badf("offset", "offset %d is negative", req.Offset)
	}
	if req.Length < 0 {
		return nil, badf("length", "length %d is negative", req.Length)
	}
	t, err := e.tree(req.Session)
	if err != nil {
		return nil, err
	}
	i := t.Index(req.Entry)
	if i < 0 {
		return nil, notFoundf("entry", "no entry %q in session %q", req.Entry, req.Session)
	}
	m := t.Metas[i]
	if req.Allowlisted && !allowlisted(m) {
		return nil, badf("entry", "entry %q (%s) is outside the history that can be read back: it holds no searchable text (a command excluded from context, another extension's data, a setting change)", req.Entry, m.Type)
	}
	labels := t.Labels()
	item := func(m *store.Meta) Item {
		it := e.item(m, labels)
		if req.Allowlisted {
			it.ParentID = visibleParent(t, m)
		}
		return it
	}
	resp := &ReadResponse{Item: item(m), Ref: Ref(m.ID)}
	var full string
	length := req.Length
	if req.Raw {
		raw, err := e.st.Raw(m.Seq)
		if err != nil {
			return nil, err
		}
		full = string(raw)
		if length == 0 {
			length = RawPiece
		}
	} else {
		full, err = e.st.Text(m.Seq)
		if err != nil {
			return nil, err
		}
		if full == "" && journal.Classify(m.Entry()) == journal.Listed {
			// A system message has no searchable text; a read shows it rendered.
			raw, err := e.st.Raw(m.Seq)
			if err != nil {
				return nil, err
			}
			full = journal.ListedText(m.Entry(), "", raw)
		}
		if length == 0 {
			length = 20000
		}
	}
	resp.TotalChars = utf8.RuneCountInString(full)
	if req.Offset > resp.TotalChars {
		return nil, badf("offset", "offset %d is past the end (%d characters)", req.Offset, resp.TotalChars)
	}
	start := byteOffset(full, 0, req.Offset)
	end := byteOffset(full, start, length)
	resp.Text, resp.Offset = full[start:end], req.Offset
	if end < len(full) {
		resp.NextOffset = req.Offset + length
	}
	if req.Context > 0 {
		path := e.branchHolding(t, req.Entry)
		for k, en := range path {
			if en.ID != req.Entry {
				continue
			}
			// For the allowlisted history, neighbours outside it are left
			// out: a preview shows a !! command and its output too.
			take := func(m *store.Meta) bool { return !req.Allowlisted || allowlisted(m) }
			for j := max(0, k-req.Context); j < k; j++ {
				if m := t.MetaOf(path[j].ID); take(m) {
					resp.Before = append(resp.Before, item(m))
				}
			}
			for j := k + 1; j < len(path) && j <= k+req.Context; j++ {
				if m := t.MetaOf(path[j].ID); take(m) {
					resp.After = append(resp.After, item(m))
				}
			}
			break
		}
	}
	return resp, nil
}

// branchHolding returns a branch through id: the current branch if it holds
// id, else the branch of the last leaf (in file order) below id.
func (e *Engine) branchHolding(t *store.SessionTree, id string) []*journal.Entry {
	if t.OnCurrentBranch(id) {
		p, _ := t.Path(t.Leaf())
		return p
	}
	ls := t.LeavesOf(id)
	if len(ls) > 0 {
		p, _ := t.Path(ls[len(ls)-1])
		return p
	}
	p, _ := t.Path(id)
	return p
}

// byteOffset advances n characters from byte offset from in s.
func byteOffset(s string, from, n int) int {
	i := from
	for k := 0; k < n && i < len(s); k++ {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i
}

// Sessions lists every session, newest activity first.
func (e *Engine) Sessions(ctx context.Context) ([]SessionSummary, error) {
	infos, err := e.st.Sessions()
	if err != nil {
		return nil, err
	}
	byFile := fileIndex(infos)
	out := make([]SessionSummary, 0, len(infos))
	for _, si := range infos {
		s := summary(si, byFile)
		s.Title = e.Title(si)
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastActivity > out[j].LastActivity })
	return out, nil
}

// MatchedSessions describes the sessions a word search found
// (index.Sessions.Match), in its order, each with its score and the
// stretch that matched; a session no longer stored is left out.
func (e *Engine) MatchedSessions(ctx context.Context, ms []index.SessionMatch) ([]SessionSummary, error) {
	all, err := e.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(all))
	for i, s := range all {
		byID[s.ID] = i
	}
	out := make([]SessionSummary, 0, len(ms))
	for _, m := range ms {
		if i, ok := byID[m.Session]; ok {
			s := all[i]
			s.Score, s.Match, s.MatchField = m.Score, m.Fragment, m.Field
			out = append(out, s)
		}
	}
	return out, nil
}

// Session describes one session, with its leaves.
func (e *Engine) Session(ctx context.Context, id string) (*SessionSummary, error) {
	si, err := e.st.Session(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("session", "no session %q; list sessions to find its id", id)
	}
	if err != nil {
		return nil, err
	}
	infos, err := e.st.Sessions()
	if err != nil {
		return nil, err
	}
	s := summary(si, fileIndex(infos))
	s.Title = e.Title(si)
	t, err := e.st.Tree(id)
	if err != nil {
		return nil, err
	}
	s.Leaves = t.Leaves()
	return &s, nil
}

func summary(si *store.SessionInfo, byFile map[string]string) SessionSummary {
	s := SessionSummary{ID: si.ID, Name: si.Name, Cwd: si.Cwd, File: si.File, Created: si.Created, LastActivity: si.LastActivity,
		Entries: si.Entries, Bytes: si.Bytes, Windows: max(si.LeafWindow, 1), Leaf: si.Leaf, ParentFile: si.ParentSession}
	if si.Entries == 0 {
		s.Windows = 0
	}
	if si.ParentSession != "" {
		s.ParentSession = byFile[filepath.Base(si.ParentSession)]
	}
	return s
}

// fileIndex maps journal file names (base names: a fork names its parent by
// an absolute path that may differ between machines) to session ids.
func fileIndex(infos []*store.SessionInfo) map[string]string {
	m := make(map[string]string, len(infos))
	for _, si := range infos {
		if si.File != "" {
			m[filepath.Base(si.File)] = si.ID
		}
	}
	return m
}

// Preview renders one entry as a single line of at most 120 characters.
func Preview(e *journal.Entry, raw []byte) string {
	var s string
	switch e.Type {
	case "message":
		s = messagePreview(e, raw)
	case "custom":
		s = "custom(" + e.CustomType + ")"
	case "custom_message":
		var r struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &r)
		s = "custom_message(" + e.CustomType + "): " + journal.ContentText(r.Content)
	case "compaction", "branch_summary":
		var r struct {
			Summary string `json:"summary"`
		}
		_ = json.Unmarshal(raw, &r)
		s = e.Type + ": " + r.Summary
	case "thinking_level_change":
		var r struct {
			Level string `json:"thinkingLevel"`
		}
		_ = json.Unmarshal(raw, &r)
		s = "thinking_level_change(" + r.Level + ")"
	case "model_change":
		var r struct {
			Provider string `json:"provider"`
			Model    string `json:"modelId"`
		}
		_ = json.Unmarshal(raw, &r)
		s = "model_change(" + r.Provider + "/" + r.Model + ")"
	case "usage":
		s = usagePreview(raw)
	case "context_edit":
		if e.Searchable {
			s = "context_edit(" + e.TargetID + "): " + contextEditText(raw)
		} else {
			s = "context_edit(" + e.TargetID + "): omitted from the model's context"
		}
	case "label":
		s = "label(" + e.TargetID + "): " + e.Label
	case "session_info":
		s = "session_info: " + e.Name
	default:
		s = e.Type
	}
	return Clip(s, 120)
}

func messagePreview(e *journal.Entry, raw []byte) string {
	var r struct {
		Message journal.Message `json:"message"`
	}
	_ = json.Unmarshal(raw, &r)
	m := r.Message
	switch e.Role {
	case "assistant":
		var blocks []journal.Block
		if json.Unmarshal(m.Content, &blocks) != nil {
			return "assistant: " + journal.ContentText(m.Content)
		}
		var text []string
		var calls []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "toolCall":
				arg := ""
				if vs := journal.StringValues(b.Arguments); len(vs) > 0 {
					arg = vs[0]
				}
				calls = append(calls, b.Name+"("+Clip(oneLine(arg), 60)+")")
			}
		}
		s := "assistant"
		if len(text) > 0 {
			s += ": " + strings.Join(text, " ")
		}
		if len(calls) > 0 {
			if len(text) > 0 {
				s = Clip(oneLine(s), 60)
			}
			s += " → " + strings.Join(calls, ", ")
		}
		return s
	case "toolResult":
		s := "toolResult(" + m.ToolName + ")"
		if m.IsError {
			s += " error"
		}
		return s + ": " + journal.ContentText(m.Content)
	case "bashExecution":
		return "bashExecution: $ " + m.Command + " → " + m.Output
	case "user":
		return "user: " + journal.ContentText(m.Content)
	case "system":
		return systemPreview(raw)
	case "custom":
		return "custom(" + m.CustomType + "): " + journal.ContentText(m.Content)
	case "":
		return "message"
	}
	return e.Role + ": " + journal.ContentText(m.Content)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip folds whitespace (newlines and tabs too) into single spaces and
// cuts s to n characters, marking a cut with "…": a preview, or a cell of
// a table printed one row a line.
func Clip(s string, n int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := byteOffset(s, 0, n-1)
	return s[:i] + "…"
}
