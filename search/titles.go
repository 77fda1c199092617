package search

import (
	"context"
	"fmt"
	"sync"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// TitleRunes is the most characters a title taken from a first message
// keeps (an ellipsis marks the cut).
const TitleRunes = journal.TitleRunes

// titleCache remembers, per session, its title and project as long as
// the session is not written to (store.SessionGeneration): search hits
// are described without reading each session's record again. The zero
// value is ready.
type titleCache struct {
	mu sync.Mutex
	m  map[string]about
}

// about is what a hit says of its session.
type about struct {
	gen        uint64
	title, cwd string
}

// Title is what a session is called for people (index.SessionTitle),
// cached while the session is unchanged.
func (e *Engine) Title(si *store.SessionInfo) string {
	gen := e.st.SessionGeneration(si.ID) // read first: a write meanwhile makes the entry stale, not wrong
	if a, ok := e.cachedAbout(si.ID, gen); ok {
		return a.title
	}
	a := about{gen: gen, title: index.SessionTitle(e.st, si), cwd: si.Cwd}
	e.titles.mu.Lock()
	if e.titles.m == nil {
		e.titles.m = map[string]about{}
	}
	e.titles.m[si.ID] = a
	e.titles.mu.Unlock()
	return a.title
}

func (e *Engine) cachedAbout(sid string, gen uint64) (about, bool) {
	e.titles.mu.Lock()
	defer e.titles.mu.Unlock()
	a, ok := e.titles.m[sid]
	return a, ok && a.gen == gen
}

// describeHits gives each hit its session's title and project: from the
// cache while the session is unchanged, else from its record once (the one
// in reads when it is as current: fillHits read it).
func (e *Engine) describeHits(hits []Hit, reads map[string]*store.SessionRead) {
	for i := range hits {
		h := &hits[i]
		gen := e.st.SessionGeneration(h.Session)
		a, ok := e.cachedAbout(h.Session, gen)
		if !ok {
			var si *store.SessionInfo
			var err error
			if r := reads[h.Session]; r != nil && r.Generation == gen {
				si = r.Info
			} else {
				si, err = e.st.Session(h.Session)
			}
			if err == nil {
				a = about{title: e.Title(si), cwd: si.Cwd}
			}
		}
		h.Title, h.Cwd = a.title, a.cwd
	}
}

// WarmTitles works out every session's title and project into the cache
// (Title), so that the first searches after a server starts describe their
// hits without reading each session's record and first message: the
// bench's first searches read those for most of their hits. It returns how
// many sessions it did, and stops when ctx ends.
func (e *Engine) WarmTitles(ctx context.Context) (int, error) {
	sessions, err := e.st.Sessions()
	if err != nil {
		return 0, fmt.Errorf("search: read the sessions to warm their titles: %w", err)
	}
	for i, si := range sessions {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		e.Title(si)
	}
	return len(sessions), nil
}
