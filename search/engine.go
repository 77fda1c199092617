package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
	"github.com/pi-history/pi-history/trigram"
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
	scoped  bool
	// countOnly: only the number of hits is wanted, not their texts
	countOnly bool
	// probe tests entries' trigram sketches before their texts are read
	probe *trigram.Probe
	// lit is the literal the candidate machinery (first occurrences, the
	// index, probe) is asked about: the needle, or for a pattern the one
	// literal every match holds (nil when it requires none or one of
	// several, see probes).
	lit []byte
	// pat is the request's pattern (ignore-case or regex), nil for a
	// literal search.
	pat *pattern
	// probes, for a pattern that requires one of several literals with
	// trigrams, are their probes: an entry is a candidate when its sketch
	// passes one (probe is then the first).
	probes []*trigram.Probe
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
// the reader's text, or takes them from a text the store holds in memory,
// which it never writes), so snippets' strings share them instead of
// copying: a first page of 50 hits made up to 150 such copies.
type segment struct {
	text  []byte
	runes int         // runes of the whole text before this part
	ascii runeCounter // the whole text is ASCII alone (store.Held.ASCII)
	// ms, me: for a pattern's hit, the match this part was kept around,
	// text[ms:me] (see patternParts).
	ms, me int
}

// keep returns what a hit keeps of text, whose first match is at first,
// and nothing when only hits are counted, taking the memory from a (nil:
// memory of its own). held says whether the store holds text in memory and
// never writes it (see store.ScanTextRanges): its parts are kept without a
// copy; and whether it is ASCII alone. It reads only the prepared query,
// so any goroutine may call it, each with an arena of its own.
func (p *prepared) keep(a *arena, text []byte, first int, held store.Held) hitText {
	if p.countOnly {
		return hitText{}
	}
	segs, matches := hitParts(a, text, p.find, first, held)
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
	if err := p.setNeedle(); err != nil {
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
			var err error
			if sids, err = e.Lineage(req.Session); err != nil {
				return nil, err
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

// scanMembers confirms a scoped search by reading the text of each member
// whose sketch lets the needle through.
func (e *Engine) scanMembers(ctx context.Context, p *prepared, st *Stats) (found, uint64, bool, error) {
	st.Plan = "scan " + string(p.req.Scope)
	var hits found
	var ar arena // what the hits keep
	// Members whose sketch rules the needle out are not read. The seqs are
	// ascending, so the ranges are too, and every seq in them is a member.
	var ranges []store.SeqRange
	for _, seq := range p.seqs {
		if k := len(ranges); k > 0 && ranges[k-1].Hi+1 == seq {
			ranges[k-1].Hi = seq
		} else {
			ranges = append(ranges, store.SeqRange{Lo: seq, Hi: seq})
		}
	}
	ranges, err := e.mayHold(p, ranges, st)
	if err != nil {
		return found{}, 0, false, err
	}
	// The candidates are the seqs of ranges past the cursor, read in the
	// request's order from the ranges themselves (a list of them was a
	// few KB to write and read back for every branch-scope page).
	if p.hasAfter {
		ranges = pastCursor(ranges, p.after, p.req.NewestFirst)
	}
	n := int(store.Count(ranges))
	// One iterator reads the candidates' texts: a member's text a point
	// read each (Pebble's Get opens the table's iterators every time) took
	// half the time of branch-scope first pages.
	var rd *store.TextReader
	if n > 0 {
		if rd, err = e.st.NewTextReader(ranges[0].Lo, ranges[len(ranges)-1].Hi); err != nil {
			return found{}, 0, false, err
		}
		defer rd.Close()
	}
	next := inOrder(ranges, p.req.NewestFirst)
	for k := 0; k < n; k++ {
		seq := next()
		// With a tree loaded, entries the filter rules out are not read;
		// without one (the current branch, unfiltered) only hits' records
		// are looked up.
		var m *store.Meta
		if p.members != nil {
			i, _ := slices.BinarySearchFunc(p.members, seq, func(m *store.Meta, seq uint64) int { return cmp.Compare(m.Seq, seq) })
			if m = p.members[i]; !p.filter.match(m) {
				continue
			}
		}
		if k%256 == 0 && ctx.Err() != nil {
			return found{}, 0, false, ctx.Err()
		}
		ok := false
		var text hitText
		b, has, err := rd.Text(seq)
		if err != nil {
			return found{}, 0, false, err
		}
		if has {
			st.BytesScanned += int64(len(b))
			if at := p.find.index(b); at >= 0 {
				ok, text = true, p.keep(&ar, b, at, rd.Held())
			}
		}
		st.Scanned++
		if !ok {
			continue
		}
		if m == nil {
			if m, err = e.st.Meta(seq); errors.Is(err, store.ErrNotFound) {
				continue // dropped since the branch was read
			} else if err != nil {
				return found{}, 0, false, err
			}
		}
		st.Confirmed++
		hits.metas = append(hits.metas, m)
		if !p.countOnly {
			hits.texts = append(hits.texts, text)
		}
		if p.limit > 0 && len(hits.metas) == p.limit {
			// More only if a later member may still match.
			return hits, seq, k < n-1, nil
		}
	}
	return hits, 0, false, nil
}

// pastCursor returns the parts of ascending ranges after seq after (before
// it when newest is set), in place.
func pastCursor(ranges []store.SeqRange, after uint64, newest bool) []store.SeqRange {
	out := ranges[:0]
	for _, r := range ranges {
		switch {
		case !newest && r.Hi > after:
			r.Lo = max(r.Lo, after+1)
		case newest && r.Lo < after:
			r.Hi = min(r.Hi, after-1)
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}

// inOrder returns a function that gives the seqs of ascending ranges one
// by one, oldest first or newest first; it must not be called more times
// than the ranges hold seqs.
func inOrder(ranges []store.SeqRange, newest bool) func() uint64 {
	j, at := 0, uint64(0) // the range and the seqs of it given
	return func() uint64 {
		r := ranges[j]
		if newest {
			r = ranges[len(ranges)-1-j]
		}
		seq := r.Lo + at
		if newest {
			seq = r.Hi - at
		}
		if at++; at > r.Hi-r.Lo {
			j, at = j+1, 0
		}
		return seq
	}
}

// broadShare: when the index leaves more than one indexed block in
// broadShare as candidates for a needle of broadMinRunes characters or
// more, the search scans the sketches of every entry instead. A candidate
// block is tested on its own (its column words and sketches out of cache);
// a long stretch is tested 64 entries at a time, and a long needle's many
// trigrams and 4-grams rule out nearly every entry. Measured at a million
// entries (two runs each of `bench/search -only chars -rg 0 -each`, with
// and without the rule; sums of per-needle medians over the needles whose
// plan it changes): 13-40 characters 104.1 against 144.6 ms (19 needles),
// 9-12 characters 41.8 against 50.6 (8), 6-8 characters 29.7 against 31.2
// (7), 3-5 characters 61.0 against 32.1 (12: a short needle passes many
// sketches, so the scan reads many texts). The share was chosen before
// the 9-character floor, in-process and alternating over the 166
// index-planned needles of the benchmark's samples: sums of medians 453
// against 499 ms with a bound of 3,000 blocks (1 in 21), 472 against 503
// with 1,500, 483 against 523 with 2,000, 526 against 517 with 5,000.
//
// broadShareFiltered is the share in a store whose chunks have filters (a
// server after its warm-up): a filter's long set rules out nine chunks in
// ten for a needle of 8 bytes or more before any sketch is read, so a scan
// costs far less than before, and a scan pays from fewer candidates on.
// In-process, alternating against 20, over the benchmark's needles
// (median of per-needle ratios; sums of medians): 13-40 characters 0.93
// (0.88) with 60, 0.96 (0.91) with 100, 1.01 (0.92) with 200; exact counts
// of 20 characters 0.98 (0.98), 1.03 (1.03), 1.00 (1.03).
const (
	broadShare         = 20
	broadShareFiltered = 60
	broadMinRunes      = 9
)

// Below broadMinBlocks indexed blocks (65,536 entries) the index is always
// used: either way costs little there, and the rule was measured at a
// million. (A variable for tests.)
var broadMinBlocks uint64 = 4096

// broadBound returns the most candidate blocks the index may leave a
// needle of runes characters before a scan pays better (see broadShare),
// through being the index's mark and filtered whether the store's chunks
// have filters; 0 when the index is to be used however many it leaves.
func broadBound(through uint64, runes int, filtered bool) int {
	n := through / index.BlockSize
	if runes < broadMinRunes || n < broadMinBlocks {
		return 0
	}
	if filtered {
		return int(n / broadShareFiltered)
	}
	return int(n / broadShare)
}

// searchAll answers an all-scope search: index windows for what is indexed,
// a scan for what is not.
func (e *Engine) searchAll(ctx context.Context, p *prepared, st *Stats) (found, uint64, bool, error) {
	last := e.st.LastSeq()
	c := &collector{e: e, p: p, st: st}
	defer c.close()
	if p.pat != nil && p.lit != nil {
		// A pattern answered as its one required literal says so.
		defer func() { st.Plan += "; " + p.pat.describe() }()
	}
	// from is where the rest of an oldest-first search starts: past the
	// cursor, and past what the first occurrences answered for.
	from := uint64(1)
	if p.hasAfter {
		from = p.after + 1
	}
	// An oldest-first page starts from the first occurrences of the
	// needle's grams (see store.Heads) when they answer for enough seqs
	// (headsMinSpan for a needle shorter than six characters, which the
	// index cannot narrow; headsLongSpan for a longer one) or for the
	// whole history. answered is set when the lists hold the whole page.
	var answered bool
	var note string // what the plan says of a part answered from the lists
	defer func() {
		if !answered {
			st.Plan += note
		}
	}()
	// A long needle's candidates from the lists are tested on their
	// sketches first (see scanHeads).
	long := utf8.RuneCount(p.lit) >= trigram.Window+2
	heads := func() error {
		if p.req.NewestFirst || p.req.Count || p.limit <= 0 || !useHeads {
			return nil
		}
		w, ok := e.st.Heads(p.lit, from-1, last)
		span := headsMinSpan
		if long {
			span = headsLongSpan
		}
		if !ok || w.Bound() < from+span && w.Bound() < last {
			return nil
		}
		err := c.scanHeads(ctx, w, long)
		if err == nil && !c.full() && w.Bound() < last {
			from = w.Bound() + 1
			note = fmt.Sprintf("; first, the first occurrences of its grams (through seq %d)", w.Bound())
			return nil
		}
		answered = true
		st.Plan = fmt.Sprintf("first occurrences of its grams (through seq %d)", w.Bound())
		return err
	}
	if err := heads(); err != nil || answered {
		return c.result(err)
	}
	through := uint64(0)
	var plan index.Plan
	useIndex := false
	switch {
	case p.pat != nil && p.lit == nil && p.probes != nil:
		st.Plan = "scan through sketches (" + p.pat.describe() + ")"
		if e.ix == nil {
			break
		}
		through = min(e.ix.IndexedThrough(), last)
		plans, ok, err := e.planEach(ctx, p.pat.lits, through)
		if err != nil {
			return found{}, 0, false, err
		}
		if ok {
			c.plans = plans
			useIndex = true
			st.Plan = fmt.Sprintf("index (the candidates of each of %d literals); %s", len(p.pat.lits), p.pat.describe())
		}
	case p.pat != nil && p.lit == nil:
		st.Plan = "scan (" + p.pat.describe() + ")"
	case e.ix != nil:
		through = min(e.ix.IndexedThrough(), last)
		var err error
		bound := broadBound(through, utf8.RuneCount(p.lit), e.st.Filtered())
		plan, err = e.ix.PlanNeedleWithin(ctx, string(p.lit), bound)
		switch {
		case errors.Is(err, index.ErrNoTrigrams) && e.byFilters(p):
			st.Plan = "scan (needle shorter than 3 characters; chunks ruled out by its bytes)"
		case errors.Is(err, index.ErrNoTrigrams):
			st.Plan = "scan (needle shorter than 3 characters)"
		case errors.Is(err, index.ErrNoWindow):
			st.Plan = fmt.Sprintf("scan through sketches (needle shorter than %d characters)", trigram.Window+2)
		case err != nil:
			return found{}, 0, false, err
		case plan.AllCommon:
			st.Plan = "scan through sketches (every trigram of the needle is common)"
		case plan.Zero != "":
			st.Plan = fmt.Sprintf("index: trigram %q occurs nowhere", plan.Zero)
			useIndex = true
		case plan.Broad:
			st.Plan = fmt.Sprintf("scan through sketches, the index too broad (more than %d of %d blocks are candidates)", bound, through/index.BlockSize)
		default:
			st.Plan = fmt.Sprintf("index (rarest trigram in %d blocks)", plan.Rarest)
			useIndex = true
		}
	default:
		st.Plan = "scan (no index)"
	}
	c.plan = &plan
	if !useIndex {
		lo, hi := from, last
		if p.hasAfter && p.req.NewestFirst {
			lo, hi = 1, p.after-1
		}
		if p.countOnly && useHeads && countFromHeads && lo <= hi {
			// A count the index cannot narrow would test every sketch
			// in its range. When a gram of the needle is held by fewer
			// entries than a list keeps, that list is every entry that
			// can hold the needle, and the count confirms those alone.
			if w, ok := e.st.Heads(p.lit, lo-1, hi); ok && w.Bound() >= hi {
				st.Plan = fmt.Sprintf("counted from the first occurrences of its grams (through seq %d)", w.Bound())
				err := c.scanHeads(ctx, w, long)
				return c.result(err)
			}
		}
		err := c.scan(ctx, lo, hi)
		return c.result(err)
	}
	// Indexed range [1, through], then the unindexed tail (through, last].
	if !p.req.NewestFirst {
		lo := from
		if plan.Zero == "" {
			if err := eachWindow(lo, through, c.window(), false, c.full, c.grow, func(a, b uint64) error {
				return c.candidates(ctx, a, b)
			}); err != nil {
				return c.result(err)
			}
		}
		if !c.full() {
			err := c.scan(ctx, max(lo, through+1), last)
			return c.result(err)
		}
		return c.result(nil)
	}
	hi := last
	if p.hasAfter {
		hi = p.after - 1
	}
	if hi > through {
		if err := c.scan(ctx, through+1, hi); err != nil || c.full() {
			return c.result(err)
		}
		hi = through
	}
	if plan.Zero == "" {
		err := eachWindow(1, hi, c.window(), true, c.full, c.grow, func(a, b uint64) error {
			return c.candidates(ctx, a, b)
		})
		return c.result(err)
	}
	return c.result(nil)
}

// useHeads says whether oldest-first pages start from the first
// occurrences of their needle's grams (see store.Heads).
var useHeads = true

// countFromHeads says whether a count that would scan every sketch of its
// range counts from a list of the needle's first occurrences instead, when
// that list is complete through the range (see searchAll); tests turn it
// off to compare with the scan.
var countFromHeads = true

// headsMinSpan is the fewest seqs the first occurrences must answer for
// before a search starts from them: for a needle whose every trigram is
// common, the lists end within the first few hundred entries, and walking
// them would only delay the scan.
var headsMinSpan uint64 = 1024

// headsLongSpan is the same for a needle of six characters or more: the
// lists do not answer for much of a needle whose every 4-gram is common,
// and a search that goes on past a part they answered starts its windows
// over from small ones. In-process, alternating, against the sketches
// alone (every list of the needle's trigrams and 4-grams walked then):
// 6-12 characters median ratio 0.953 (p50 415 -> 239 us) and 13-40 0.972
// with 16,384; 1.060 and 1.000 with 131,072. Planned first, and
// started from the lists only when the plan was to scan the sketches,
// they did less well (against that, 6-12 characters 0.965, 13-40 0.962).
var headsLongSpan uint64 = 16384

// headsBatch is how many candidates of the first occurrences are read at
// a time (see scanHeads): about what a dense page needs.
const headsBatch = 64

// scanHeads confirms the candidates w yields, in order, until the page is
// full or w has no more. With sketches, they are tested on their sketches
// first: the candidates of a long needle are the entries that hold one of
// its 4-grams and that the other lists could not rule out, mostly
// spread through the history where texts are not held in memory. (Those
// of a short needle mostly hold it: with their sketches tested, first
// pages of 3-5 characters gave a median ratio of 0.818 against the
// sketches alone, 0.768 without, with trigram lists alone.)
func (c *collector) scanHeads(ctx context.Context, w *store.HeadWalk, sketches bool) error {
	var buf []store.SeqRange
	exact := !sketches && c.p.filter.empty()
	for n := headsBatch; ; n = 4 * headsBatch {
		buf = w.Next(buf[:0], n)
		if len(buf) == 0 {
			return nil
		}
		ranges := buf
		if !exact {
			var err error
			if ranges, err = c.e.mayHold(c.p, buf, c.st); err != nil {
				return err
			}
		}
		if err := c.scanRanges(ctx, ranges); err != nil || c.full() {
			return err
		}
	}
}

// First windows of seqs: index candidates are asked for, and sketches
// scanned, this many seqs at a time at first, then in windows two to four
// times wider each time (see collector.grow), so that a page that fills
// early costs little and one that does not costs few rounds. A search for
// every hit (a count, --all) has no page to fill, and starts its scan
// wider.
//
// A scan's first window is one sketch chunk: a page of a dense needle
// fills within the first thousand entries or so (median of the
// benchmark's 3-5 character needles: 969), and the 4,096 tested before
// passed many more sketches than it read texts. In-process, alternating,
// medians of five runs of each of the benchmark's 200 needles of 3-5
// characters: p50 0.675 -> 0.550 ms (median ratio 0.91), the other groups
// within 1%. A first window of 512 was no better than 1,024 then; for
// counts 1,024 cost 6% more in sum than 4,096; index windows of 4,096
// instead of 16,384 were 2% slower.
//
// Since the texts are held in memory, a window's texts cost little next
// to testing its sketches: of a dense needle's first window, a fifth or
// more of the entries pass (their own sketch read, a cache miss each)
// while the page fills from the first 50 to 130 of them ("func ": 218
// passed, 50 read). A first window of 256 (growing as before): in-process,
// odd and even rounds alternating, medians of each needle's rounds, 3-5
// characters median ratio 0.95-0.97 (sum -2%), 32 dense ones 0.96-0.97
// (p50 61-63 -> 53-54 us), 1-2 characters 0.96, 6-12 0.97-1.00, 13-40
// and counts 0.99 (the same runs with no change between rounds:
// 0.98-1.01). 128 was no better overall: 3-5 characters 0.89-0.90, but
// 6-12 p90 +4%.
const (
	indexWindow     = 16384
	scanWindow      = 256
	wholeScanWindow = 4096
)

// eachWindow calls fn on consecutive windows covering [lo, hi] in request
// order (from hi down when newest), the first w seqs wide and each next as
// wide as grow says, given the last width and how many seqs the windows
// so far covered, until fn fails or stop reports true.
func eachWindow(lo, hi, w uint64, newest bool, stop func() bool, grow func(w, covered uint64) uint64, fn func(a, b uint64) error) error {
	covered := uint64(0)
	for lo <= hi && !stop() {
		a, b := lo, hi
		if hi-lo >= w {
			if newest {
				a = hi - w + 1
			} else {
				b = lo + w - 1
			}
		}
		if err := fn(a, b); err != nil {
			return err
		}
		covered += b - a + 1
		if newest {
			if a == lo {
				return nil
			}
			hi = a - 1
		} else {
			if b == hi {
				return nil
			}
			lo = b + 1
		}
		w = grow(w, covered)
	}
	return nil
}

// fourTimes is the windows' growth when nothing tells a better one.
func fourTimes(w, _ uint64) uint64 {
	if w >= 1<<60 {
		return w
	}
	return 4 * w
}

// grow returns the width of c's next window, given the last width and the
// seqs covered so far: four times the last, unless the page's hits so far
// say it fills sooner. Then it is a quarter more than the seqs the missing
// hits should take at the density found so far, but at least twice the
// last (hits that bunch up early do not make the windows crawl). A page of
// a needle of middling density filled in the fourth window of 64K seqs
// when 31K were enough (median of the benchmark's 6-12 character needles),
// testing twice the sketches it needed. In-process, alternating, medians
// of five runs of each of the benchmark's 200 needles a group, two runs:
// 6-12 characters p50 0.799, 0.847 -> 0.730, 0.766 ms (median ratios
// 0.946, 0.911; sums -8%, -6%); 3-5 and 13-40 characters median ratios
// 0.959-1.002, sums 0.3-7% lower; newest first (one run of three each)
// median ratios 0.907-0.969.
func (c *collector) grow(w, covered uint64) uint64 {
	next := fourTimes(w, covered)
	h := uint64(len(c.hits))
	if c.p.limit == 0 || h == 0 || next == w {
		return next
	}
	est := (uint64(c.p.limit) - min(h, uint64(c.p.limit))) * covered / h
	return min(max(est+est/4, 2*w), next)
}

// window is the first width of the index windows of c's plan. Windows
// let a page that fills early skip the later candidates, but each costs a
// store iterator; a direct plan with few blocks tests them all at once
// (their sketches are in memory, and reading stops when the page fills).
func (c *collector) window() uint64 {
	if c.plan.Direct && len(c.plan.Blocks) <= oneWindowBlocks {
		return math.MaxUint64 // one window
	}
	return indexWindow
}

// oneWindowBlocks is the most blocks a direct plan takes in one window.
const oneWindowBlocks = 64

// collector gathers confirmed hits in request order until the page is full.
type collector struct {
	e    *Engine
	p    *prepared
	st   *Stats
	plan *index.Plan
	// plans, when not nil, are the index's plans of a pattern's literals
	// (one of which every match holds): the candidates of each are asked
	// for, and their union confirmed (plan is then an empty one).
	plans []*index.Plan
	hits  []*store.Meta
	texts []hitText // parallel to hits: what each keeps of its text
	more  bool
	last  uint64
	n     int // entries visited, for checking ctx now and then
	rest  *restOfWindow
	// arena is where this goroutine's hits keep their parts (see
	// prepared.keep).
	arena arena
	// slab holds the records of the page's hits, decoded into room
	// allocated for many at once (see collector.record).
	slab []store.Meta
	// readers are the text readers of scanShared (this goroutine's and
	// its helper's), opened at first use and kept for the whole search:
	// opening a Pebble iterator costs more than reading a cached text.
	readers [2]*store.TextReader
}

// reader returns text reader k (see collector.readers). It is opened
// after the search took its last seq, so it sees every entry up to it.
func (c *collector) reader(k int) (*store.TextReader, error) {
	if c.readers[k] == nil {
		r, err := c.e.st.NewTextReader(0, math.MaxUint64)
		if err != nil {
			return nil, err
		}
		c.readers[k] = r
	}
	return c.readers[k], nil
}

// close releases the collector's readers.
func (c *collector) close() {
	for _, r := range c.readers {
		if r != nil {
			r.Close()
		}
	}
}

func (c *collector) full() bool { return c.p.limit > 0 && len(c.hits) >= c.p.limit }

func (c *collector) result(err error) (found, uint64, bool, error) {
	if err != nil {
		return found{}, 0, false, err
	}
	return found{c.hits, c.texts, c.rest}, c.last, c.more, nil
}

// offer confirms one seq whose text is in hand (held: see prepared.keep).
func (c *collector) offer(seq uint64, text []byte, held store.Held) (bool, error) {
	c.st.BytesScanned += int64(len(text))
	at := c.p.find.index(text)
	if at < 0 {
		return false, nil
	}
	return c.accept(seq, text, at, held)
}

// accept takes a seq whose text, in hand, holds the needle (first at at),
// if its record passes the filters; only then is the text kept (see
// prepared.keep).
func (c *collector) accept(seq uint64, text []byte, at int, held store.Held) (bool, error) {
	m, ok, err := c.admit(seq)
	if m != nil {
		c.add(seq, m, c.p.keep(&c.arena, text, at, held))
	}
	return ok, err
}

// acceptKept is accept for a hit whose text was kept already (by a helper
// goroutine, before its reader moved on).
func (c *collector) acceptKept(seq uint64, text hitText) (bool, error) {
	m, ok, err := c.admit(seq)
	if m != nil {
		c.add(seq, m, text)
	}
	return ok, err
}

// countedHit stands in the hits of a count for records nobody reads.
var countedHit = &store.Meta{}

// admit reads the record of a seq whose text holds the needle: ok when it
// passes the filters (and counts as confirmed), m when the page still has
// room for it.
func (c *collector) admit(seq uint64) (m *store.Meta, ok bool, err error) {
	if c.p.countOnly && c.p.filter.empty() {
		// A hit that is only counted, with no filter to pass, needs no
		// record: its text was just read, so the entry is there. Counts
		// of boilerplate lines (200,000 hits at a million entries) spent
		// half their time decoding records.
		c.st.Confirmed++
		return countedHit, true, nil
	}
	m, err = c.record(seq)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, nil // dropped since the index saw it
		}
		return nil, false, err
	}
	if !c.p.filter.match(m) {
		c.unrecord()
		return nil, false, nil
	}
	c.st.Confirmed++
	if c.full() {
		c.more = true
		c.unrecord()
		return nil, true, nil
	}
	return m, true, nil
}

// record decodes the record of seq into the next place of the collector's
// slab, allocated for a page's hits at once instead of one allocation a
// hit (with held parts not copied, see hitParts: first pages of dense 3-5
// character needles, in-process alternating, median ratio 0.92). unrecord gives the place back, for a record that does not go
// on the page; nothing else ever takes one back, so every hit's record
// stays as it was decoded.
func (c *collector) record(seq uint64) (*store.Meta, error) {
	if len(c.slab) == cap(c.slab) {
		n := slabMetas
		if c.p.limit > 0 {
			n = min(n, c.p.limit+1)
		}
		c.slab = make([]store.Meta, 0, n)
	}
	c.slab = c.slab[:len(c.slab)+1]
	m := &c.slab[len(c.slab)-1]
	if err := c.e.st.MetaInto(seq, m); err != nil {
		c.unrecord()
		return nil, err
	}
	return m, nil
}

// unrecord gives back the place record took last.
func (c *collector) unrecord() { c.slab = c.slab[:len(c.slab)-1] }

// slabMetas is the most records a slab holds (see collector.record).
const slabMetas = 64

// add puts the admitted hit seq on the page.
func (c *collector) add(seq uint64, m *store.Meta, text hitText) {
	if c.hits == nil && c.p.limit > 0 && !c.p.countOnly {
		// Room for the page at its first hit: growing both lists a hit
		// at a time reallocated each seven times on a page of 50.
		n := min(c.p.limit, slabMetas)
		c.hits, c.texts = make([]*store.Meta, 0, n), make([]hitText, 0, n)
	}
	c.hits = append(c.hits, m)
	if !c.p.countOnly {
		c.texts = append(c.texts, text)
	}
	c.last = seq
	if c.full() {
		c.more = true // possibly; the next page may come back empty
	}
}

// scan confirms every searchable entry in [lo, hi] in request order. The
// sketches are tested a window at a time (growing), so that a page that
// fills early tests few of them.
func (c *collector) scan(ctx context.Context, lo, hi uint64) error {
	if lo > hi || lo == 0 && hi == 0 {
		return nil
	}
	if c.p.probe.Empty() && !c.e.byFilters(c.p) {
		ranges, err := c.e.mayHold(c.p, []store.SeqRange{{Lo: lo, Hi: hi}}, c.st)
		if err != nil {
			return err
		}
		return c.scanRanges(ctx, ranges)
	}
	w := uint64(scanWindow)
	if c.p.limit == 0 {
		w = wholeScanWindow
	}
	return eachWindow(lo, hi, w, c.p.req.NewestFirst, c.full, c.grow, func(a, b uint64) error {
		ranges, err := c.e.mayHold(c.p, []store.SeqRange{{Lo: a, Hi: b}}, c.st)
		if err != nil {
			return err
		}
		return c.scanWindow(ctx, a, b, ranges)
	})
}

// scanWindow confirms ranges, the entries of window [a, b] that passed
// the sketches, and keeps what a count would still have to read when the
// page fills among them (see restOfWindow).
func (c *collector) scanWindow(ctx context.Context, a, b uint64, ranges []store.SeqRange) error {
	if err := c.scanRanges(ctx, ranges); err != nil || !c.full() || c.rest != nil {
		return err
	}
	rest := &restOfWindow{end: b}
	newest := c.p.req.NewestFirst
	if newest {
		rest.end = a
	}
	for _, r := range ranges {
		switch {
		case !newest && r.Hi > c.last:
			r.Lo = max(r.Lo, c.last+1)
		case newest && r.Lo < c.last:
			r.Hi = min(r.Hi, c.last-1)
		default:
			continue
		}
		rest.ranges = append(rest.ranges, r)
	}
	c.rest = rest
	return nil
}

// A scan reads with both cores (the second half of its entries on another
// goroutine while this one reads the first) when it has at least
// parallelMin entries to read and the search has already read parallelAfter
// texts without filling its page: a page that fills early would waste the
// other half's work (first pages of 3-5 character needles: p50 0.93 ->
// 1.52 ms when every long scan was split).
var (
	parallelMin   uint64 = 1024
	parallelAfter        = 512
)

// heldInOrderMax is the longest list of candidates whose texts are all
// held in memory (the chunks at both ends of the history, see
// store.TextsHeld) that this goroutine reads alone: such a text costs no
// Pebble read, and handing the list to two goroutines in turn cost more
// than it saved. In-process, both ways alternating in one process,
// first pages of the benchmark's 3-5 character needles: median ratios
// 0.84-0.88 (p50 196 -> 162 us for those near the median); the other
// groups within 2-4%. With every held list read alone, the needles whose
// first windows hold many candidates were slower (p90 1.67 -> 1.83 ms);
// up to 512, p90 1.95 -> 1.75 ms.
const heldInOrderMax = 512

// scanRanges confirms every searchable entry of ranges (ascending,
// disjoint) in request order, until the page is full. Lists of candidates
// are read by two goroutines taking turns (see scanShared), long scans in
// two halves at once (see scanHalves).
func (c *collector) scanRanges(ctx context.Context, ranges []store.SeqRange) error {
	n := store.Count(ranges)
	switch {
	case c.st.Scanned >= parallelAfter && n >= parallelMin:
		first, second := store.Split(ranges)
		if c.p.req.NewestFirst {
			first, second = second, first
		}
		return c.scanHalves(ctx, first, second)
	case n >= 2 && n <= sharedMax && !c.p.probe.Empty() && (n > heldInOrderMax || !c.e.st.TextsHeld(ranges)):
		// Candidates that passed their sketches: sparse, and most read
		// through a block of their own. (A needle without trigrams
		// reads every entry in order, where one iterator stepping on is
		// cheaper than two seeking; so does a short list whose texts
		// are held in memory, see heldInOrderMax.)
		return c.scanShared(ctx, ranges)
	}
	return c.scanInOrder(ctx, ranges)
}

// scanInOrder is scanRanges on this goroutine alone.
func (c *collector) scanInOrder(ctx context.Context, ranges []store.SeqRange) error {
	var ferr error
	err := c.e.st.ScanTextRanges(ranges, c.p.req.NewestFirst, func(seq uint64, text []byte, held store.Held) bool {
		c.n++
		if c.n%1024 == 0 && ctx.Err() != nil {
			ferr = ctx.Err()
			return false
		}
		c.st.Scanned++
		if _, err := c.offer(seq, text, held); err != nil {
			ferr = err
			return false
		}
		return !c.full()
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// scanHalves reads first (in request order, on this goroutine) and second
// (on another) at once: texts are decompressed by Pebble one block each,
// the larger part of a long scan, and a second core halves it. The other
// goroutine only finds the texts that hold the needle; they are offered
// after first, in order, so hits, order, cursor and counts are exactly
// those of one scan. When first fills the page, second is stopped and its
// finds dropped: its work then was the price of asking it.
func (c *collector) scanHalves(ctx context.Context, first, second []store.SeqRange) error {
	type find struct {
		seq  uint64
		text hitText
	}
	var (
		stop    atomic.Bool
		finds   []find
		scanned int
		nbytes  int64
		done    = make(chan error, 1)
	)
	go func() {
		var ar arena // this goroutine's, for what its finds keep
		n := 0
		err := c.e.st.ScanTextRanges(second, c.p.req.NewestFirst, func(seq uint64, text []byte, held store.Held) bool {
			if n++; n%256 == 0 && (stop.Load() || ctx.Err() != nil) {
				return false
			}
			scanned++
			nbytes += int64(len(text))
			if at := c.p.find.index(text); at >= 0 {
				finds = append(finds, find{seq, c.p.keep(&ar, text, at, held)})
			}
			return true
		})
		if err == nil {
			err = ctx.Err()
		}
		done <- err
	}()
	err := c.scanInOrder(ctx, first)
	if err != nil || c.full() {
		stop.Store(true)
		<-done
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	c.st.Scanned += scanned
	c.st.BytesScanned += nbytes
	for _, f := range finds {
		if _, err := c.acceptKept(f.seq, f.text); err != nil {
			return err
		}
		if c.full() {
			break
		}
	}
	return nil
}

// candidates confirms the index's candidate blocks in [lo, hi] in request
// order, scanning the texts of each block.
func (c *collector) candidates(ctx context.Context, lo, hi uint64) error {
	if c.plans != nil {
		return c.candidatesOfEach(ctx, lo, hi)
	}
	var blocks []index.Block
	if c.plan.Direct {
		blocks = c.plan.Window(lo, hi)
	} else {
		var err error
		if blocks, err = c.e.ix.Candidates(ctx, c.plan.Trigrams, lo, hi); err != nil {
			return err
		}
	}
	c.st.Candidates += len(blocks)
	if len(blocks) == 0 || c.full() {
		return nil
	}
	ranges := make([]store.SeqRange, len(blocks))
	for i, b := range blocks {
		ranges[i] = store.SeqRange{Lo: b.Lo, Hi: b.Hi}
	}
	ranges, err := c.e.mayHold(c.p, ranges, c.st)
	if err != nil {
		return err
	}
	return c.scanWindow(ctx, lo, hi, ranges)
}

// byFilters reports whether p's needle, if it has no trigram, is tested on
// the chunks' filters: it has bytes to test, and the store builds filters
// (a server, after its warm-up has begun).
func (e *Engine) byFilters(p *prepared) bool { return p.probe.Filters() && e.st.Filtered() }

// mayHold narrows ranges to the entries whose trigram sketch passes the
// needle's probe and, in all scope, whose records pass the request's
// filters, counting the others as skipped. (A scoped search filters its
// members before this.) Without the records' test, a filter that few
// entries pass (a time range, a role) was applied only to confirmed hits,
// so a search whose range held nothing read every text that held the
// needle's trigrams: seconds and a gigabyte at a million entries.
func (e *Engine) mayHold(p *prepared, ranges []store.SeqRange, st *Stats) ([]store.SeqRange, error) {
	if len(ranges) == 0 {
		return ranges, nil
	}
	if !p.probe.Empty() || e.byFilters(p) && p.probe.FilterWorthIt() {
		// A needle of one or two characters has no trigram for the
		// sketches, but its bytes are in the chunks' filters (as byte
		// trigrams, a pair or a byte), where chunks have them (a server
		// after its warm-up): a rare one read every text of the history
		// (280 ms at a million entries). Once the filters have stopped
		// ruling chunks out for it (a dense needle), and in a process
		// without filters, its windows are read whole, as before filters
		// (sending them through MayHold there only loaded sketches).
		out, skipped, err := e.mayHoldAny(p, ranges)
		st.Skipped += skipped
		if err != nil {
			return nil, err
		}
		ranges = out
	}
	if p.scoped || p.filter.empty() {
		return ranges, nil
	}
	var out []store.SeqRange
	for _, r := range ranges {
		for seq := r.Lo; seq <= r.Hi; seq++ {
			m, err := e.st.Meta(seq)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !p.filter.match(m) {
				st.Skipped++
				continue
			}
			if n := len(out); n > 0 && out[n-1].Hi == seq-1 {
				out[n-1].Hi = seq
			} else {
				out = append(out, store.SeqRange{Lo: seq, Hi: seq})
			}
		}
	}
	return out, nil
}

// count counts the hits of the request without limit: every one, or with
// hasAfter those after seq after (in the request's order), as a cursor
// there would page them.
func (e *Engine) count(ctx context.Context, p *prepared, st *Stats, hasAfter bool, after uint64) (int, error) {
	q := *p
	q.limit, q.hasAfter, q.after, q.countOnly = 0, hasAfter, after, true
	var tmp Stats
	var hits found
	var err error
	if q.scoped {
		hits, _, _, err = e.scanMembers(ctx, &q, &tmp)
	} else {
		hits, _, _, err = e.searchAll(ctx, &q, &tmp)
	}
	if tmp.Plan != "" && tmp.Plan != st.Plan {
		st.Plan += "; count: " + tmp.Plan
	}
	st.Candidates += tmp.Candidates
	st.Scanned += tmp.Scanned
	st.BytesScanned += tmp.BytesScanned
	st.Skipped += tmp.Skipped
	return len(hits.metas), err
}

// countRanges counts the hits of the request in ranges, entries that
// passed its sketches and filters (see restOfWindow).
func (e *Engine) countRanges(ctx context.Context, p *prepared, st *Stats, ranges []store.SeqRange) (int, error) {
	if len(ranges) == 0 {
		return 0, nil
	}
	q := *p
	q.limit, q.countOnly = 0, true
	var tmp Stats
	c := &collector{e: e, p: &q, st: &tmp}
	defer c.close()
	err := c.scanRanges(ctx, ranges)
	st.Scanned += tmp.Scanned
	st.BytesScanned += tmp.BytesScanned
	return len(c.hits), err
}

// fillHits turns confirmed metas into hits with snippets; it reports whether
// the snippet budget cut any.
//
// What a page's hits hold is allocated for all of them at once: their
// snippets in one slice (each hit's a piece of it; room for 64 hits' at
// first, as a page of thousands runs out of budget long before its end),
// their references in one string. With one of each per hit, a first page
// of 50 made 376 objects; this way 273.
func (e *Engine) fillHits(p *prepared, hits found, budget int, resp *Response) bool {
	truncated := false
	// The least a snippet takes: the needle and a little context (see
	// snippets).
	floor := max(40, utf8.RuneCount(p.find.needle)+10)
	metas := hits.metas
	resp.Hits = slices.Grow(resp.Hits, len(metas))
	snips := make([]Snippet, 0, min(len(metas), 64)*maxSnippets)
	refs := refsOf(metas)
	// The current branch of the last hit's session: a page's hits are
	// mostly of one session or a few in turn.
	var curSession string
	var cur []uint64
	var curErr error
	for i, m := range metas {
		h := Hit{Session: m.Session, Entry: m.ID, Type: m.Type, Role: m.Role, CustomType: m.Extra.CustomType,
			ToolName: m.Extra.ToolName, Timestamp: m.Timestamp, Window: m.Window, Ref: refs[i], Seq: m.Seq, Snippets: []Snippet{}}
		if p.req.Scope == ScopeSession || p.req.Scope == ScopeLineage {
			// The search loaded these trees; hits also name their leaves.
			t := p.trees[m.Session]
			if t == nil {
				if tt, err := e.st.Tree(m.Session); err == nil {
					t = tt
					p.trees[m.Session] = t
				}
			}
			if t != nil {
				h.OnCurrentBranch = t.OnCurrentBranch(m.ID)
				h.Leaves = t.LeavesOf(m.ID)
			}
		} else {
			if i == 0 || m.Session != curSession {
				curSession = m.Session
				cur, curErr = e.st.CurrentBranchSeqs(m.Session)
			}
			if curErr == nil {
				_, h.OnCurrentBranch = slices.BinarySearch(cur, m.Seq)
			}
		}
		h.Matches = hits.texts[i].matches
		// An even share of what is left, but at least one snippet's worth
		// while the budget lasts: with more hits than the budget serves,
		// the first hits (the ones asked for first) get snippets, not the
		// last.
		share := min(max(budget/max(len(metas)-i, 1), floor), max(600, floor))
		if budget < floor {
			truncated = true
		} else {
			var used int
			k := len(snips)
			snips, used = snippets(snips, hits.texts[i].segs, p.find, share)
			h.Snippets = snips[k:len(snips):len(snips)]
			budget -= used
			if len(h.Snippets) < min(h.Matches, maxSnippets) {
				truncated = true
			}
		}
		resp.Hits = append(resp.Hits, h)
	}
	return truncated
}

// refsOf returns Ref of each meta's entry, cut from one string.
func refsOf(metas []*store.Meta) []string {
	const pre, post = refOpen, refClose
	n := 0
	for _, m := range metas {
		n += len(pre) + len(m.ID) + len(post)
	}
	var b strings.Builder
	b.Grow(n)
	for _, m := range metas {
		b.WriteString(pre)
		b.WriteString(m.ID)
		b.WriteString(post)
	}
	all := b.String()
	out := make([]string, len(metas))
	at := 0
	for i, m := range metas {
		l := len(pre) + len(m.ID) + len(post)
		out[i], at = all[at:at+l], at+l
	}
	return out
}

// Ref is how the model cites an entry.
func Ref(id string) string { return refOpen + id + refClose }

// What a reference puts around an entry's id (see Ref).
const refOpen, refClose = "[history entry=", "]"

const maxSnippets = 3

// snippetSegments returns the parts of text that snippets can reach with
// any budget, in order, apart, each with the runes before it: snippets of
// them equal snippets of the whole text.
func snippetSegments(text, needle []byte) []segment {
	segs, _ := hitParts(nil, text, newFinder(needle), bytes.Index(text, needle), 0)
	return segs
}

// hitParts returns the parts of text that snippets can reach (see
// snippetSegments) and how often f's needle occurs in text, counted as
// bytes.Count does (matches that do not overlap, leftmost first), given
// where it first occurs (-1 for nowhere). One pass over the text does
// both: it used to be read once to find the snippets' matches (to its end
// when it held fewer than three) and once more to count.
//
// The snippets' matches are found as snippets finds them, each search
// starting where the widest context of the last match ends (maxContext
// runes past it), up to maxSnippets matches; around each match m it keeps
// the stretch from maxContext runes before m to maxContext runes past a
// needle past that end. snippets, whose contexts are never wider, finds
// each of its matches at one found here or in a stretch after one that
// this search skipped, so within a kept part, with its context. No match
// starts between two parts (the search found none there), and a match
// that would cross a part's end starts within maxContext runes of it, so
// its part and the next are one. Each part is at most a few hundred runes
// and needles, so a hit in a large text keeps little of it. The parts are
// copied, unless held says that nothing ever writes text (see
// prepared.keep): then they are cut from it (first pages of 3-5 character
// needles spent 7% of their CPU on the copies and on zeroing the arena's
// memory for them). When held says text is ASCII alone, its runes are its
// bytes and are not counted (see runeCounter).
//
// The count's matches are where a snippet's search looks first: the
// leftmost match at or after a snippet search's start is the next counted
// match, unless a match the count skipped (one overlapping the counted
// match before) lies between them; only then is it searched for.
func hitParts(a *arena, text []byte, f *finder, first int, held store.Held) ([]segment, int) {
	if f.pat != nil {
		return patternParts(a, text, f.pat, held)
	}
	rc := runeCounter(held.ASCII())
	type span struct{ a, b int }
	var spans [maxSnippets]span
	nspans, found, matches := 0, 0, 0
	n := len(f.needle)
	from, looking := 0, true // the next snippet's match starts at or after from
	prevEnd := 0             // where the counted match before g ends
	// take keeps the part around a snippet's match m.
	take := func(m int) {
		a := rc.back(text, m, maxContext)
		from = rc.on(text, m+n, maxContext)
		b := rc.on(text, min(len(text), from+n), maxContext)
		if nspans > 0 && a <= spans[nspans-1].b {
			spans[nspans-1].b = b
		} else {
			spans[nspans] = span{a, b}
			nspans++
		}
		found++
		looking = found < maxSnippets && from < len(text)
	}
	for g := first; g >= 0; g = f.next(text, g+n) {
		matches++
		for looking && g >= from {
			m := g
			if prevEnd > from {
				m = f.next(text, from)
			}
			take(m)
			if m == g {
				break
			}
		}
		prevEnd = g + n
	}
	// A match overlapping the last counted one, past where the snippets'
	// search starts.
	if looking && prevEnd > from {
		if m := f.next(text, from); m >= 0 {
			take(m)
		}
	}
	// Unless the text is held, the parts are copied into one buffer,
	// which nothing writes to again: snippets cut their strings from it
	// (or from the held text) without copying (see segment).
	var buf []byte
	if !held.Kept() {
		size := 0
		for _, sp := range spans[:nspans] {
			size += sp.b - sp.a
		}
		buf = a.bytesFor(size)
	}
	segs := a.segsFor(nspans)
	runes, at := 0, 0
	for k, sp := range spans[:nspans] {
		runes += rc.count(text[at:sp.a])
		part := text[sp.a:sp.b:sp.b]
		if !held.Kept() {
			start := len(buf)
			buf = append(buf, part...)
			part = buf[start:len(buf):len(buf)]
		}
		segs[k] = segment{text: part, runes: runes, ascii: rc}
		runes += rc.count(part)
		at = sp.b
	}
	return segs, matches
}

// runeCount is utf8.RuneCount (an invalid byte counts as one rune), eight
// bytes at a time through ASCII: a hit's snippets say at which character
// they start, and counting the text before them byte by byte took 9% of
// the CPU of first pages of 3-5 character needles.
func runeCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		// 32 bytes a step while they are ASCII, then 8: a large tool
		// result's hit counts up to its last snippet.
		for len(b) >= 32 && (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[8:])|
			binary.LittleEndian.Uint64(b[16:])|binary.LittleEndian.Uint64(b[24:]))&0x8080808080808080 == 0 {
			n += 32
			b = b[32:]
		}
		for len(b) >= 8 && binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			n += 8
			b = b[8:]
		}
		if len(b) == 0 {
			break
		}
		if b[0] < utf8.RuneSelf {
			n++
			b = b[1:]
			continue
		}
		_, sz := utf8.DecodeRune(b)
		n++
		b = b[sz:]
	}
	return n
}

// runeCounter counts runes as runeCount, runesOn and runesBack do, in a
// text that is ASCII alone when it is true: then a rune is a byte, and
// nothing is read. The store knows which of the texts it holds in memory
// are (store.Held.ASCII); counting the runes of a hit's text before and
// within its snippets, to say at which character they start, was 15-20%
// of the CPU of first pages of 3-5 character needles.
type runeCounter bool

func (ascii runeCounter) count(b []byte) int {
	if ascii {
		return len(b)
	}
	return runeCount(b)
}

func (ascii runeCounter) on(text []byte, at, n int) int {
	if ascii {
		return min(len(text), at+n)
	}
	return runesOn(text, at, n)
}

func (ascii runeCounter) back(text []byte, at, n int) int {
	if ascii {
		return max(0, at-n)
	}
	return runesBack(text, at, n)
}

// runesOn returns the byte offset n runes after at in text (or its end).
// A stretch of ASCII, most text, is stepped over at once: a hit keeps and
// shows up to three matches with 80 characters each side, and decoding
// them rune by rune took 30% of the CPU of first pages of 1-2 character
// needles. In-process, alternating, medians of five runs of each of the
// benchmark's 200 such needles: p50 0.120 -> 0.096 ms (median ratio
// 0.79); the longer needles' groups within 2%.
func runesOn(text []byte, at, n int) int {
	if end := min(len(text), at+n); store.IsASCII(text[at:end]) {
		return end
	}
	for k := 0; k < n && at < len(text); k++ {
		_, sz := utf8.DecodeRune(text[at:])
		at += sz
	}
	return at
}

// runesBack returns the byte offset n runes before at in text (or 0).
func runesBack(text []byte, at, n int) int {
	if start := max(0, at-n); store.IsASCII(text[start:at]) {
		return start
	}
	for k := 0; k < n && at > 0; k++ {
		_, sz := utf8.DecodeLastRune(text[:at])
		at -= sz
	}
	return at
}

// maxContext is the most runes a snippet shows on either side of a match.
const maxContext = 80

// snippets appends to out up to three pieces of a text around matches of
// f's needle, within budget characters in all, from the parts of it in
// segs (the whole text as one segment, or what snippetSegments kept of
// it). It returns out and the characters used. (Matches are found by the
// finder: bytes.Index on the parts, a needle of common bytes being tried
// at most of their positions, was 40% of the snippets' time.)
func snippets(out []Snippet, segs []segment, f *finder, budget int) ([]Snippet, int) {
	if f.pat != nil {
		return patternSnippets(out, segs, budget)
	}
	needle := f.needle
	start := len(out)
	used := 0
	nl := runeCount(needle)
	// The next search starts in segment seg at byte from.
	seg, from := 0, 0
	for len(out)-start < maxSnippets && seg < len(segs) {
		text, rc := segs[seg].text, segs[seg].ascii
		i := f.next(text, from)
		if i < 0 {
			seg, from = seg+1, 0
			continue
		}
		room := budget - used
		if room < nl+10 {
			break
		}
		ctxChars := (room/max(maxSnippets-(len(out)-start), 1) - nl) / 2
		ctxChars = max(min(ctxChars, maxContext), 5)
		s := rc.back(text, i, ctxChars)
		end := rc.on(text, i+len(needle), ctxChars)
		piece := text[s:end]
		out = append(out, Snippet{Text: unsafe.String(unsafe.SliceData(piece), len(piece)), MatchStart: i - s, MatchEnd: i - s + len(needle),
			Offset: segs[seg].runes + rc.count(text[:s])})
		used += rc.count(piece)
		from = end
	}
	return out, used
}
