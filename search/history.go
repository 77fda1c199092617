package search

import (
	"context"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// The Engine is the History of a store opened in this process.
var _ pihistory.History = (*Engine)(nil)

// Branch resolves a session and leaf to its branch: the session's tree,
// the path to leaf (root first) and the leaf used (the current one when
// leaf is ""). It is the one resolver every reader of a branch goes
// through (the engine's own requests, BranchPath, BranchEntries, the web
// UI), so an unknown session or leaf fails the same way everywhere: an
// *Error of kind NotFound naming "session" or "leaf". A session without
// entries has an empty path and leaf. The path's entries are the cached
// tree's: read them, never change them.
func (e *Engine) Branch(session, leaf string) (*store.SessionTree, []*journal.Entry, string, error) {
	return e.branch(session, leaf)
}

// Tree is a session's tree, an unknown session being the resolver's
// NotFound error (see Branch).
func (e *Engine) Tree(session string) (*store.SessionTree, error) { return e.tree(session) }

// BranchPath names the entries of a branch, root first, with the leaf
// used (see Branch).
func (e *Engine) BranchPath(ctx context.Context, session, leaf string) (string, []pihistory.EntryRef, error) {
	t, path, leaf, err := e.branch(session, leaf)
	if err != nil {
		return "", nil, err
	}
	refs := make([]pihistory.EntryRef, len(path))
	for i, en := range path {
		refs[i] = pihistory.EntryRef{Session: session, Entry: en.ID}
		if m := t.MetaOf(en.ID); m != nil {
			refs[i].Seq = m.Seq
		}
	}
	return leaf, refs, nil
}

// BranchEntries is a branch's path (see Branch) with each entry's raw
// journal line (Raw) filled from the store: what the notebook and the
// rollover decisions read. The entries are copies; the cached tree is not
// changed.
func (e *Engine) BranchEntries(ctx context.Context, session, leaf string) (string, []*journal.Entry, error) {
	t, path, leaf, err := e.branch(session, leaf)
	if err != nil {
		return "", nil, err
	}
	out := make([]*journal.Entry, len(path))
	for i, en := range path {
		m := t.MetaOf(en.ID)
		if m == nil {
			return "", nil, notFoundf("leaf", "entry %q of session %q has no stored record", en.ID, session)
		}
		raw, err := e.st.Raw(m.Seq)
		if err != nil {
			return "", nil, err
		}
		c := *en
		c.Raw = raw
		out[i] = &c
	}
	return leaf, out, nil
}
