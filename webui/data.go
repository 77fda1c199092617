package webui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/internal/problem"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

var timeZero time.Time

// Limits of the data routes.
const (
	defaultPage   = 100
	maxPage       = 500
	maxRawBytes   = 4 << 20 // an entry's original line is sent whole up to this size
	pageBytes     = 8 << 20 // a page stops short of its limit once its lines reach this (always one entry)
	omittedText   = 20000   // characters of searchable text sent instead of a larger line
	summaryChars  = 600     // characters of a window's opening summary in the window list
	branchSummary = 600     // characters of a branch summary in the branch tree
)

// EntryItem is one entry of a window page, with its original JSON line.
type EntryItem struct {
	Index      int    `json:"index"` // position in its window, from 0
	Entry      string `json:"entry"`
	ParentID   string `json:"parentId,omitempty"`
	Type       string `json:"type"`
	Role       string `json:"role,omitempty"`
	CustomType string `json:"customType,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	Timestamp  string `json:"timestamp"`
	Label      string `json:"label,omitempty"`
	Seq        uint64 `json:"seq"`
	Raw        string `json:"raw,omitempty"` // the journal line exactly as written (invalid UTF-8 replaced)
	RawBytes   int    `json:"rawBytes"`
	Omitted    bool   `json:"omitted,omitempty"` // the line is larger than 4 MiB: Text holds its searchable text instead
	Text       string `json:"text,omitempty"`
}

// WindowInfo is one context window of a branch with the start of its
// opening summary (the compaction or rollover that started it).
type WindowInfo struct {
	journal.Window
	Summary        string `json:"summary,omitempty"`
	SummaryClipped bool   `json:"summaryClipped,omitempty"`
}

// EntriesResponse is GET /ui/data/sessions/{id}/entries.
type EntriesResponse struct {
	Session     string       `json:"session"`
	Leaf        string       `json:"leaf"` // the branch shown
	CurrentLeaf string       `json:"currentLeaf"`
	Windows     []WindowInfo `json:"windows"`
	Window      int          `json:"window"` // the window of Items (0 when the branch is empty)
	From        int          `json:"from"`   // index of the first item in the window
	Total       int          `json:"total"`  // entries in the window
	Items       []EntryItem  `json:"items"`
	Focus       string       `json:"focus,omitempty"` // the entry asked for with entry=
	LastSeq     uint64       `json:"lastSeq"`
}

// fail answers err with the problem document its kind calls for, as the
// API's routes do; an error of no kind is logged and answered with a 500
// that reveals nothing.
func (u *ui) fail(w http.ResponseWriter, err error) {
	d, ok := problem.Of(err)
	if !ok {
		u.o.Log.Error("webui: data", "err", err)
	}
	problem.Write(w, d)
}

// dataOp names the web UI's data reads in their errors.
const dataOp = "web UI data"

// bad is a refused parameter.
func bad(msg string) error { return &pihistory.Error{Op: dataOp, Kind: pihistory.Invalid, Msg: msg} }

// missing is something asked for that is not stored.
func missing(msg string) error {
	return &pihistory.Error{Op: dataOp, Kind: pihistory.NotFound, Msg: msg}
}

// onlyParams refuses a query parameter not in known, or given twice, as
// the /v1 routes do: a misspelt or repeated one would be ignored (or its
// first value taken), and the answer would not be the one asked for.
func onlyParams(r *http.Request, known ...string) error {
	for k, vs := range r.URL.Query() {
		if !slices.Contains(known, k) {
			return bad(fmt.Sprintf("unknown parameter %q (known: %s)", k, strings.Join(known, ", ")))
		}
		if len(vs) > 1 {
			return bad(fmt.Sprintf("parameter %q is given %d times; give it once", k, len(vs)))
		}
	}
	return nil
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, bad(name + ": want an integer in " + strconv.Itoa(lo) + ".." + strconv.Itoa(hi))
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// tree is a session's tree; an unknown session is the resolver's NotFound
// (see search.Engine.Branch).
func (u *ui) tree(id string) (*store.SessionTree, error) { return u.o.Engine.Tree(id) }

// holding returns a leaf whose branch holds id: the current leaf if it does,
// else the last leaf (in file order) below id, else id itself.
func holding(t *store.SessionTree, id string) string {
	if t.OnCurrentBranch(id) {
		return t.Leaf()
	}
	if ls := t.LeavesOf(id); len(ls) > 0 {
		return ls[len(ls)-1]
	}
	return id
}

// entries serves a page of one window of a branch. Parameters: leaf (default
// the current one), window (default the last), from and limit (a page by
// position in the window), to and limit (the page that ends just before
// position to: what "Load earlier" asks for), or entry (the page around
// that entry, with before= entries ahead of it; leaf then defaults to a
// branch holding it). A page holds fewer than limit entries when their
// lines reach pageBytes: a window of screenshots (a few MB of base64
// each) would otherwise make the server build, and the page read, answers
// of hundreds of megabytes. The answer's from and its items say what it
// holds.
func (u *ui) entries(w http.ResponseWriter, r *http.Request) {
	resp, err := u.entriesPage(r)
	if err != nil {
		u.fail(w, err)
		return
	}
	writeJSON(w, resp)
}

func (u *ui) entriesPage(r *http.Request) (*EntriesResponse, error) {
	if err := onlyParams(r, "limit", "from", "to", "window", "before", "leaf", "entry"); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	sid := r.PathValue("id")
	limit, err := intParam(r, "limit", defaultPage, 1, maxPage)
	if err != nil {
		return nil, err
	}
	from, err := intParam(r, "from", 0, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	wn, err := intParam(r, "window", 0, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	before, err := intParam(r, "before", 5, 0, maxPage)
	if err != nil {
		return nil, err
	}
	to, err := intParam(r, "to", -1, 0, 1<<30)
	if err != nil {
		return nil, err
	}
	if to >= 0 && (q.Has("from") || q.Has("entry")) {
		return nil, bad("to: give either from, to or entry, not two of them")
	}
	st := u.o.Store
	lastSeq := st.LastSeq()
	t, err := u.tree(sid)
	if err != nil {
		return nil, err
	}
	leaf, focus := q.Get("leaf"), q.Get("entry")
	if focus != "" && t.Index(focus) < 0 {
		return nil, missing("entry " + strconv.Quote(focus) + " is not in session " + strconv.Quote(sid))
	}
	if leaf == "" && focus != "" {
		leaf = holding(t, focus)
	}
	bv, err := u.branchOf(sid, leaf)
	if err != nil {
		return nil, err
	}
	if _, ok := bv.pos[focus]; focus != "" && !ok {
		// The entry is on another branch: show one that holds it.
		if bv, err = u.branchOf(sid, holding(bv.tree, focus)); err != nil {
			return nil, err
		}
	}
	t = bv.tree
	resp := &EntriesResponse{Session: sid, Leaf: bv.leaf, CurrentLeaf: t.Leaf(), Windows: []WindowInfo{}, Items: []EntryItem{}, LastSeq: lastSeq}
	if bv.leaf == "" {
		return resp, nil
	}
	path, ws := bv.path, bv.windows
	resp.Windows = bv.infos
	if len(ws) == 0 {
		return resp, nil
	}
	focusAt := -1
	if focus != "" {
		pos := bv.pos[focus]
		wn = bv.windowOf[pos]
		focusAt = pos - ws[wn-1].Start
		resp.Focus = focus
	} else if wn == 0 {
		wn = len(ws)
	}
	if wn > len(ws) {
		return nil, missing("window " + strconv.Itoa(wn) + " does not exist: this branch has " + strconv.Itoa(len(ws)) + " window(s)")
	}
	win := ws[wn-1]
	ents := path[win.Start:win.End]
	size := func(i int) int64 {
		if m := t.MetaOf(ents[i].ID); m != nil && m.RawLen <= maxRawBytes {
			return int64(m.RawLen)
		}
		return 4 * omittedText // the text sent instead, at most
	}
	var end int
	switch {
	case focusAt >= 0:
		resp.From, end = pageAround(focusAt, before, limit, len(ents), size)
	case to >= 0:
		resp.From, end = pageBefore(min(to, len(ents)), limit, size)
	default:
		resp.From = min(from, len(ents))
		_, end = pageAround(resp.From, 0, limit, len(ents), size)
	}
	resp.Window, resp.Total = wn, len(ents)
	labels := bv.labels
	for i := resp.From; i < end; i++ {
		m := t.MetaOf(ents[i].ID)
		if m == nil {
			continue
		}
		it := EntryItem{Index: i, Entry: m.ID, ParentID: m.ParentID, Type: m.Type, Role: m.Role, CustomType: m.Extra.CustomType,
			ToolName: m.Extra.ToolName, IsError: m.Flags&store.FlagIsError != 0, Timestamp: m.Timestamp, Label: labels[m.ID],
			Seq: m.Seq, RawBytes: m.RawLen}
		if m.RawLen > maxRawBytes {
			it.Omitted = true
			txt, err := st.Text(m.Seq)
			if err != nil {
				return nil, err
			}
			it.Text, _ = clipRunes(txt, omittedText)
		} else {
			raw, err := st.Raw(m.Seq)
			if err != nil {
				return nil, err
			}
			it.Raw = string(raw)
		}
		resp.Items = append(resp.Items, it)
	}
	return resp, nil
}

// pageAround chooses the page [first, last) of a window of n entries that
// holds entry at (when at < n) and up to before entries ahead of it, then
// what follows, at most limit entries in all, and stops adding entries
// once their lines (size) would pass pageBytes; at itself is always in.
func pageAround(at, before, limit, n int, size func(int) int64) (first, last int) {
	if at >= n {
		return n, n
	}
	first, last = at, at+1
	used := size(at)
	for first > 0 && at-first < before && last-first < limit && used+size(first-1) <= pageBytes {
		first--
		used += size(first)
	}
	for last < n && last-first < limit && used+size(last) <= pageBytes {
		used += size(last)
		last++
	}
	return first, last
}

// pageBefore chooses the page [first, to) of at most limit entries that
// ends just before to, by the same budget as pageAround (the entry before
// to is always in).
func pageBefore(to, limit int, size func(int) int64) (first, last int) {
	if to == 0 {
		return 0, 0
	}
	first = to - 1
	used := size(first)
	for first > 0 && to-first < limit && used+size(first-1) <= pageBytes {
		first--
		used += size(first)
	}
	return first, to
}

// branchView is what every page of one branch needs, computed once per
// version of the session's tree.
type branchView struct {
	tree     *store.SessionTree
	leaf     string // the leaf the branch ends at ("" for a session without entries)
	path     []*journal.Entry
	pos      map[string]int // entry id → index in path
	windows  []journal.Window
	windowOf []int
	infos    []WindowInfo
	labels   map[string]string
}

const branchCacheSize = 16

// branchOf returns the view of the branch ending at leaf (the current one
// when ""), resolved by the one resolver (search.Engine.Branch), from the
// cache when the session's tree has not changed since it was made.
func (u *ui) branchOf(sid, leaf string) (*branchView, error) {
	t, path, leaf, err := u.o.Engine.Branch(sid, leaf)
	if err != nil {
		return nil, err
	}
	key := sid + "\x00" + leaf
	u.bmu.Lock()
	bv := u.bcache[key]
	u.bmu.Unlock()
	if bv != nil && bv.tree == t {
		return bv, nil
	}
	bv = &branchView{tree: t, leaf: leaf, path: path, pos: make(map[string]int, len(path)), windows: journal.Windows(path),
		windowOf: journal.WindowOf(path), infos: []WindowInfo{}, labels: t.Labels()}
	for i, e := range path {
		bv.pos[e.ID] = i
	}
	for _, win := range bv.windows {
		wi := WindowInfo{Window: win}
		if win.CompactionID != "" {
			if m := t.MetaOf(win.CompactionID); m != nil {
				txt, err := u.o.Store.Text(m.Seq)
				if err != nil {
					return nil, err
				}
				wi.Summary, wi.SummaryClipped = clipRunes(txt, summaryChars)
			}
		}
		bv.infos = append(bv.infos, wi)
	}
	u.bmu.Lock()
	if u.bcache == nil || len(u.bcache) >= branchCacheSize {
		u.bcache = map[string]*branchView{}
	}
	u.bcache[key] = bv
	u.bmu.Unlock()
	return bv, nil
}

func clipRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, k := 0, 0
	for k < n && i < len(s) {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
		k++
	}
	return s[:i] + "…", true
}

// BranchNode is a fork point or a leaf of a session's tree; the segment of
// entries from its parent node (exclusive) to it (inclusive) is summarised.
type BranchNode struct {
	Kind        string        `json:"kind"`  // "fork" or "leaf"
	Entry       string        `json:"entry"` // the fork point or the leaf
	Start       string        `json:"start"` // first entry of the segment
	Depth       int           `json:"depth"` // entries from the root through this one
	Segment     int           `json:"segment"`
	Timestamp   string        `json:"timestamp"`
	Preview     string        `json:"preview"`
	Current     bool          `json:"current"`               // on the current branch
	CurrentLeaf bool          `json:"currentLeaf,omitempty"` // the current leaf itself
	Labels      []LabelRef    `json:"labels,omitempty"`
	Summaries   []SummaryRef  `json:"summaries,omitempty"` // branch summaries in the segment
	Children    []*BranchNode `json:"children,omitempty"`
}

// LabelRef is a labelled entry.
type LabelRef struct {
	Entry string `json:"entry"`
	Label string `json:"label"`
}

// SummaryRef is a branch_summary entry with the start of its text.
type SummaryRef struct {
	Entry   string `json:"entry"`
	Text    string `json:"text"`
	Clipped bool   `json:"clipped,omitempty"`
}

// BranchesResponse is GET /ui/data/sessions/{id}/branches.
type BranchesResponse struct {
	Session     string        `json:"session"`
	CurrentLeaf string        `json:"currentLeaf"`
	Leaves      int           `json:"leaves"`
	Entries     int           `json:"entries"`
	Roots       []*BranchNode `json:"roots"`
}

func (u *ui) branches(w http.ResponseWriter, r *http.Request) {
	resp, err := u.branchTree(r.PathValue("id"))
	if err != nil {
		u.fail(w, err)
		return
	}
	writeJSON(w, resp)
}

func (u *ui) branchTree(sid string) (*BranchesResponse, error) {
	st := u.o.Store
	t, err := u.tree(sid)
	if err != nil {
		return nil, err
	}
	kids := map[string][]string{}
	var roots []string
	for i, e := range t.Entries {
		if t.Index(e.ID) != i {
			continue // shadowed duplicate id
		}
		if e.ParentID != "" && e.ParentID != e.ID && t.Index(e.ParentID) >= 0 {
			kids[e.ParentID] = append(kids[e.ParentID], e.ID)
		} else {
			roots = append(roots, e.ID)
		}
	}
	labels := t.Labels()
	resp := &BranchesResponse{Session: sid, CurrentLeaf: t.Leaf(), Leaves: len(t.Leaves()), Entries: t.Len(), Roots: []*BranchNode{}}
	type job struct {
		start  string
		depth  int
		parent *BranchNode
	}
	var stack []job
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, job{start: roots[i]})
	}
	seen := map[string]bool{}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &BranchNode{Start: j.start}
		cur := j.start
		for {
			seen[cur] = true
			n.Segment++
			if l := labels[cur]; l != "" {
				n.Labels = append(n.Labels, LabelRef{cur, l})
			}
			if m := t.MetaOf(cur); m != nil && m.Type == "branch_summary" {
				txt, err := st.Text(m.Seq)
				if err != nil {
					return nil, err
				}
				s := SummaryRef{Entry: cur}
				s.Text, s.Clipped = clipRunes(txt, branchSummary)
				n.Summaries = append(n.Summaries, s)
			}
			k := kids[cur]
			if len(k) == 1 && !seen[k[0]] {
				cur = k[0]
				continue
			}
			break
		}
		n.Entry, n.Depth = cur, j.depth+n.Segment
		n.Kind = "leaf"
		if len(kids[cur]) > 0 {
			n.Kind = "fork"
		}
		n.Current = t.OnCurrentBranch(cur)
		n.CurrentLeaf = cur == resp.CurrentLeaf
		if m := t.MetaOf(cur); m != nil {
			n.Timestamp = m.Timestamp
			if raw, err := st.Raw(m.Seq); err == nil {
				n.Preview = search.Preview(m.Entry(), raw)
			}
		}
		if j.parent == nil {
			resp.Roots = append(resp.Roots, n)
		} else {
			j.parent.Children = append(j.parent.Children, n)
		}
		k := kids[cur]
		for i := len(k) - 1; i >= 0; i-- {
			if !seen[k[i]] {
				stack = append(stack, job{start: k[i], depth: n.Depth, parent: n})
			}
		}
	}
	return resp, nil
}

// RevisionInfo is one notebook revision with its sections' text.
type RevisionInfo struct {
	notebook.Revision
	Content []journal.Section `json:"content"`
}

// NotebookResponse is GET /ui/data/sessions/{id}/notebook.
type NotebookResponse struct {
	Session   string            `json:"session"`
	Leaf      string            `json:"leaf"`
	Notebook  notebook.State    `json:"notebook"`
	Sections  []journal.Section `json:"sections"` // the notebook's sections in order
	Revisions []RevisionInfo    `json:"revisions"`
	Notes     []notebook.Note   `json:"notes"`
}

func (u *ui) notebook(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r, "leaf"); err != nil {
		u.fail(w, err)
		return
	}
	resp, err := u.notebookOf(r.PathValue("id"), r.URL.Query().Get("leaf"))
	if err != nil {
		u.fail(w, err)
		return
	}
	writeJSON(w, resp)
}

func (u *ui) notebookOf(sid, leaf string) (*NotebookResponse, error) {
	st := u.o.Store
	t, path, leaf, err := u.o.Engine.Branch(sid, leaf)
	if err != nil {
		return nil, err
	}
	resp := &NotebookResponse{Session: sid, Leaf: leaf, Sections: []journal.Section{}, Revisions: []RevisionInfo{}, Notes: []notebook.Note{}}
	if leaf == "" {
		resp.Notebook = notebook.Read(nil)
		return resp, nil
	}
	// The notebook package reads the raw lines of its own custom entries.
	full := make([]*journal.Entry, len(path))
	raws := map[string][]byte{}
	for i, e := range path {
		full[i] = e
		if e.Type != "custom" || (e.CustomType != notebook.NotebookType && e.CustomType != notebook.NoteType) {
			continue
		}
		m := t.MetaOf(e.ID)
		if m == nil {
			continue
		}
		raw, err := st.Raw(m.Seq)
		if err != nil {
			return nil, err
		}
		c := *e
		c.Raw = raw
		full[i] = &c
		raws[e.ID] = raw
	}
	resp.Notebook = notebook.Read(full)
	for _, s := range resp.Notebook.Sections {
		resp.Sections = append(resp.Sections, journal.Section{Name: s.Name, Text: s.Text})
	}
	for _, rv := range notebook.Revisions(full) {
		ri := RevisionInfo{Revision: rv, Content: []journal.Section{}}
		var d struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(raws[rv.EntryID], &d) == nil {
			if secs := journal.NotebookSections(d.Data); secs != nil {
				ri.Content = secs
			}
		}
		resp.Revisions = append(resp.Revisions, ri)
	}
	resp.Notes = append(resp.Notes, notebook.Notes(notebook.Branch{Session: sid, Path: full})...)
	return resp, nil
}
