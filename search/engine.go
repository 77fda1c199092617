package search

import (
	"cmp"
	"context"
	"math"
	"time"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/store"
)

// Engine answers requests over a store and its index.
type Engine struct {
	st     *store.Store
	ix     *index.Index
	opts   Options
	titles titleCache // sessions' titles from their first messages
}

// Options tune an Engine; the zero value of a field means its default.
// Tests set them to run configurations side by side.
type Options struct {
	// ParallelMin and ParallelAfter: a scan reads with both cores (the
	// second half of its entries on another goroutine) when it has at
	// least ParallelMin entries to read (default 1,024) and the search
	// has already read ParallelAfter texts (default 512) without filling
	// its page: a page that fills early would waste the other half's
	// work. A negative ParallelAfter means 0.
	ParallelMin   uint64
	ParallelAfter int
	// PageHits is the size of SearchPages's pages (default 10,000):
	// large enough that starting each page again costs little, small
	// enough that a page's hits and their texts' parts take a few
	// megabytes.
	PageHits int
}

func (o Options) withDefaults() Options {
	o.ParallelMin = cmp.Or(o.ParallelMin, 1024)
	switch {
	case o.ParallelAfter == 0:
		o.ParallelAfter = 512
	case o.ParallelAfter < 0:
		o.ParallelAfter = 0
	}
	o.PageHits = cmp.Or(o.PageHits, 10000)
	return o
}

// New returns an Engine with the default Options. ix may be nil: every
// search then reads every text.
func New(st *store.Store, ix *index.Index) *Engine { return NewWith(st, ix, Options{}) }

// NewWith returns an Engine tuned by o.
func NewWith(st *store.Store, ix *index.Index, o Options) *Engine {
	return &Engine{st: st, ix: ix, opts: o.withDefaults()}
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
	sp, err := e.scanPage(ctx, p, start)
	if err != nil {
		return nil, 0, err
	}
	e.finishPage(sp, budget)
	return sp.resp, sp.last, nil
}

// scannedPage is a page whose hits are found (and counted, when asked),
// before their snippets and titles are worked out (finishPage).
type scannedPage struct {
	p     *prepared
	resp  *Response
	hits  found
	last  uint64 // the seq of the page's last hit
	start time.Time
}

// scanPage finds the hits of p's page, and counts them when asked.
func (e *Engine) scanPage(ctx context.Context, p *prepared, start time.Time) (*scannedPage, error) {
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
		return nil, err
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
			return nil, err
		}
		resp.Total = &n
	}
	return &scannedPage{p: p, resp: resp, hits: hits, last: last, start: start}, nil
}

// finishPage works out the snippets (within budget characters) and titles
// of sp's hits.
func (e *Engine) finishPage(sp *scannedPage, budget int) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	// The session records fillHits read to learn branches, for
	// describeHits to title hits with.
	reads := map[string]*store.SessionRead{}
	resp := sp.resp
	resp.Truncated = e.fillHits(sp.p, sp.hits, budget, resp, reads)
	e.describeHits(resp.Hits, reads)
	resp.Stats.TookMs = float64(time.Since(sp.start).Microseconds()) / 1000
}

// SearchPages runs a literal search and hands its answer to fn a page at a
// time. Without All that is one page, as Search gives it. With All it is
// every hit in pages of Options.PageHits (see eachPage). The snippet
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
	left := budgetOf(req)
	return e.eachPage(ctx, req, func(used int) int {
		left -= used
		return max(left, 1) // a budget of 0 would mean the default: 1 leaves no room
	}, fn)
}

// ListAll hands every hit of req to fn in pages of Options.PageHits, as
// SearchPages does with All, but each page gets a snippet budget of its
// own: the request's (or the default) for every MaxLimit hits of the
// page, as much in all as the same hits asked for a MaxLimit page at a
// time (a page gives its budget to its first hits, so the hits with
// snippets are the first of each larger page). For a caller that prints
// every hit as it comes (the one-shot CLI): asking MaxLimit hits at a time
// instead restarts the search every page, and a page's restart costs
// about as much as reading its texts.
func (e *Engine) ListAll(ctx context.Context, req *Request, fn func(*Response) error) error {
	per := int(min(int64(budgetOf(req))*int64(e.opts.PageHits)/MaxLimit, math.MaxInt32))
	per = max(per, 1)
	return e.eachPage(ctx, req, func(int) int { return per }, fn)
}

// budgetOf is the snippet budget req asks for, or the default.
func budgetOf(req *Request) int {
	if req.Budget <= 0 {
		return DefaultBudget
	}
	return req.Budget
}

// eachPage hands every hit of req to fn in pages of Options.PageHits, each
// continuing from the last's cursor (so no hit is repeated or missed while
// entries arrive; in branch scope the branch stays that of the first
// page), so that the caller need hold only one page however many hits
// there are. budget gives each page's snippet budget, told the characters
// the snippets of the page before used (0 for the first).
//
// The next page's hits are found on another goroutine while this one
// works out a page's snippets and titles and hands it to fn: finding them
// keeps both cores busy only part of the time. At most two pages are
// held, one being found and one being finished or handed over.
func (e *Engine) eachPage(ctx context.Context, req *Request, budget func(used int) int, fn func(*Response) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scanned := make(chan *scannedPage)
	scanErr := make(chan error, 1)
	go func() {
		defer close(scanned)
		scanErr <- e.scanPages(ctx, req, scanned)
	}()
	used := 0
	for sp := range scanned {
		e.finishPage(sp, budget(used))
		used = snippetChars(sp.resp)
		if err := fn(sp.resp); err != nil {
			cancel() // the page being found is given up
			for range scanned {
			}
			return err
		}
	}
	return <-scanErr
}

// scanPages finds the hits of req's pages in turn and hands each to
// scanned, until the last page or until ctx ends.
func (e *Engine) scanPages(ctx context.Context, req *Request, scanned chan<- *scannedPage) error {
	prepare := func(page Request) (*prepared, error) {
		page.All, page.Limit = false, 0
		p, err := e.prepare(&page)
		if err == nil {
			p.limit = e.opts.PageHits
		}
		return p, err
	}
	p, err := prepare(*req)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err // the caller has gone: no page more
		}
		sp, err := e.scanPage(ctx, p, time.Now())
		if err != nil {
			return err
		}
		cursor, last := sp.resp.Cursor, sp.last
		select {
		case scanned <- sp:
		case <-ctx.Done():
			return ctx.Err()
		}
		if cursor == "" {
			return nil
		}
		next := *p.req
		next.Count = false
		width := coveredBy(p, last, e.st.LastSeq())
		if next.Scope == ScopeBranch {
			// A branch stays the one of the first page: working it out
			// again would follow a current leaf that moved to another
			// branch midway and mix two branches' hits.
			np := *p
			np.req, np.after, np.hasAfter = &next, last, true
			p = &np
		} else {
			// Other scopes are worked out again from the cursor, so that
			// entries (and sessions, branches, forks) that arrived
			// meanwhile are searched too.
			next.Cursor = cursor
			if p, err = prepare(next); err != nil {
				return err
			}
		}
		// A page after the first starts with a window an eighth wider
		// than the seqs the last page spanned, read with both cores at
		// once (see collector.scan): most such pages fill within it,
		// where growing from a small window read the first thousands of
		// candidates on one core.
		p.firstWindow = width + width/8
	}
}

// coveredBy is how many seqs p's page spanned, from where it started to
// last, the seq of its last hit (lastSeq the store's last seq).
func coveredBy(p *prepared, last, lastSeq uint64) uint64 {
	switch {
	case p.req.NewestFirst && p.hasAfter:
		return p.after - min(last, p.after)
	case p.req.NewestFirst:
		return lastSeq + 1 - min(last, lastSeq+1)
	case p.hasAfter:
		return last - min(last, p.after)
	default:
		return last
	}
}

// snippetChars is how many characters the snippets of resp's hits hold.
func snippetChars(resp *Response) int {
	used := 0
	for _, h := range resp.Hits {
		for _, sn := range h.Snippets {
			used += utf8.RuneCountInString(sn.Text)
		}
	}
	return used
}
