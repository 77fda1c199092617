package api

import (
	"errors"
	"slices"
	"testing"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/search"
)

// TestTheClientIsTheSameHistoryAsTheEngine: the engine in the server's
// process and a client of the running server answer History's questions
// alike (the fixture's branches and windows), and refuse an unknown
// session or leaf with the same kind, parameter and message, which is the
// one resolver's.
func TestTheClientIsTheSameHistoryAsTheEngine(t *testing.T) {
	l := serveLive(t, Timeouts{})
	ctx := t.Context()
	histories := map[string]pihistory.History{
		"engine": search.New(l.svc.Store, l.svc.Index),
		"client": l.c.History(),
	}
	type answer struct {
		leaf    string
		entries []string
		windows int
		err     *pihistory.Error
	}
	ask := func(h pihistory.History, sid, leaf string) answer {
		var a answer
		leafUsed, refs, err := h.BranchPath(ctx, sid, leaf)
		if err != nil {
			if !errors.As(err, &a.err) {
				t.Fatalf("BranchPath(%q, %q): %v is no *pihistory.Error", sid, leaf, err)
			}
			return a
		}
		a.leaf = leafUsed
		for _, r := range refs {
			if r.Session != sid || r.Seq == 0 {
				t.Errorf("BranchPath(%q, %q): ref %+v names another session or no seq", sid, leaf, r)
			}
			a.entries = append(a.entries, r.Entry)
		}
		wl, ws, err := h.Windows(ctx, sid, leaf)
		if err != nil || wl != leafUsed {
			t.Fatalf("Windows(%q, %q) = %q, %v; BranchPath used %q", sid, leaf, wl, err, leafUsed)
		}
		a.windows = len(ws)
		return a
	}
	for _, c := range []struct {
		name, sid, leaf string
		want            answer
	}{
		{"current branch", "s1", "", answer{leaf: "l1", entries: []string{"m1", "m2", "m3", "c1", "m4", "m5", "l1"}, windows: 2}},
		{"side branch", "s1", "b1", answer{leaf: "b1", entries: []string{"m1", "m2", "b1"}, windows: 1}},
		{"unknown session", "nope", "", answer{err: &pihistory.Error{Kind: pihistory.NotFound, Param: "session", Msg: `no session "nope"; list sessions to find its id`}}},
		{"unknown leaf", "s1", "zz", answer{err: &pihistory.Error{Kind: pihistory.NotFound, Param: "leaf", Msg: `entry "zz" is not in session "s1"`}}},
	} {
		for name, h := range histories {
			got := ask(h, c.sid, c.leaf)
			if got.leaf != c.want.leaf || !slices.Equal(got.entries, c.want.entries) || got.windows != c.want.windows {
				t.Errorf("%s, %s: leaf %q, path %v, %d windows; want %q, %v, %d", c.name, name, got.leaf, got.entries, got.windows,
					c.want.leaf, c.want.entries, c.want.windows)
			}
			if (got.err == nil) != (c.want.err == nil) || got.err != nil && *got.err != *c.want.err {
				t.Errorf("%s, %s: error %+v, want %+v", c.name, name, got.err, c.want.err)
			}
		}
	}
}
