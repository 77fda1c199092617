package index

import (
	"strings"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// titleScan is how many entries from a session's start are looked at for
// its first user message (a session's first entries are its model and
// thinking level; a session that begins with more is rare).
const titleScan = 64

// SessionTitle is what a session is called for people: its name when it
// has one (Pi's /name, as given), else the first line of its first user
// message among its first entries, shortened to journal.TitleRunes
// characters; "" when it has neither yet. Search lists and the session
// word index (Sessions) both call it, so a session has one title.
func SessionTitle(st *store.Store, si *store.SessionInfo) string {
	if strings.TrimSpace(si.Name) != "" {
		return si.Name // whole: lists cut it to their width, hovers show it all
	}
	var first uint64
	n := 0
	st.WalkSessionMetas(si.ID, func(m *store.Meta) bool {
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
	text, err := st.Text(first)
	if err != nil {
		return ""
	}
	return journal.TitleLine(text, journal.TitleRunes)
}
