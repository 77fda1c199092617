package search

import (
	"strings"
	"sync"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// TitleRunes is the most characters a title taken from a first message
// keeps (an ellipsis marks the cut).
const TitleRunes = journal.TitleRunes

// titleScan is how many entries from a session's start are looked at for
// its first user message (a session's first entries are its model and
// thinking level; a session that begins with more is rare).
const titleScan = 64

// titleCache remembers the titles taken from sessions' first user
// messages. A session's first user message does not change while its
// header does not (a rewritten journal is a new header), so an entry is
// kept under the header it was found with. The zero value is ready.
type titleCache struct {
	mu sync.Mutex
	m  map[string]cachedTitle
}

type cachedTitle struct{ header, title string }

// Title is what a session is called for people: its name when it has one
// (Pi's /name, as given), else the first line of its first user message, shortened
// to TitleRunes characters; "" when it has neither yet.
func (e *Engine) Title(si *store.SessionInfo) string {
	if strings.TrimSpace(si.Name) != "" {
		return si.Name // whole: lists cut it to their width, hovers show it all
	}
	e.titles.mu.Lock()
	c, ok := e.titles.m[si.ID]
	e.titles.mu.Unlock()
	if ok && c.header == si.Header {
		return c.title
	}
	var first uint64
	n := 0
	e.st.WalkSessionMetas(si.ID, func(m *store.Meta) bool {
		n++
		if m.Type == "message" && m.Role == "user" {
			first = m.Seq
			return false
		}
		return n < titleScan
	})
	if first == 0 {
		return ""
	}
	text, err := e.st.Text(first)
	if err != nil {
		return ""
	}
	title := journal.TitleLine(text, TitleRunes)
	if title == "" {
		return ""
	}
	e.titles.mu.Lock()
	if e.titles.m == nil {
		e.titles.m = map[string]cachedTitle{}
	}
	e.titles.m[si.ID] = cachedTitle{header: si.Header, title: title}
	e.titles.mu.Unlock()
	return title
}

// describeHits gives each hit its session's title and project, looking
// each session up once.
func (e *Engine) describeHits(hits []Hit) {
	type about struct{ title, cwd string }
	seen := map[string]about{}
	for i := range hits {
		h := &hits[i]
		a, ok := seen[h.Session]
		if !ok {
			if si, err := e.st.Session(h.Session); err == nil {
				a = about{title: e.Title(si), cwd: si.Cwd}
			}
			seen[h.Session] = a
		}
		h.Title, h.Cwd = a.title, a.cwd
	}
}
