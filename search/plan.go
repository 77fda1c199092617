package search

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// filter is a request's per-entry conditions.
type filter struct {
	window       int
	types, roles []string
	since, until time.Time
}

// empty reports whether f lets every entry through.
func (f *filter) empty() bool {
	return f.window == 0 && len(f.types) == 0 && len(f.roles) == 0 && f.since.IsZero() && f.until.IsZero()
}

func (f *filter) match(m *store.Meta) bool {
	if f.window > 0 && m.Window != f.window {
		return false
	}
	if len(f.types) > 0 && !slices.Contains(f.types, m.Type) {
		return false
	}
	if len(f.roles) > 0 && !slices.Contains(f.roles, m.Role) {
		return false
	}
	if !f.since.IsZero() || !f.until.IsZero() {
		t := journal.ParseTime(m.Timestamp)
		if !f.since.IsZero() && t.Before(f.since) {
			return false
		}
		if !f.until.IsZero() && !t.Before(f.until) {
			return false
		}
	}
	return true
}

// prepared is a validated search request.
type prepared struct {
	req      *Request
	find     *finder
	filter   filter
	limit    int // 0: no limit
	after    uint64
	hasAfter bool
	// for scoped searches: the seqs of the searchable entries in scope,
	// ascending, and their records when their sessions' trees were loaded
	// (members, ascending; nil for the current branch searched without
	// filters, which needs records only for hits)
	seqs    []uint64
	members []*store.Meta
	trees   map[string]*store.SessionTree // nil for all scope and the current branch unfiltered
	agents  map[string]string             // lineage scope: each session's owning agent
	scoped  bool
	// countOnly: only the number of hits is wanted, not their texts
	countOnly bool
	// lit is the literal the index is asked about: the needle, or for a
	// pattern the one literal every match holds (nil when it requires
	// none or one of several).
	lit []byte
	// pat is the request's pattern (ignore-case or regex), nil for a
	// literal search.
	pat *pattern
	// queries are the index's queries of the literals one of which every
	// match holds (the needle alone for a literal search): an entry is a
	// candidate when one of them may hold it. Nil when the index cannot
	// narrow the search (no index, or a literal shorter than a trigram).
	queries []*index.Query
	// firstWindow, above 0 for a page after the first of a search for
	// every hit (eachPage), is the width of its first window of seqs (all
	// scope); such a page reads with both cores from the start.
	firstWindow uint64
}

// hash identifies the request for its cursors (see queryHash). It is
// worked out only for a request that gives or gets a cursor: formatting
// its times and joining its filters allocated half a dozen strings for
// every search, most of whose pages end without a cursor.
func (p *prepared) hash() uint64 {
	req := p.req
	parts := []string{req.Needle, string(req.Scope), req.Session, req.Leaf, strconv.Itoa(req.Window),
		strings.Join(req.Types, ","), strings.Join(req.Roles, ","), req.Since.String(), req.Until.String(),
		strconv.FormatBool(req.NewestFirst)}
	// The modes are named only when set, so that literal cursors stay
	// what they were.
	if req.IgnoreCase {
		parts = append(parts, "ignoreCase")
	}
	if req.Regex {
		parts = append(parts, "regex")
	}
	return queryHash(parts...)
}

// prepare checks a request and turns it into what a search runs on: its
// needle's finder and index queries, its scope's members and its filters. Each
// check fails with the parameter it is about.
//
// One piece (138 lines): the checks run in the order of the request's
// parameters, and later ones read what earlier ones settled (the scope
// defaulted from the session, the needle's form, the cursor checked
// against the request's hash, then the scope's members).
func (e *Engine) prepare(req *Request) (*prepared, error) {
	if req.Needle == "" {
		return nil, badf("needle", "the needle is empty; give the text to find (any length from 1 character)")
	}
	if len(req.Needle) > MaxNeedleBytes {
		return nil, badf("needle", "the needle is %d bytes; at most %d are allowed", len(req.Needle), MaxNeedleBytes)
	}
	if !utf8.ValidString(req.Needle) {
		return nil, badf("needle", "the needle is not valid UTF-8")
	}
	if req.Scope == "" {
		req.Scope = ScopeAll
		if req.Session != "" {
			req.Scope = ScopeBranch
		}
	}
	switch req.Scope {
	case ScopeAll, ScopeBranch, ScopeSession, ScopeLineage:
	default:
		return nil, badf("scope", "unknown scope %q; use branch, session, lineage or all", req.Scope)
	}
	if req.Scope != ScopeAll && req.Session == "" {
		return nil, badf("session", "scope %q needs a session id", req.Scope)
	}
	if req.Leaf != "" && req.Scope != ScopeBranch {
		return nil, badf("leaf", "a leaf applies only to branch scope (scope is %q)", req.Scope)
	}
	if req.Session != "" && req.Scope == ScopeAll {
		return nil, badf("session", "scope all covers every session; drop the session, or use scope branch, session or lineage for one")
	}
	if req.Window < 0 {
		return nil, badf("window", "window %d is invalid; windows are numbered from 1", req.Window)
	}
	if req.Limit < 0 || req.Limit > MaxLimit {
		return nil, badf("limit", "limit %d is out of range 1..%d (use all for every hit)", req.Limit, MaxLimit)
	}
	if err := searchableOnly("types", "type", req.Types, journal.SearchableTypes); err != nil {
		return nil, err
	}
	if err := searchableOnly("roles", "role", req.Roles, journal.SearchableRoles); err != nil {
		return nil, err
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && !req.Until.After(req.Since) {
		return nil, badf("until", "the time range is empty: until must be after since")
	}
	p := &prepared{req: req, filter: filter{window: req.Window, types: req.Types, roles: req.Roles, since: req.Since, until: req.Until}}
	if err := p.setNeedle(e.ix); err != nil {
		return nil, err
	}
	p.limit = req.Limit
	if p.limit == 0 {
		p.limit = DefaultLimit
	}
	if req.All {
		p.limit = 0
	}
	if req.Cursor != "" {
		seq, err := decodeCursor(req.Cursor, p.hash())
		if err != nil {
			return nil, err
		}
		p.after, p.hasAfter = seq, true
	}
	if req.Scope == ScopeAll {
		return p, nil
	}
	p.scoped = true
	switch req.Scope {
	case ScopeBranch:
		if req.Leaf == "" && p.filter.empty() {
			// The current branch's seqs are cached apart from the trees,
			// which a store too large to keep every tree would reload.
			seqs, err := e.st.CurrentBranchSeqs(req.Session)
			if errors.Is(err, store.ErrNotFound) {
				return nil, notFoundf("session", "no session %q; list sessions to find its id", req.Session)
			}
			if err != nil {
				return nil, err
			}
			p.seqs = seqs
			return p, nil
		}
		t, err := e.tree(req.Session)
		if err != nil {
			return nil, err
		}
		leaf := req.Leaf
		if leaf == "" {
			leaf = t.Leaf()
		}
		if t.Index(leaf) < 0 {
			return nil, notFoundf("leaf", "entry %q is not in session %q", leaf, req.Session)
		}
		path, _ := t.Path(leaf)
		if req.Window > 0 {
			if n := len(journal.Windows(path)); req.Window > n {
				return nil, notFoundf("window", "window %d does not exist: this branch has %d window(s)", req.Window, n)
			}
		}
		p.trees = map[string]*store.SessionTree{req.Session: t}
		for _, en := range path {
			p.members = append(p.members, t.MetaOf(en.ID))
		}
	case ScopeSession, ScopeLineage:
		sids := []string{req.Session}
		if req.Scope == ScopeLineage {
			ms, err := e.LineageMembers(req.Session)
			if err != nil {
				return nil, err
			}
			sids = sids[:0]
			p.agents = make(map[string]string, len(ms))
			for _, m := range ms {
				sids = append(sids, m.Session)
				p.agents[m.Session] = m.Agent
			}
		}
		p.trees = make(map[string]*store.SessionTree, len(sids))
		for _, sid := range sids {
			t, err := e.tree(sid)
			if err != nil {
				return nil, err
			}
			p.trees[sid] = t
			p.members = append(p.members, t.Metas...)
		}
		if req.Window > 0 {
			most := 0
			for _, m := range p.members {
				most = max(most, m.Window)
			}
			if req.Window > most {
				return nil, notFoundf("window", "window %d does not exist: no branch in this scope has more than %d window(s)", req.Window, most)
			}
		}
	}
	slices.SortFunc(p.members, func(a, b *store.Meta) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, m := range p.members {
		if m.Searchable() {
			p.seqs = append(p.seqs, m.Seq)
		}
	}
	return p, nil
}

// searchableOnly refuses a filter value (an entry type or message role)
// that never has searchable text: a typo ("User", "toolresult") would
// otherwise read as "nothing matched".
func searchableOnly(param, what string, values, known []string) error {
	for _, v := range values {
		if slices.Contains(known, v) {
			continue
		}
		hint := ""
		for _, k := range known {
			if strings.EqualFold(k, v) {
				hint = fmt.Sprintf(" (did you mean %q?)", k)
			}
		}
		return badf(param, "%s %q never has searchable text%s; use %s", what, v, hint, strings.Join(known, ", "))
	}
	return nil
}

func (e *Engine) tree(sid string) (*store.SessionTree, error) {
	t, err := e.st.Tree(sid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("session", "no session %q; list sessions to find its id", sid)
	}
	return t, err
}
