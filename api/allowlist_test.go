package api

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// hiddenLines is a session holding one entry of each kind the history
// allowlist keeps from the model, each carrying a SECRET marker, between
// two entries the model may see.
func hiddenLines(sid string) []string {
	return []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T10:00:00.000Z","cwd":"/home/dev/shop"}`, sid),
		`{"type":"message","id":"v1","parentId":null,"timestamp":"2026-01-02T10:00:01.000Z","message":{"role":"user","content":"visible question"}}`,
		`{"type":"message","id":"x1","parentId":"v1","timestamp":"2026-01-02T10:00:02.000Z","message":{"role":"bashExecution","command":"echo SECRET_BANG_COMMAND","output":"SECRET_BANG_OUTPUT","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true}}`,
		`{"type":"custom","id":"x2","parentId":"x1","timestamp":"2026-01-02T10:00:03.000Z","customType":"other-extension/state","data":{"apiKey":"SECRET_EXTENSION_STATE"}}`,
		`{"type":"model_change","id":"x3","parentId":"x2","timestamp":"2026-01-02T10:00:04.000Z","provider":"SECRET_PROVIDER","modelId":"SECRET_MODEL"}`,
		`{"type":"thinking_level_change","id":"x4","parentId":"x3","timestamp":"2026-01-02T10:00:05.000Z","thinkingLevel":"SECRET_THINKING"}`,
		`{"type":"message","id":"x5","parentId":"x4","timestamp":"2026-01-02T10:00:06.000Z","message":{"role":"toolResult","toolCallId":"h1","toolName":"history","content":[{"type":"text","text":"SECRET_HISTORY_ECHO"}],"isError":false}}`,
		`{"type":"message","id":"s1","parentId":"x5","timestamp":"2026-01-02T10:00:06.500Z","message":{"role":"system","content":"standing instructions","sections":{"tools":"use the tools"}}}`,
		`{"type":"message","id":"v2","parentId":"s1","timestamp":"2026-01-02T10:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"visible answer"}]}}`,
	}
}

var hiddenIDs = []string{"x1", "x2", "x3", "x4", "x5"}

// TestModelFacingRoutesHideWhatTheAllowlistHides asks every route the
// model's history tool uses, with allowlisted set, for a session holding
// an entry of each hidden kind: no response shows any of them, by id or by
// content, and asking for one by id or kind is refused.
func TestModelFacingRoutesHideWhatTheAllowlistHides(t *testing.T) {
	h := newHarness(t)
	writeJournal(t, h.sessions, "--home-dev-shop--", "hid", hiddenLines("hid"))
	if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	leak := func(t *testing.T, route, body string) {
		t.Helper()
		if strings.Contains(body, "SECRET") {
			t.Errorf("%s shows a hidden entry's content: %s", route, body)
		}
		for _, id := range hiddenIDs {
			if strings.Contains(body, `"`+id+`"`) {
				t.Errorf("%s lists hidden entry %s: %s", route, id, body)
			}
		}
	}
	ok := []string{
		"/v1/sessions/hid/entries?allowlisted=true",
		"/v1/sessions/hid/entries?allowlisted=true&allBranches=true",
		"/v1/sessions/hid/entries?allowlisted=true&newestFirst=true",
		"/v1/sessions/hid/entries?allowlisted=true&window=1",
		"/v1/sessions/hid/entries?allowlisted=true&types=message,custom",
		"/v1/sessions/hid/entries?allowlisted=true&roles=bashExecution,toolResult",
		"/v1/sessions/hid/entries/v1?allowlisted=true&context=10",
		"/v1/sessions/hid/entries/v2?allowlisted=true&context=10&raw=true",
		"/v1/sessions/hid/windows?allowlisted=true",
	}
	for _, needle := range []string{"SECRET", "SECRET_BANG_COMMAND", "SECRET_BANG_OUTPUT", "SECRET_EXTENSION_STATE", "SECRET_MODEL", "SECRET_HISTORY_ECHO"} {
		for _, scope := range []string{"all", "session"} {
			q := "/v1/search?needle=" + url.QueryEscape(needle) + "&scope=" + scope
			if scope == "session" {
				q += "&session=hid"
			}
			ok = append(ok, q)
		}
	}
	for _, path := range ok {
		t.Run(path, func(t *testing.T) {
			w := h.on(t).do(req{Path: path})
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			leak(t, path, w.Body.String())
		})
	}
	// The visible entries are still there, a Pi 1.6 system message (listed,
	// not searched) among them.
	if w := h.do(req{Path: "/v1/sessions/hid/entries?allowlisted=true"}); !strings.Contains(w.Body.String(), `"v1"`) || !strings.Contains(w.Body.String(), `"v2"`) ||
		!strings.Contains(w.Body.String(), `"s1"`) {
		t.Errorf("the allowlisted list lost the visible entries: %s", w.Body)
	}
	if w := h.do(req{Path: "/v1/sessions/hid/entries?allowlisted=true&roles=system"}); w.Code != 200 || !strings.Contains(w.Body.String(), `"s1"`) {
		t.Errorf("an allowlisted list of system messages: %d %s", w.Code, w.Body)
	}
	refused := []string{
		"/v1/sessions/hid/entries?allowlisted=true&types=model_change",
		"/v1/sessions/hid/entries?allowlisted=true&types=thinking_level_change",
		"/v1/sessions/hid/entries?allowlisted=true&roles=bogus",
	}
	for _, id := range hiddenIDs {
		refused = append(refused, "/v1/sessions/hid/entries/"+id+"?allowlisted=true", "/v1/sessions/hid/entries/"+id+"?allowlisted=true&raw=true")
	}
	for _, path := range refused {
		t.Run(path, func(t *testing.T) {
			w := h.on(t).do(req{Path: path})
			if w.Code != 400 {
				t.Errorf("status %d; want 400: %s", w.Code, w.Body)
			}
			leak(t, path, w.Body.String())
		})
	}
	// People (the CLI, the web UI) see everything.
	if w := h.do(req{Path: "/v1/sessions/hid/entries"}); !strings.Contains(w.Body.String(), `"x3"`) {
		t.Errorf("the unfiltered list hides entries from people: %s", w.Body)
	}
}

// TestSearchTakesTheWebUIsNameForTheNeedle: GET /v1/search?q= answers as
// ?needle= does (the web UI's addresses say q); both at once must agree.
func TestSearchTakesTheWebUIsNameForTheNeedle(t *testing.T) {
	h := newHarness(t)
	a := h.do(req{Path: "/v1/search?needle=ErrCartEmpty&scope=all"})
	b := h.do(req{Path: "/v1/search?q=ErrCartEmpty&scope=all"})
	strip := func(s string) string { return s[:strings.Index(s, `"stats"`)] }
	if a.Code != 200 || b.Code != 200 || strip(a.Body.String()) != strip(b.Body.String()) || !strings.Contains(b.Body.String(), `"entry":"m1"`) {
		t.Errorf("needle and q differ:\n%d %s\n%d %s", a.Code, a.Body, b.Code, b.Body)
	}
	if w := h.do(req{Path: "/v1/search?q=x&needle=y"}); w.Code != 400 || !strings.Contains(w.Body.String(), `"param":"q"`) {
		t.Errorf("q and needle both: %d %s", w.Code, w.Body)
	}
}
