package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/api/client"
)

// TestSessionsMatchRanksByWords: GET /v1/sessions?match=WORDS lists the
// sessions whose words match, best first, each with its score and the
// stretch that matched; a session written since is found at the next
// request; without match the listing is the whole one, with no scores.
func TestSessionsMatchRanksByWords(t *testing.T) {
	h := newHarness(t)
	billing := writeJournal(t, h.sessions, "--home-dev-billing--", "s2", []string{
		`{"type":"session","version":3,"id":"s2","timestamp":"2026-01-02T10:00:00.000Z","cwd":"/home/dev/billing"}`,
		userLine("u1", "", "Deploy the billing service to staging"),
	})
	if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, query string) []string {
		t.Helper()
		var ss client.SessionsResponse
		h.on(t).ok(h.do(req{Path: "/v1/sessions?" + query}), &ss)
		ids := []string{}
		for _, s := range ss.Sessions {
			if strings.Contains(query, "match=") && (s.Score <= 0 || s.Match == "" || s.MatchField == "") {
				t.Errorf("%s: session %s carries no score or match: %+v", query, s.ID, s)
			}
			if !strings.Contains(query, "match=") && (s.Score != 0 || s.Match != "") {
				t.Errorf("%s: the plain listing carries a match: %+v", query, s)
			}
			ids = append(ids, s.ID)
		}
		return ids
	}
	for _, c := range []struct{ name, query, want string }{
		{"a title word", "match=checkout", "s1"},
		{"a stem of a user word", "match=" + url.QueryEscape("deploying"), "s2"},
		{"either word, both sessions", "match=" + url.QueryEscape("checkout billing"), "s1 s2|s2 s1"},
		{"limit", "match=" + url.QueryEscape("checkout billing") + "&limit=1", "s1|s2"},
		{"no session holds it", "match=kubernetes", ""},
		{"no match: every session, newest first", "", "s2 s1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(get(t, c.query), " ")
			if !strings.Contains("|"+c.want+"|", "|"+got+"|") {
				t.Errorf("GET /v1/sessions?%s = %q, want %q", c.query, got, c.want)
			}
		})
	}
	appendLines(t, billing, userLine("u2", "u1", "then email the invoice to the customer"))
	if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	if got := get(t, "match=invoice"); strings.Join(got, " ") != "s2" {
		t.Errorf("after a new user message, match=invoice = %q, want s2", got)
	}
}

// TestSessionsMatchRefusesBadQueries: what is not a word query is a 400
// problem naming its parameter.
func TestSessionsMatchRefusesBadQueries(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ name, query, param string }{
		{"empty", "match=", "match"},
		{"blank", "match=%20%20", "match"},
		{"an unclosed phrase", "match=" + url.QueryEscape(`title:"checkout`), "match"},
		{"too long", "match=" + strings.Repeat("word+", 300), "match"},
		{"given twice", "match=a&match=b", "match"},
		{"a limit without match", "limit=5", "limit"},
		{"a limit of nothing", "match=a&limit=0", "limit"},
		{"too many asked for", "match=a&limit=1001", "limit"},
		{"a limit that is no number", "match=a&limit=ten", "limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.on(t).problem(h.do(req{Path: "/v1/sessions?" + c.query}), http.StatusBadRequest, c.param)
		})
	}
}
