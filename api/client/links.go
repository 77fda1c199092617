package client

import (
	"net/url"
	"strings"
)

// The web UI's pages are routes in its URL's fragment (#/s/ID?e=ENTRY), so
// that a page is one address a person can open, bookmark or paste.

// SessionURL is the web UI's page of a session, on the server at base.
func SessionURL(base, session string) string {
	return strings.TrimRight(base, "/") + "/#/s/" + url.PathEscape(session)
}

// EntryURL is the web UI's page of a session scrolled to one of its
// entries, on the server at base.
func EntryURL(base, session, entry string) string {
	return SessionURL(base, session) + "?" + url.Values{"e": {entry}}.Encode()
}
