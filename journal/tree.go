package journal

import (
	"fmt"

	pihistory "github.com/pi-history/pi-history"
)

// Tree is the entry tree of one session, in file order. Entries may hold
// only metadata (Raw and Text empty): the tree reads ids, parents and types.
//
// Pi's rules apply: the current leaf is the last entry in file order; an
// entry whose parent is missing is a root; with duplicate ids, the later
// entry wins the id (as Pi's id map does).
type Tree struct {
	Entries  []*Entry
	byID     map[string]int
	children map[string]int // number of children per id
}

// NewTree indexes entries given in file order.
func NewTree(entries []*Entry) *Tree {
	t := &Tree{Entries: entries, byID: make(map[string]int, len(entries)), children: make(map[string]int, len(entries))}
	for i, e := range entries {
		t.byID[e.ID] = i
	}
	for _, e := range entries {
		if e.ParentID != "" {
			if _, ok := t.byID[e.ParentID]; ok {
				t.children[e.ParentID]++
			}
		}
	}
	return t
}

// Len is the number of entries.
func (t *Tree) Len() int { return len(t.Entries) }

// Get returns the entry with id, or nil.
func (t *Tree) Get(id string) *Entry {
	if i, ok := t.byID[id]; ok {
		return t.Entries[i]
	}
	return nil
}

// Index returns the file-order position of id, or -1.
func (t *Tree) Index(id string) int {
	if i, ok := t.byID[id]; ok {
		return i
	}
	return -1
}

// Leaf is the id of the current leaf: the last entry in file order ("" when empty).
func (t *Tree) Leaf() string {
	if len(t.Entries) == 0 {
		return ""
	}
	return t.Entries[len(t.Entries)-1].ID
}

// Path returns the ancestor chain of leaf, root first. A parent that is
// missing ends the chain (the entry is a root); a cycle is cut where it
// closes. An unknown leaf is an error.
func (t *Tree) Path(leaf string) ([]*Entry, error) {
	i, ok := t.byID[leaf]
	if !ok {
		return nil, fmt.Errorf("entry %q is not in this session", leaf)
	}
	var rev []*Entry
	seen := map[string]bool{}
	for {
		e := t.Entries[i]
		if seen[e.ID] {
			break
		}
		seen[e.ID] = true
		rev = append(rev, e)
		if e.ParentID == "" {
			break
		}
		j, ok := t.byID[e.ParentID]
		if !ok {
			break
		}
		i = j
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev, nil
}

// Leaves returns the ids of entries that have no children, in file order.
// The current leaf is always among them.
func (t *Tree) Leaves() []string {
	var out []string
	for i, e := range t.Entries {
		if t.byID[e.ID] != i {
			continue // shadowed duplicate
		}
		if t.children[e.ID] == 0 {
			out = append(out, e.ID)
		}
	}
	return out
}

// Children reports how many entries name id as their parent.
func (t *Tree) Children(id string) int { return t.children[id] }

// Labels returns the label of every labelled entry: the last label entry for
// a target wins, and an empty label clears it.
func (t *Tree) Labels() map[string]string {
	out := map[string]string{}
	for _, e := range t.Entries {
		if e.Type != "label" || e.TargetID == "" {
			continue
		}
		if e.Label == "" {
			delete(out, e.TargetID)
		} else {
			out[e.TargetID] = e.Label
		}
	}
	return out
}

// Name is the session's display name: the latest session_info anywhere in
// the file ("" when none, or when the latest one cleared it).
func (t *Tree) Name() string {
	for i := len(t.Entries) - 1; i >= 0; i-- {
		if e := t.Entries[i]; e.Type == "session_info" && e.HasName {
			return e.Name
		}
	}
	return ""
}

// Window is one context window of a branch (see pihistory.Window).
type Window = pihistory.Window

// Windows splits a path (root first) into its context windows.
func Windows(path []*Entry) []Window {
	var out []Window
	cur := Window{N: 1, Kind: "start"}
	for i, e := range path {
		if e.Type == "compaction" && i > 0 {
			cur.End = i
			out = append(out, finish(cur, path))
			kind := "compaction"
			if e.FromHook {
				kind = "hook"
			}
			cur = Window{N: cur.N + 1, Start: i, CompactionID: e.ID, Kind: kind}
		} else if e.Type == "compaction" && i == 0 {
			cur.CompactionID, cur.Kind = e.ID, "compaction"
			if e.FromHook {
				cur.Kind = "hook"
			}
		}
	}
	cur.End = len(path)
	if len(path) > 0 {
		out = append(out, finish(cur, path))
	}
	return out
}

func finish(w Window, path []*Entry) Window {
	w.Entries = w.End - w.Start
	if w.Entries > 0 {
		w.FirstEntry = path[w.Start].ID
		w.LastEntry = path[w.End-1].ID
		w.StartedAt = path[w.Start].Timestamp
	}
	return w
}

// WindowOf returns, for each entry of path, the number of its window.
func WindowOf(path []*Entry) []int {
	out := make([]int, len(path))
	n := 1
	for i, e := range path {
		if e.Type == "compaction" && i > 0 {
			n++
		}
		out[i] = n
	}
	return out
}
