package index

import (
	"strings"

	"github.com/pi-history/pi-history/store"
)

// SessionTitle is what a session is called for people: its name when it
// has one (Pi's /name, as given), else the first line of its first user
// message among its first entries, shortened to journal.TitleRunes
// characters; "" when it has neither yet. Search lists and the session
// word index (Sessions) both call it, so a session has one title.
func SessionTitle(st *store.Store, si *store.SessionInfo) string {
	if strings.TrimSpace(si.Name) != "" {
		return si.Name // whole: lists cut it to their width, hovers show it all
	}
	title, err := st.FirstTitle(si)
	if err != nil {
		return ""
	}
	return title
}
