package search

import (
	"cmp"
	"context"
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

// Engine answers requests over a store and its index.
type Engine struct {
	st     *store.Store
	ix     *index.Index
	titles titleCache // sessions' titles from their first messages
}

// New returns an Engine. ix may be nil: every search then scans.
func New(st *store.Store, ix *index.Index) *Engine { return &Engine{st: st, ix: ix} }

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

// found is the confirmed hits of a search in request order, with what
// each keeps of the text it was confirmed in (nil texts when counting
// only).
type found struct {
	metas []*store.Meta
	texts []hitText
	// rest, when the page filled within a window of all scope, is what
	// of that window a count still has to read (see restOfWindow).
	rest *restOfWindow
}

// restOfWindow is the part of an all-scope search's last window past
// the hit that filled its page: the entries that passed the sketches
// (and filters) there and were not confirmed, and the window's far end
// (its last seq, or its first when newest first). A count that goes on
// from the page confirms these and starts after end, instead of testing
// the rest of the window's sketches again: a count of a needle with one
// hit (a first page of one) tested a third more sketches than the
// history holds.
type restOfWindow struct {
	ranges []store.SeqRange
	end    uint64
}

// hitText is what a hit keeps of the text it was confirmed in: the parts
// its snippets can reach (see snippetSegments) and how often the needle
// occurs in the whole text. Hits in large texts (tool output of tens of
// KB) used to copy the whole text, twice when read by scanShared's helper:
// 61 first pages of 6-12 character needles allocated 305 KB each, then 143
// KB once the part after the last snippet was dropped. A hit whose matches
// lay deep in a large text still copied everything before its last one:
// in a profile of first pages of the needle "Curre" (its 15th hit 447 KB
// and 1.3 MB into a 1.4 MB tool output), 71% of the CPU time was that
// copy.
type hitText struct {
	segs    []segment
	matches int
}

// segment is a part of a hit's text and where it lies in the whole. Its
// bytes are never written after it is made (hitParts copies them out of
// the reader's text), so snippets' strings share them instead of copying:
// a first page of 50 hits made up to 150 such copies.
type segment struct {
	text  []byte
	runes int // runes of the whole text before this part
	// ms, me: for a pattern's hit, the match this part was kept around,
	// text[ms:me] (see patternParts).
	ms, me int
}

// keep returns what a hit keeps of text, whose first match is at first,
// and nothing when only hits are counted, taking the memory from a (nil:
// memory of its own). It reads only the prepared query, so any goroutine
// may call it, each with an arena of its own.
func (p *prepared) keep(a *arena, text []byte, first int) hitText {
	if p.countOnly {
		return hitText{}
	}
	segs, matches := hitParts(a, text, p.find, first)
	return hitText{segs: segs, matches: matches}
}

// arena hands out the memory hits keep (their parts and the parts'
// bytes, see hitParts) from larger allocations: two allocations a hit
// were 7.5% of the CPU time of first pages of 3-5 character needles. What it
// hands out is never handed out again, nor written after the hit's
// parts are copied in, so snippets may share those bytes (see segment).
type arena struct {
	bytes []byte
	segs  []segment
}

// bytesFor returns an empty slice with room for n bytes.
func (a *arena) bytesFor(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	if cap(a.bytes)-len(a.bytes) < n {
		if n > arenaBytes/4 {
			return make([]byte, 0, n) // a large hit keeps memory of its own
		}
		a.bytes = make([]byte, 0, arenaBytes)
	}
	at := len(a.bytes)
	a.bytes = a.bytes[:at+n]
	return a.bytes[at : at : at+n]
}

// segsFor returns n zero segments.
func (a *arena) segsFor(n int) []segment {
	if a == nil {
		return make([]segment, n)
	}
	if cap(a.segs)-len(a.segs) < n {
		// The first few hits take little: most pages in a branch have
		// one to three, and 64 segments are 2.5 KB to clear.
		size := arenaSegs
		if a.segs == nil {
			size = arenaFirstSegs
		}
		a.segs = make([]segment, 0, max(n, size))
	}
	at := len(a.segs)
	a.segs = a.segs[:at+n]
	return a.segs[at : at+n : at+n]
}

const (
	arenaBytes = 16 << 10
	arenaSegs  = 64
	// arenaFirstSegs is the size of an arena's first segments.
	arenaFirstSegs = 8
)

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

// Search runs a literal search.
func (e *Engine) Search(ctx context.Context, req *Request) (*Response, error) {
	return e.search(ctx, req, 0)
}

// search runs a literal search; a limit above 0 replaces the request's
// (SearchPages takes pages larger than a request may ask for).
func (e *Engine) search(ctx context.Context, req *Request, limit int) (*Response, error) {
	start := time.Now()
	p, err := e.prepare(req)
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		p.limit = limit
	}
	resp, _, err := e.run(ctx, p, req.Budget, start)
	return resp, err
}

// run answers a prepared search: one page from p.after, its count when
// p.req asks for one, and its hits' snippets within budget (0: the
// default). It also returns the seq the page ended at, for the next page.
func (e *Engine) run(ctx context.Context, p *prepared, budget int, start time.Time) (*Response, uint64, error) {
	req := p.req
	resp := &Response{Hits: []Hit{}}
	var hits found
	var last uint64
	var more bool
	var err error
	if p.scoped {
		hits, last, more, err = e.scanMembers(ctx, p, &resp.Stats)
	} else {
		hits, last, more, err = e.searchAll(ctx, p, &resp.Stats)
	}
	if err != nil {
		return nil, 0, err
	}
	if more {
		resp.Cursor = encodeCursor(p.hash(), last)
	}
	if req.Count {
		// A page that began at the start holds the first hits: the count
		// goes on from where it stopped (nothing more when it was the
		// last), instead of scanning what the page already scanned again.
		// A page that began at a cursor needs the whole count.
		n := len(hits.metas)
		var err error
		switch {
		case p.hasAfter:
			n, err = e.count(ctx, p, &resp.Stats, false, 0)
		case more && hits.rest != nil:
			var inWindow, rest int
			inWindow, err = e.countRanges(ctx, p, &resp.Stats, hits.rest.ranges)
			if err == nil {
				rest, err = e.count(ctx, p, &resp.Stats, true, hits.rest.end)
			}
			n += inWindow + rest
		case more:
			var rest int
			rest, err = e.count(ctx, p, &resp.Stats, true, last)
			n += rest
		}
		if err != nil {
			return nil, 0, err
		}
		resp.Total = &n
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	resp.Truncated = e.fillHits(p, hits, budget, resp)
	e.describeHits(resp.Hits)
	resp.Stats.TookMs = float64(time.Since(start).Microseconds()) / 1000
	return resp, last, nil
}

// SearchPages runs a literal search and hands its answer to fn a page at a
// time. Without All that is one page, as Search gives it. With All it is
// every hit in pages of pageHits, each continuing from the last's cursor
// (so no hit is repeated or missed while entries arrive; in branch scope
// the branch stays that of the first page), so that the
// caller need hold only one page however many hits there are. The snippet
// budget covers the whole answer: each page gets what the pages before it
// left. A page's Total is set on the first page only (with Count), and its
// Stats are its own. An error ends the pages; fn returning one stops them.
func (e *Engine) SearchPages(ctx context.Context, req *Request, fn func(*Response) error) error {
	if !req.All {
		resp, err := e.Search(ctx, req)
		if err != nil {
			return err
		}
		return fn(resp)
	}
	page := *req
	page.All, page.Limit = false, 0
	prepare := func() (*prepared, error) {
		p, err := e.prepare(&page)
		if err == nil {
			p.limit = pageHits
		}
		return p, err
	}
	p, err := prepare()
	if err != nil {
		return err
	}
	left := req.Budget
	if left <= 0 {
		left = DefaultBudget
	}
	for {
		// A budget of 0 would mean the default: 1 leaves no room.
		resp, last, err := e.run(ctx, p, max(left, 1), time.Now())
		if err != nil {
			return err
		}
		for _, h := range resp.Hits {
			for _, sn := range h.Snippets {
				left -= utf8.RuneCountInString(sn.Text)
			}
		}
		if err := fn(resp); err != nil {
			return err
		}
		if resp.Cursor == "" {
			return nil
		}
		page.Count = false
		if page.Scope == ScopeBranch {
			// A branch stays the one of the first page: working it out
			// again would follow a current leaf that moved to another
			// branch midway and mix two branches' hits.
			p.after, p.hasAfter = last, true
			continue
		}
		// Other scopes are worked out again from the cursor, so that
		// entries (and sessions, branches, forks) that arrived meanwhile
		// are searched too.
		page.Cursor = resp.Cursor
		if p, err = prepare(); err != nil {
			return err
		}
	}
}

// pageHits is the size of SearchPages's pages: large enough that starting
// each page again (planning, windows growing from their first size) costs
// little, small enough that a page's hits and their texts' parts take a few
// megabytes.
var pageHits = 10000
