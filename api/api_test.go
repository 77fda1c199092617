package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

var _ Engine = (*search.Engine)(nil)

func TestOpenAPIMatchesRoutes(t *testing.T) {
	h := newHarness(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	served := map[string]bool{}
	err := chi.Walk(h.srv.Router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		if route == "" {
			route = "/"
		}
		served[method+" "+strings.ReplaceAll(route, "/*/", "/")] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes served but not documented in openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("routes documented but not served: %v", extra)
	}
	// Every $ref must resolve.
	var all map[string]any
	json.Unmarshal(openAPIDoc, &all)
	for _, ref := range refs(all) {
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		var cur any = all
		for _, p := range parts {
			m, ok := cur.(map[string]any)
			if !ok || m[p] == nil {
				t.Errorf("unresolved $ref %s", ref)
				break
			}
			cur = m[p]
		}
	}
	// And the document is what /v1/openapi.json serves.
	w := h.do(req{Path: "/v1/openapi.json"})
	if w.Code != 200 || w.Body.String() != string(openAPIDoc) {
		t.Errorf("/v1/openapi.json: status %d, %d bytes", w.Code, w.Body.Len())
	}
}

func refs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, refs(e)...)
		}
	}
	return out
}

func TestHealthzNeedsNoToken(t *testing.T) {
	h := newHarness(t)
	var hl client.Health
	h.ok(h.do(req{Path: "/healthz", NoAuth: true}), &hl)
	if hl.Status != "ok" {
		t.Errorf("status %q", hl.Status)
	}
	// A route without query parameters says so, rather than "known: ".
	if p := h.problem(h.do(req{Path: "/v1/stats?limit=2"}), 400, "limit"); !strings.Contains(p.Detail, "takes none") {
		t.Errorf("an unknown parameter of a route without any: %q", p.Detail)
	}
	// The Host check still applies.
	h.problem(h.do(req{Path: "/healthz", NoAuth: true, Header: map[string]string{"Host": "evil.example:7314"}}), 403, "Host")
	// A challenge is answered with the proof that the server holds the
	// token, computed without it being sent.
	c := strings.Repeat("ab", client.ChallengeBytes)
	h.ok(h.do(req{Path: "/healthz?challenge=" + c, NoAuth: true}), &hl)
	if hl.Proof != client.Proof(h.token, testAddr, c) || hl.Proof == client.Proof("other", testAddr, c) {
		t.Errorf("proof %q for challenge %s", hl.Proof, c)
	}
	// The proof covers the address the request named, so it is no good to
	// a program on another port that relays the challenge here.
	h.ok(h.do(req{Path: "/healthz?challenge=" + c, NoAuth: true, Header: map[string]string{"Host": "localhost:7314"}}), &hl)
	if hl.Proof != client.Proof(h.token, "localhost:7314", c) || hl.Proof == client.Proof(h.token, testAddr, c) {
		t.Errorf("proof %q for challenge %s sent to localhost:7314", hl.Proof, c)
	}
	for _, q := range []string{"challenge=abc", "challenge=" + strings.Repeat("AB", 16), "challenge=" + strings.Repeat("ab", 65), "challenge=" + c + "&challenge=" + c, "x=1"} {
		if w := h.do(req{Path: "/healthz?" + q, NoAuth: true}); w.Code != 400 {
			t.Errorf("/healthz?%s: %d, want 400", q, w.Code)
		}
	}
}

func TestAuthentication(t *testing.T) {
	h := newHarness(t)
	cookieOK := func(r *http.Request, v string) bool { return v == "good-cookie" }
	cases := []struct {
		name   string
		r      req
		cookie CookieValidator
		status int
		param  string
	}{
		{"no token", req{Path: "/v1/stats", NoAuth: true}, nil, 401, "Authorization"},
		{"wrong token", req{Path: "/v1/stats", Header: map[string]string{"Authorization": "Bearer nope"}}, nil, 401, "Authorization"},
		{"basic auth", req{Path: "/v1/stats", Header: map[string]string{"Authorization": "Basic " + h.token}}, nil, 401, "Authorization"},
		{"token without scheme", req{Path: "/v1/stats", Header: map[string]string{"Authorization": h.token}}, nil, 401, "Authorization"},
		{"lower-case scheme", req{Path: "/v1/stats", Header: map[string]string{"Authorization": "bearer " + h.token}}, nil, 200, ""},
		{"metrics need a token", req{Path: "/metrics", NoAuth: true}, nil, 401, "Authorization"},
		{"unknown /v1 route needs a token first", req{Path: "/v1/nothing", NoAuth: true}, nil, 401, ""},
		{"openapi needs no token (it holds no history)", req{Path: "/v1/openapi.json", NoAuth: true}, nil, 200, ""},
		{"openapi still refuses a foreign Host", req{Path: "/v1/openapi.json", NoAuth: true, Header: map[string]string{"Host": "evil.example:7314"}}, nil, 403, ""},
		{"cookie without a validator", req{Path: "/v1/stats", NoAuth: true, Header: map[string]string{"Cookie": CookieName + "=good-cookie"}}, nil, 401, ""},
		{"good cookie", req{Path: "/v1/stats", NoAuth: true, Header: map[string]string{"Cookie": CookieName + "=good-cookie"}}, cookieOK, 200, ""},
		{"bad cookie", req{Path: "/v1/stats", NoAuth: true, Header: map[string]string{"Cookie": CookieName + "=forged"}}, cookieOK, 401, ""},
		{"wrong token is not rescued by a cookie", req{Path: "/v1/stats", Header: map[string]string{"Authorization": "Bearer nope", "Cookie": CookieName + "=good-cookie"}}, cookieOK, 401, ""},
		{"cookie POST without Origin", req{Method: "POST", Path: "/v1/search", Body: `{"needle":"x"}`, NoAuth: true,
			Header: map[string]string{"Cookie": CookieName + "=good-cookie"}}, cookieOK, 403, "Origin"},
		{"cookie POST same-origin", req{Method: "POST", Path: "/v1/search", Body: `{"needle":"x"}`, NoAuth: true,
			Header: map[string]string{"Cookie": CookieName + "=good-cookie", "Origin": "http://" + testAddr, "Sec-Fetch-Site": "same-origin"}}, cookieOK, 200, ""},
		// The web UI's download links carry the page's key in the query;
		// the validator checks it and the route never sees it.
		{"cookie with the page's key in a download link", req{Path: "/v1/sessions/s1/export?format=jsonl&" + UIKeyParam + "=k", NoAuth: true,
			Header: map[string]string{"Cookie": CookieName + "=good-cookie"}}, func(r *http.Request, v string) bool {
			return v == "good-cookie" && r.URL.Query().Get(UIKeyParam) == "k"
		}, 200, ""},
		{"cookie from another port of localhost", req{Path: "/v1/stats", NoAuth: true,
			Header: map[string]string{"Cookie": CookieName + "=good-cookie", "Sec-Fetch-Site": "same-site"}}, cookieOK, 403, "Sec-Fetch-Site"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			h.srv.Auth().SetCookieValidator(c.cookie)
			w := h.do(c.r)
			if c.status == 200 {
				h.ok(w, nil)
				return
			}
			h.problem(w, c.status, c.param)
			if c.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(w.Body.String(), h.token) {
				t.Error("the problem document reveals the token")
			}
		})
	}
}

// TestEntryNavigationsOnly: from another site (a link, or the file page
// 'pi-history open' writes) a browser may open the web UI's page and its
// login link, as top-level navigations; nothing else.
func TestEntryNavigationsOnly(t *testing.T) {
	nav := map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		want         bool
	}{
		{"GET", "/", nav, true},
		{"GET", "/ui/login?code=x", nav, true},
		{"POST", "/ui/login", nav, false},
		{"GET", "/ui/data/sessions", nav, false},
		{"GET", "/v1/stats", nav, false},
		{"GET", "/", map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, false},
		{"GET", "/", map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, false},
		{"GET", "/", nil, false},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := entryNavigation(r); got != c.want {
			t.Errorf("%s %s %v: %v, want %v", c.method, c.path, c.hdr, got, c.want)
		}
	}
}

func TestHostAndOriginChecks(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.AllowedHosts = []string{"devbox.lan"} })
	before, n := h.svc.Store.LastSeq(), 1
	push := func(hdr map[string]string) req {
		return req{Method: "POST", Path: "/v1/sessions/s1/entries", Body: client.PushRequest{Lines: []string{userLine("x1", "l1", "pushed")}}, Header: hdr}
	}
	cases := []struct {
		name   string
		r      req
		status int
		param  string
	}{
		{"rebinding host", req{Path: "/v1/stats", Header: map[string]string{"Host": "attacker.example:7314"}}, 403, "Host"},
		{"right name, wrong port", req{Path: "/v1/stats", Header: map[string]string{"Host": "127.0.0.1:7315"}}, 403, "Host"},
		{"no port", req{Path: "/v1/stats", Header: map[string]string{"Host": "localhost"}}, 403, "Host"},
		{"localhost", req{Path: "/v1/stats", Header: map[string]string{"Host": "localhost:7314"}}, 200, ""},
		{"LOCALHOST", req{Path: "/v1/stats", Header: map[string]string{"Host": "LOCALHOST:7314"}}, 200, ""},
		{"ipv6 loopback", req{Path: "/v1/stats", Header: map[string]string{"Host": "[::1]:7314"}}, 200, ""},
		{"allowed extra host", req{Path: "/v1/stats", Header: map[string]string{"Host": "devbox.lan:7314"}}, 200, ""},
		{"cross-site fetch", req{Path: "/v1/stats", Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "Sec-Fetch-Site"},
		{"cross-site navigation to data", req{Path: "/v1/stats", Header: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}}, 403, "Sec-Fetch-Site"},
		{"foreign Origin on a write", push(map[string]string{"Origin": "http://evil.example"}), 403, "Origin"},
		{"null Origin on a write", push(map[string]string{"Origin": "null"}), 403, "Origin"},
		{"other localhost port on a write", push(map[string]string{"Origin": "http://127.0.0.1:8080"}), 403, "Origin"},
		{"https Origin on a write", push(map[string]string{"Origin": "https://" + testAddr}), 403, "Origin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			w := h.do(c.r)
			if c.status == 200 {
				h.ok(w, nil)
				return
			}
			h.problem(w, c.status, c.param)
			h.unchanged(before, n)
		})
	}
	// A same-origin write goes through.
	h.ok(h.do(push(map[string]string{"Origin": "http://" + testAddr})), nil)
	for _, w := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials"} {
		if v := h.do(req{Path: "/v1/stats", Header: map[string]string{"Origin": "http://evil.example"}}).Header().Get(w); v != "" {
			t.Errorf("CORS header %s: %s", w, v)
		}
	}
}

func TestSearch(t *testing.T) {
	h := newHarness(t)
	var r search.Response
	h.ok(h.do(req{Path: "/v1/search?needle=ErrCartEmpty&scope=all&limit=10&count=true"}), &r)
	if len(r.Hits) != 3 || r.Total == nil || *r.Total != 3 {
		t.Fatalf("GET search: %d hits (total %v), want 3: %+v", len(r.Hits), r.Total, r)
	}
	var r2 search.Response
	h.ok(h.do(req{Method: "POST", Path: "/v1/search", Body: search.Request{Needle: "ErrCartEmpty", Session: "s1", Scope: search.ScopeBranch, Roles: []string{"user"}}}), &r2)
	if len(r2.Hits) != 1 || r2.Hits[0].Entry != "m1" {
		t.Fatalf("POST search: %+v", r2.Hits)
	}
	h.ok(h.do(req{Path: "/v1/search?needle=ErrCartEmpty&types=message,compaction&roles=user&roles=assistant&since=2026-01-01T00:00:00Z&newestFirst=true"}), &r)
	if len(r.Hits) != 2 {
		t.Errorf("filtered GET search: %d hits, want 2", len(r.Hits))
	}
}

// TestSearchIgnoringCaseAndByRegex: GET and POST searches take ignoreCase
// and regex, a match's snippet marks it, and a regex that does not
// compile is a 400 naming the needle and saying what is wrong.
func TestSearchIgnoringCaseAndByRegex(t *testing.T) {
	h := newHarness(t)
	var r search.Response
	h.ok(h.do(req{Path: "/v1/search?needle=errcartempty&ignoreCase=true&scope=all&count=true"}), &r)
	if r.Total == nil || *r.Total != 3 {
		t.Fatalf("GET ignoring case: total %v, want 3: %+v", r.Total, r)
	}
	h.ok(h.do(req{Path: "/v1/search?needle=errcartempty&scope=all&count=true"}), &r)
	if r.Total == nil || *r.Total != 0 {
		t.Fatalf("GET literal of another case: total %v, want 0", r.Total)
	}
	var r2 search.Response
	h.ok(h.do(req{Method: "POST", Path: "/v1/search", Body: search.Request{Needle: `Err\w+ (in|comes)`, Regex: true, Scope: search.ScopeAll}}), &r2)
	if len(r2.Hits) != 2 {
		t.Fatalf("POST regex: %d hits, want 2: %+v", len(r2.Hits), r2.Hits)
	}
	for _, hit := range r2.Hits {
		sn := hit.Snippets[0]
		if m := sn.Text[sn.MatchStart:sn.MatchEnd]; m != "ErrCartEmpty in" && m != "ErrCartEmpty comes" {
			t.Errorf("hit %s marks %q", hit.Entry, m)
		}
	}
	p := h.problem(h.do(req{Path: "/v1/search?needle=" + url.QueryEscape("cart(") + "&regex=true"}), 400, "needle")
	if !strings.Contains(p.Detail, "missing closing )") {
		t.Errorf("bad regex: %q does not say what is wrong", p.Detail)
	}
	h.problem(h.do(req{Method: "POST", Path: "/v1/search", Body: `{"needle":"[z-a]","regex":true}`}), 400, "needle")
	h.problem(h.do(req{Path: "/v1/search?needle=x&regex=sometimes"}), 400, "regex")
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxBodyBytes = 1 << 10 })
	before := h.svc.Store.LastSeq()
	big := `{"needle":"` + strings.Repeat("x", 2<<10) + `"}`
	post := func(path, body string) req { return req{Method: "POST", Path: path, Body: body} }
	cases := []struct {
		name   string
		r      req
		status int
		param  string
	}{
		{"search: no needle", req{Path: "/v1/search"}, 400, "needle"},
		{"search: unknown query parameter", req{Path: "/v1/search?needle=x&colour=red"}, 400, "colour"},
		{"search: limit not a number", req{Path: "/v1/search?needle=x&limit=ten"}, 400, "limit"},
		{"search: bool not a bool", req{Path: "/v1/search?needle=x&count=maybe"}, 400, "count"},
		{"search: bad time", req{Path: "/v1/search?needle=x&since=yesterday"}, 400, "since"},
		{"search: parameter twice", req{Path: "/v1/search?needle=x&needle=y"}, 400, "needle"},
		{"search: bad scope", req{Path: "/v1/search?needle=x&scope=galaxy"}, 400, ""},
		{"search: a session with scope all", req{Path: "/v1/search?needle=x&scope=all&session=nope"}, 400, "session"},
		{"list: forged cursor past 2^63", req{Path: "/v1/sessions/s1/entries?cursor=" + forgedListCursor(t, h)}, 400, "cursor"},
		{"search: malformed JSON", post("/v1/search", `{"needle":`), 400, ""},
		{"search: not JSON", post("/v1/search", `needle=x`), 400, ""},
		{"search: empty body", post("/v1/search", ``), 400, ""},
		{"search: array body", post("/v1/search", `["x"]`), 400, ""},
		{"search: unknown field", post("/v1/search", `{"needle":"x","colour":"red"}`), 400, "colour"},
		{"search: wrong type", post("/v1/search", `{"needle":"x","limit":"ten"}`), 400, "limit"},
		{"search: a fraction for a whole number", post("/v1/search", `{"needle":"x","limit":1.5}`), 400, "limit"},
		{"search: an exponent for a whole number", post("/v1/search", `{"needle":"x","limit":1e3}`), 400, "limit"},
		{"search: wrong type of list", post("/v1/search", `{"needle":"x","roles":"user"}`), 400, "roles"},
		{"search: bad time in JSON", post("/v1/search", `{"needle":"x","since":"yesterday"}`), 400, "since"},
		{"search: bad time in JSON under a key of another case", post("/v1/search", `{"needle":"x","UNTIL":"yesterday"}`), 400, "until"},
		{"search: bad second time in JSON", post("/v1/search", `{"needle":"x","since":"2026-01-01T00:00:00Z","until":"2026-13-01T00:00:00Z"}`), 400, "until"},
		{"search: two objects", post("/v1/search", `{"needle":"x"}{"needle":"y"}`), 400, ""},
		{"search: a lone surrogate", post("/v1/search", `{"needle":"a\ud800b"}`), 400, ""},
		{"search: bytes that are not UTF-8", post("/v1/search", "{\"needle\":\"a\xffb\"}"), 400, ""},
		{"search: too large", post("/v1/search", big), 413, ""},
		{"search: form content type", req{Method: "POST", Path: "/v1/search", Body: `{"needle":"x"}`, Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, "Content-Type"},
		{"search: no content type", req{Method: "POST", Path: "/v1/search", Body: `{"needle":"x"}`, Header: map[string]string{"Content-Type": ""}}, 415, "Content-Type"},
		{"sessions: unknown parameter", req{Path: "/v1/sessions?x=1"}, 400, "x"},
		{"session: unknown", req{Path: "/v1/sessions/nope"}, 404, ""},
		{"session: unknown leaf", req{Path: "/v1/sessions/s1?leaf=zz"}, 404, "leaf"},
		{"session: tree not a bool", req{Path: "/v1/sessions/s1?tree=perhaps"}, 400, "tree"},
		{"list: unknown session", req{Path: "/v1/sessions/nope/entries"}, 404, ""},
		{"list: negative window", req{Path: "/v1/sessions/s1/entries?window=-1"}, 400, "window"},
		{"list: unknown leaf", req{Path: "/v1/sessions/s1/entries?leaf=zz"}, 404, "leaf"},
		{"read: unknown entry", req{Path: "/v1/sessions/s1/entries/zz"}, 404, ""},
		{"read: bad offset", req{Path: "/v1/sessions/s1/entries/m1?offset=x"}, 400, "offset"},
		{"windows: unknown leaf", req{Path: "/v1/sessions/s1/windows?leaf=zz"}, 404, "leaf"},
		{"push: malformed", post("/v1/sessions/s1/entries", `{"lines":[`), 400, ""},
		{"push: unknown field", post("/v1/sessions/s1/entries", `{"lines":[],"extra":1}`), 400, "extra"},
		{"push: wrong type", post("/v1/sessions/s1/entries", `{"lines":"one"}`), 400, "lines"},
		{"push: no lines", post("/v1/sessions/s1/entries", `{"lines":[]}`), 400, "lines"},
		{"push: not a journal line", post("/v1/sessions/s1/entries", `{"lines":["not json"]}`), 400, "lines[0]"},
		{"push: entry without id", post("/v1/sessions/s1/entries", `{"lines":["{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}"]}`), 400, "lines[0]"},
		{"push: too large", post("/v1/sessions/s1/entries", `{"lines":["`+strings.Repeat("x", 40<<20)+`"]}`), 413, ""},
		{"sync: unknown field", post("/v1/sessions/s1/sync", `{"path":"/x.jsonl","force":true}`), 400, "force"},
		{"sync: no path", post("/v1/sessions/s1/sync", `{}`), 400, "path"},
		{"import: relative path", post("/v1/import", `{"paths":["sessions"]}`), 400, "paths[0]"},
		{"import: missing path", post("/v1/import", `{"paths":["/does/not/exist"]}`), 404, "paths[0]"},
		{"import: wrong type", post("/v1/import", `{"paths":[1]}`), 400, "paths"},
		{"no such route", req{Path: "/v1/sessions/s1/nothing"}, 404, ""},
		{"wrong method", req{Method: "DELETE", Path: "/v1/stats"}, 405, ""},
		{"ingest: unknown parameter", req{Path: "/v1/ingest/status?verbose=1"}, 400, "verbose"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			h.problem(h.do(c.r), c.status, c.param)
			h.unchanged(before, 1)
		})
	}
}

func TestSessionsAndSession(t *testing.T) {
	h := newHarness(t)
	var ss client.SessionsResponse
	h.ok(h.do(req{Path: "/v1/sessions"}), &ss)
	if len(ss.Sessions) != 1 || ss.Sessions[0].ID != "s1" || ss.Sessions[0].Entries != 8 {
		t.Fatalf("sessions: %+v", ss)
	}
	var d client.SessionDetail
	h.ok(h.do(req{Path: "/v1/sessions/s1"}), &d)
	if d.CurrentLeaf != "l1" || len(d.Tree) != 8 || d.Summary.ID != "s1" {
		t.Fatalf("session: leaf %q, %d tree entries", d.CurrentLeaf, len(d.Tree))
	}
	if strings.Join(d.Leaves, ",") != "b1,l1" {
		t.Errorf("leaves %v, want b1,l1", d.Leaves)
	}
	byID := map[string]client.TreeEntry{}
	for _, e := range d.Tree {
		byID[e.ID] = e
	}
	if e := byID["m4"]; e.Label != "the fix" || e.ParentID != "c1" || e.Role != "user" || e.Window != 2 {
		t.Errorf("tree entry m4: %+v", e)
	}
	if e := byID["c1"]; e.Type != "compaction" {
		t.Errorf("tree entry c1: %+v", e)
	}
	if d.WindowsLeaf != "l1" || len(d.Windows) != 2 || d.Windows[1].CompactionID != "c1" {
		t.Errorf("windows of the current branch: %+v", d.Windows)
	}
	d = client.SessionDetail{}
	h.ok(h.do(req{Path: "/v1/sessions/s1?leaf=b1&tree=false"}), &d)
	if d.Tree != nil || d.WindowsLeaf != "b1" || len(d.Windows) != 1 {
		t.Errorf("session with leaf=b1&tree=false: tree %d, windows %+v", len(d.Tree), d.Windows)
	}
	var wr client.WindowsResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/windows"}), &wr)
	if wr.Leaf != "l1" || len(wr.Windows) != 2 || wr.Windows[0].Entries != 3 {
		t.Errorf("windows: %+v", wr)
	}
}

func TestListAndRead(t *testing.T) {
	h := newHarness(t)
	var lr search.ListResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries"}), &lr)
	if lr.Leaf != "l1" || len(lr.Items) != 7 {
		t.Fatalf("list: leaf %q, %d items", lr.Leaf, len(lr.Items))
	}
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?window=2&roles=user"}), &lr)
	if len(lr.Items) != 1 || lr.Items[0].Entry != "m4" {
		t.Errorf("list window 2, users: %+v", lr.Items)
	}
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?allBranches=true&limit=3"}), &lr)
	if len(lr.Items) != 3 || lr.Cursor == "" || lr.Total != 8 {
		t.Errorf("list all branches, limit 3: %d items, total %d, cursor %q", len(lr.Items), lr.Total, lr.Cursor)
	}

	var rr search.ReadResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries/m1?context=1"}), &rr)
	if !strings.Contains(rr.Text, "ErrCartEmpty") || rr.Item.Entry != "m1" || len(rr.After) != 1 {
		t.Errorf("read m1: %+v", rr)
	}
	// The current branch's list is of the leaf it had: once an entry
	// arrives, its cursor is refused with a way out (pin the leaf), and a
	// pinned list pages on.
	var first, pinned search.ListResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?limit=2"}), &first)
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?limit=2&leaf=" + first.Leaf}), &pinned)
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/s1/entries", Body: map[string]any{"lines": []string{userLine("m6", first.Leaf, "arrives meanwhile")}}}), nil)
	rr0 := h.do(req{Path: "/v1/sessions/s1/entries?limit=2&cursor=" + first.Cursor})
	if rr0.Code != http.StatusBadRequest || !strings.Contains(rr0.Body.String(), "leaf the first page answered") {
		t.Errorf("the current branch's cursor after an entry arrived: %d %s", rr0.Code, rr0.Body)
	}
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?limit=2&leaf=" + first.Leaf + "&cursor=" + pinned.Cursor}), &lr)
	if len(lr.Items) != 2 || lr.Items[0].Entry == pinned.Items[0].Entry {
		t.Errorf("the pinned list's second page: %+v", lr.Items)
	}

	// The model's history tool reads only the allowlisted history: a label
	// (no searchable text) is refused to it, raw line included; people
	// read it.
	h.problem(h.do(req{Path: "/v1/sessions/s1/entries/l1?raw=true&allowlisted=true"}), 400, "entry")
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries/l1?raw=true"}), &rr)
	// Its neighbours too: the label after m5 is left out of them.
	has := func(r search.ReadResponse, id string) bool {
		for _, it := range append(r.Before, r.After...) {
			if it.Entry == id {
				return true
			}
		}
		return false
	}
	rr = search.ReadResponse{}
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries/m5?allowlisted=true&context=3"}), &rr)
	if has(rr, "l1") || !has(rr, "m4") {
		t.Errorf("an allowlisted read of m5: neighbours %+v %+v; want m4 and not the label l1", rr.Before, rr.After)
	}
	rr = search.ReadResponse{}
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries/m5?context=3"}), &rr)
	if !has(rr, "l1") {
		t.Errorf("a read for people leaves the label out of m5's neighbours: %+v", rr.After)
	}

	// Ids escaped more than Go would escape them (encodeURIComponent
	// escapes any character it likes; chi then routes on the raw path).
	rr = search.ReadResponse{}
	h.ok(h.do(req{Path: "/v1/sessions/%73%31/entries/m%31"}), &rr)
	if rr.Item.Entry != "m1" {
		t.Errorf("read s1/m1 escaped as %%73%%31/m%%31: %+v", rr.Item)
	}
	// The raw line of m3 comes in 2,000-character pieces.
	var raw strings.Builder
	off := 0
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("raw read does not end")
		}
		rr = search.ReadResponse{}
		h.ok(h.do(req{Path: fmt.Sprintf("/v1/sessions/s1/entries/m3?raw=true&offset=%d", off)}), &rr)
		if len([]rune(rr.Text)) > search.RawPiece {
			t.Fatalf("raw piece of %d characters", len([]rune(rr.Text)))
		}
		raw.WriteString(rr.Text)
		if rr.NextOffset == 0 {
			break
		}
		off = rr.NextOffset
	}
	if want := fixtureLines("s1")[3]; raw.String() != want {
		t.Errorf("raw pieces do not add up to the line (%d vs %d bytes)", raw.Len(), len(want))
	}
}

func TestStatsAndIngestStatus(t *testing.T) {
	h := newHarness(t)
	var st service.Stats
	h.ok(h.do(req{Path: "/v1/stats"}), &st)
	if st.Sessions != 1 || st.Entries != 8 || st.Files != 1 || st.DataDir != h.dataDir {
		t.Errorf("stats: %+v", st)
	}
	if want := fmt.Sprintf("trigram postings v%d", index.FormatVersion); st.IndexFormat != want {
		t.Errorf("a new index: format %q, want %q", st.IndexFormat, want)
	}
	appendLines(t, h.journal, userLine("n1", "l1", "not read yet"))
	var is client.IngestStatus
	h.ok(h.do(req{Path: "/v1/ingest/status"}), &is)
	if len(is.Files) != 1 || is.Files[0].Path != h.journal || is.Files[0].Pending == 0 || is.PendingBytes != is.Files[0].Pending {
		t.Errorf("ingest status: %+v", is)
	}
	if is.Index.LastSeq != 8 || is.Watcher != nil {
		t.Errorf("ingest status index/watcher: %+v %+v", is.Index, is.Watcher)
	}
}

func TestImport(t *testing.T) {
	h := newHarness(t)
	other := filepath.Join(t.TempDir(), "old")
	writeJournal(t, other, "--p--", "s2", []string{
		`{"type":"session","version":3,"id":"s2","timestamp":"2026-01-02T10:00:00.000Z","cwd":"/p"}`,
		userLine("a1", "", "imported over the API"),
		"not json",
	})
	var sum service.ImportSummary
	h.ok(h.do(req{Method: "POST", Path: "/v1/import", Body: client.ImportRequest{Paths: []string{other}}}), &sum)
	if sum.Files != 1 || sum.Sessions != 1 || sum.Entries != 1 || sum.Skipped != 1 || len(sum.Problems) != 1 {
		t.Errorf("import summary: %+v", sum)
	}
	// No paths: the sessions directories; everything is there already.
	h.ok(h.do(req{Method: "POST", Path: "/v1/import", Body: `{}`}), &sum)
	if sum.Files != 1 || sum.Entries != 0 {
		t.Errorf("re-import of the sessions directory: %+v", sum)
	}

	// With progress: a line per event, the summary last.
	third := filepath.Join(t.TempDir(), "third")
	writeJournal(t, third, "--p--", "s3", []string{
		`{"type":"session","version":3,"id":"s3","timestamp":"2026-01-03T10:00:00.000Z","cwd":"/p"}`,
		userLine("a1", "", "imported with progress"),
	})
	w := h.do(req{Method: "POST", Path: "/v1/import", Body: client.ImportRequest{Paths: []string{third}},
		Header: map[string]string{"Accept": client.ImportStreamType}})
	if w.Code != 200 || w.Header().Get("Content-Type") != client.ImportStreamType {
		t.Fatalf("import stream: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	var events []client.ImportEvent
	for _, l := range lines {
		var ev client.ImportEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("import stream line %q: %v", l, err)
		}
		events = append(events, ev)
	}
	last := events[len(events)-1]
	if len(events) < 2 || events[0].Progress == nil || last.Summary == nil || last.Summary.Entries != 1 || last.Summary.Sessions != 1 {
		t.Errorf("import stream: %s", w.Body)
	}
	// A bad path is refused before the stream begins.
	h.problem(h.do(req{Method: "POST", Path: "/v1/import", Body: `{"paths":["/does/not/exist"]}`,
		Header: map[string]string{"Accept": client.ImportStreamType}}), 404, "paths[0]")
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	h.ok(h.do(req{Path: "/v1/stats"}), nil)
	h.do(req{Path: "/v1/sessions/s1/entries/nope"})
	h.do(req{Path: "/v1/no/such/route"})
	w := h.do(req{Path: "/metrics"})
	if w.Code != 200 {
		t.Fatalf("metrics: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{
		`pi_history_http_requests_total{code="200",method="GET",route="/v1/stats"} 1`,
		`pi_history_http_requests_total{code="404",method="GET",route="/v1/sessions/{id}/entries/{entry}"} 1`,
		`pi_history_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`pi_history_http_request_duration_seconds_bucket{method="GET",route="/v1/stats"`,
		"pi_history_index_lag_entries ",
		"pi_history_ingest_lag_bytes 0",
		"pi_history_store_bytes ",
		"pi_history_store_last_seq 8",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestSync(t *testing.T) {
	h := newHarness(t)
	appendLines(t, h.journal, userLine("n1", "l1", "written just now"))
	var sr client.SyncResponse
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/s1/sync", Body: client.SyncRequest{Path: h.journal}}), &sr)
	if sr.Session != "s1" || sr.Leaf != "n1" || sr.Entries != 9 || sr.Report.Added != 1 {
		t.Fatalf("sync: %+v", sr)
	}
	// Searchable at once (the index may lag; search scans past its mark).
	var r search.Response
	h.ok(h.do(req{Path: "/v1/search?needle=written+just+now&session=s1"}), &r)
	if len(r.Hits) != 1 || r.Hits[0].Entry != "n1" {
		t.Errorf("search after sync: %+v", r.Hits)
	}

	// A symlinked project folder inside the sessions directory is fine; the
	// entry is stored under the file's real name there.
	link := filepath.Join(h.sessions, "--linked--")
	if err := os.Symlink(filepath.Dir(h.journal), link); err != nil {
		t.Fatal(err)
	}
	appendLines(t, h.journal, userLine("n2", "n1", "via the link"))
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/s1/sync", Body: client.SyncRequest{Path: filepath.Join(link, "s1.jsonl")}}), &sr)
	if sr.Session != "s1" || sr.Report.Path != h.journal || sr.Leaf != "n2" {
		t.Errorf("sync via a link inside: %+v", sr)
	}

	// Bad paths: nothing read, nothing stored.
	outside := t.TempDir()
	secret := writeJournal(t, outside, "--x--", "s9", []string{`{"type":"session","version":3,"id":"s9","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}`, userLine("z", "", "secret")})
	escape := filepath.Join(h.sessions, "--home-dev-shop--", "escape.jsonl")
	if err := os.Symlink(secret, escape); err != nil {
		t.Fatal(err)
	}
	escapeDir := filepath.Join(h.sessions, "--escape-dir--")
	if err := os.Symlink(filepath.Dir(secret), escapeDir); err != nil {
		t.Fatal(err)
	}
	other := writeJournal(t, h.sessions, "--home-dev-shop--", "s3", []string{`{"type":"session","version":3,"id":"s3","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}`, userLine("q", "", "other")})
	before := h.svc.Store.LastSeq()
	cases := []struct {
		name, path string
		status     int
	}{
		{"traversal", h.sessions + "/--home-dev-shop--/../../" + filepath.Base(outside) + "/--x--/s9.jsonl", 403},
		{"traversal that stays inside", h.sessions + "/--home-dev-shop--/../--home-dev-shop--/s1.jsonl", 403},
		{"outside", secret, 403},
		{"symlinked file escaping", escape, 403},
		{"symlinked folder escaping", filepath.Join(escapeDir, "s9.jsonl"), 403},
		{"the sessions directory itself", h.sessions + ".jsonl", 403},
		{"relative", "sessions/--home-dev-shop--/s1.jsonl", 400},
		{"not a journal", filepath.Join(h.sessions, "--home-dev-shop--", "notes.txt"), 400},
		{"missing", filepath.Join(h.sessions, "--home-dev-shop--", "later.jsonl"), 404},
		{"another session's journal", other, 400},
		{"etc passwd", "/etc/passwd", 400},
		{"etc passwd as journal", "/etc/../etc/passwd.jsonl", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := h.on(t)
			w := h.do(req{Method: "POST", Path: "/v1/sessions/s1/sync", Body: client.SyncRequest{Path: c.path}})
			p := h.problem(w, c.status, "path")
			if strings.Contains(p.Detail, "secret") {
				t.Errorf("problem leaks file content: %s", p.Detail)
			}
			h.unchanged(before, 1)
		})
	}
}

func TestPush(t *testing.T) {
	h := newHarness(t)
	// A session the server has never seen: header first.
	lines := []string{
		`{"type":"session","version":3,"id":"p1","timestamp":"2026-02-01T10:00:00.000Z","cwd":"/home/dev/new"}`,
		userLine("u1", "", "pushed before the file exists"),
		userLine("u2", "u1", "second pushed entry"),
	}
	var res store.Result
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: client.PushRequest{Lines: lines}}), &res)
	if res.Added != 2 || res.Session != "p1" {
		t.Fatalf("push: %+v", res)
	}
	var r search.Response
	h.ok(h.do(req{Path: "/v1/search?needle=pushed+before&session=p1"}), &r)
	if len(r.Hits) != 1 {
		t.Errorf("pushed entry not searchable: %+v", r)
	}
	// The same again (NDJSON this time): duplicates, nothing added.
	w := h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: strings.Join(lines[1:], "\n") + "\n",
		Header: map[string]string{"Content-Type": "application/x-ndjson"}})
	h.ok(w, &res)
	if res.Added != 0 || res.Duplicates != 2 {
		t.Errorf("repeated push: %+v", res)
	}
	// The same id with other content: 409 naming it, nothing stored.
	before := h.svc.Store.LastSeq()
	w = h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: client.PushRequest{Lines: []string{userLine("u3", "u2", "new"), userLine("u2", "u1", "changed!")}}})
	p := h.problem(w, 409, "lines[1]")
	if p.Entry != "u2" || !strings.Contains(p.Detail, "u2") {
		t.Errorf("conflict does not name the entry: %+v", p)
	}
	h.unchanged(before, 2)
	// Twice in one push with different content: 409 too.
	w = h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: client.PushRequest{Lines: []string{userLine("u4", "u2", "a"), userLine("u4", "u2", "b")}}})
	if p := h.problem(w, 409, "lines[1]"); p.Entry != "u4" {
		t.Errorf("in-push conflict: %+v", p)
	}
	h.unchanged(before, 2)
	// Unknown session without its header: 404.
	h.problem(h.do(req{Method: "POST", Path: "/v1/sessions/ghost/entries", Body: client.PushRequest{Lines: []string{userLine("g1", "", "x")}}}), 404, "id")
	// A header naming another session: 400.
	h.problem(h.do(req{Method: "POST", Path: "/v1/sessions/p2/entries", Body: client.PushRequest{Lines: lines}}), 400, "lines[0]")
	h.problem(h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: `{"lines":["{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{}}\n"]}`}), 400, "lines[0]")
	h.problem(h.do(req{Method: "POST", Path: "/v1/sessions/p1/entries", Body: "x", Header: map[string]string{"Content-Type": "text/plain"}}), 415, "Content-Type")
	h.unchanged(before, 2)

	// Pushed to an existing session, later found in the file: one entry.
	push := userLine("k1", "l1", "pushed, then written by Pi")
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/s1/entries", Body: client.PushRequest{Lines: []string{push}}}), &res)
	if res.Added != 1 {
		t.Fatalf("push to s1: %+v", res)
	}
	appendLines(t, h.journal, push)
	var sr client.SyncResponse
	h.ok(h.do(req{Method: "POST", Path: "/v1/sessions/s1/sync", Body: client.SyncRequest{Path: h.journal}}), &sr)
	if sr.Entries != 9 || sr.Report.Added != 0 || sr.Report.Confirmed != 1 {
		t.Errorf("pushed entry read from the file again: %+v", sr)
	}
	h.ok(h.do(req{Path: "/v1/search?needle=then+written+by+Pi&scope=all&count=true"}), &r)
	if r.Total == nil || *r.Total != 1 {
		t.Errorf("pushed-then-read entry found %v times, want once", r.Total)
	}
}

// TestMaintenanceRoutes: reindex and compact run in the server, which keeps
// answering searches with every entry; a second task while one runs is a
// 409.
func TestMaintenanceRoutes(t *testing.T) {
	h := newHarness(t)
	lines := []string{`{"type":"session","version":3,"id":"s2","timestamp":"2026-01-02T10:00:00.000Z","cwd":"/p"}`}
	parent := ""
	for i := range 200 {
		id := fmt.Sprintf("u%03d", i)
		lines = append(lines, userLine(id, parent, fmt.Sprintf("maintenance needle %03d", i)))
		parent = id
	}
	other := filepath.Join(t.TempDir(), "more")
	writeJournal(t, other, "--p--", "s2", lines)
	var sum service.ImportSummary
	h.ok(h.do(req{Method: "POST", Path: "/v1/import", Body: client.ImportRequest{Paths: []string{other}}}), &sum)
	found := func(what string) {
		t.Helper()
		var r search.Response
		h.ok(h.do(req{Path: "/v1/search?needle=needle+042&scope=all&count=true"}), &r)
		if r.Total == nil || *r.Total != 1 || len(r.Hits) != 1 {
			t.Fatalf("%s: search found %v hits (total %v)", what, len(r.Hits), r.Total)
		}
	}
	found("before")
	last := h.svc.Store.LastSeq()

	var ri client.ReindexResponse
	h.ok(h.do(req{Method: "POST", Path: "/v1/maintenance/reindex"}), &ri)
	if ri.Entries != last || h.svc.Index.IndexedThrough() != last {
		t.Errorf("reindex: %+v; index through %d, want %d", ri, h.svc.Index.IndexedThrough(), last)
	}
	found("after reindex")

	var co client.CompactResponse
	h.ok(h.do(req{Method: "POST", Path: "/v1/maintenance/compact"}), &co)
	// The index's few entries are in its open run, in memory: no file.
	if co.StoreBefore == 0 || co.StoreAfter == 0 || co.IndexBefore != co.IndexAfter {
		t.Errorf("compact: %+v", co)
	}
	found("after compact")

	h.srv.maint.Lock() // a task in progress
	for _, p := range []string{"/v1/maintenance/compact", "/v1/maintenance/reindex"} {
		if pr := h.problem(h.do(req{Method: "POST", Path: p}), 409, ""); pr != nil && !strings.Contains(pr.Detail, "already running") {
			t.Errorf("%s while another task runs: %+v", p, pr)
		}
	}
	h.srv.maint.Unlock()
	h.problem(h.do(req{Method: "POST", Path: "/v1/maintenance/reindex", NoAuth: true}), 401, "")
	h.problem(h.do(req{Method: "GET", Path: "/v1/maintenance/compact"}), 405, "")
}

// forgedListCursor is a list cursor for s1 that passes the cursor's checks
// (a cursor's check values are no secret) but points at 2^63: converted to
// an int before the range check, it turned negative and the list panicked.
func forgedListCursor(t *testing.T, h *harness) string {
	t.Helper()
	var lr search.ListResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries?limit=1"}), &lr)
	b, err := base64.RawURLEncoding.DecodeString(lr.Cursor)
	if err != nil || len(b) != 21 {
		t.Fatalf("cursor %q: %v", lr.Cursor, err)
	}
	binary.BigEndian.PutUint64(b[9:], 1<<63)
	binary.BigEndian.PutUint32(b[17:], crc32.ChecksumIEEE(b[:17]))
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestStreamsDoNotUseUpTheRequestSlots: long-lived event streams count
// against their own cap, not the one every request shares: held streams
// made every route answer 429, /healthz and the Pi extension's included.
func TestStreamsDoNotUseUpTheRequestSlots(t *testing.T) {
	entered := make(chan struct{}, 8)
	hold := func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	}
	h := newHarness(t, func(o *Options) {
		o.MaxInFlight, o.MaxStreams, o.StreamPaths = 2, 2, []string{"/stream"}
		o.Mount = func(r chi.Router) { r.Get("/stream", hold) }
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for i := 0; i < 2; i++ {
		go func() {
			h.srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://"+testAddr+"/stream", nil).WithContext(ctx))
			done <- struct{}{}
		}()
		<-entered
	}
	defer func() {
		cancel()
		<-done
		<-done
	}()
	if rr := h.do(req{Path: "/healthz"}); rr.Code != http.StatusOK {
		t.Errorf("with two streams open, /healthz answered %d", rr.Code)
	}
	var lr search.ListResponse
	h.ok(h.do(req{Path: "/v1/sessions/s1/entries"}), &lr)
	rr := h.do(req{Path: "/stream"})
	if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), "event streams") {
		t.Errorf("a third stream: %d %s; want 429 naming the streams' cap", rr.Code, rr.Body)
	}
}

// TestSearchForEveryHitComesPageByPage: all=true answers every hit, in
// order, without repeats, with the count and a snippet budget for the
// whole answer, while the engine hands the server a page at a time (it
// used to build the whole answer, every hit with its text's parts, in
// memory; search tests the pages' size).
func TestSearchForEveryHitComesPageByPage(t *testing.T) {
	var pages []int
	h := newHarness(t, func(o *Options) { o.Engine = pageCounter{o.Engine, &pages} })
	lines := []string{`{"type":"session","version":3,"id":"big","timestamp":"2026-02-01T10:00:00.000Z","cwd":"/w"}`}
	parent := ""
	const n = 2500
	for i := range n {
		id := fmt.Sprintf("b%04d", i)
		lines = append(lines, userLine(id, parent, fmt.Sprintf("haystack %d with the pin in it", i)))
		parent = id
	}
	writeJournal(t, h.sessions, "--w--", "big", lines)
	if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	var r search.Response
	h.ok(h.do(req{Path: "/v1/search?needle=the+pin&scope=all&all=true&count=true&budget=3000"}), &r)
	if len(r.Hits) != n || r.Total == nil || *r.Total != n || r.Cursor != "" {
		t.Fatalf("all=true: %d hits, total %v, cursor %q; want %d hits, total %d, no cursor", len(r.Hits), r.Total, r.Cursor, n, n)
	}
	chars := 0
	for i, hit := range r.Hits {
		if want := fmt.Sprintf("b%04d", i); hit.Entry != want {
			t.Fatalf("hit %d is %s, want %s (in order, each once)", i, hit.Entry, want)
		}
		for _, sn := range hit.Snippets {
			chars += utf8.RuneCountInString(sn.Text)
		}
	}
	if chars == 0 || chars > 3000 || !r.Truncated {
		t.Errorf("snippets: %d characters (truncated %v); want some, at most the budget of 3000, and truncated", chars, r.Truncated)
	}
	if r.Stats.Confirmed != n || r.Stats.Plan == "" {
		t.Errorf("stats %+v: want %d confirmed over every page, and the plan", r.Stats, n)
	}
	if len(pages) == 0 {
		t.Error("the answer did not come through SearchPages, a page at a time")
	}
	// A bad request is an ordinary error answer.
	h.problem(h.do(req{Path: "/v1/search?needle=pin&scope=everything&all=true"}), http.StatusBadRequest, "scope")
}

// pageCounter records the size of each page SearchPages hands over.
type pageCounter struct {
	Engine
	pages *[]int
}

func (p pageCounter) SearchPages(ctx context.Context, r *search.Request, fn func(*search.Response) error) error {
	return p.Engine.SearchPages(ctx, r, func(page *search.Response) error {
		*p.pages = append(*p.pages, len(page.Hits))
		return fn(page)
	})
}

// TestSearchForEveryHitBreaksOffOnALateError: once hits are written, an
// error cannot become an error answer; the connection is broken
// (http.ErrAbortHandler) so that the client does not take the hits so far
// for all of them.
func TestSearchForEveryHitBreaksOffOnALateError(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Engine = failAfterAPage{o.Engine} })
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v; want http.ErrAbortHandler, which breaks the connection", v)
		}
	}()
	w := h.do(req{Path: "/v1/search?needle=ErrCartEmpty&scope=all&all=true"})
	t.Errorf("the answer ended normally: %d %s", w.Code, w.Body)
}

type failAfterAPage struct{ Engine }

func (f failAfterAPage) SearchPages(ctx context.Context, r *search.Request, fn func(*search.Response) error) error {
	err := f.Engine.SearchPages(ctx, r, fn)
	if err != nil {
		return err
	}
	return errors.New("the store failed")
}

func TestLoneSurrogate(t *testing.T) {
	for in, want := range map[string]int{
		`{"a":"x"}`:                    -1,
		`{"a":"\ud83d\ude00"}`:         -1, // a pair: 😀
		`{"a":"\u00e9\n\\ud800"}`:      -1, // an escaped backslash, then text
		`{"a":"\ud800"}`:               6,
		`{"a":"x\udc00"}`:              7,
		`{"a":"\ud83d\u0041"}`:         6, // a high half followed by no low half
		`{"a":"\ud83d"}, "b":"\ude00"`: 6,
		`{"\ud800":1}`:                 2, // in a key too
		`{"a":"\\"}, {"b":"\udfff"}`:   18,
		`{"a":"\u12"}`:                 -1, // malformed: left to the decoder
	} {
		if got := loneSurrogate([]byte(in)); got != want {
			t.Errorf("loneSurrogate(%s) = %d, want %d", in, got, want)
		}
	}
}

// TestHealthzAnswersWhenTheServerIsFull: clients prove the server every few
// seconds through /healthz; a server at its request limit must still
// answer it, or it would look like another program on its port.
func TestHealthzAnswersWhenTheServerIsFull(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxInFlight = 1 })
	h.srv.sem <- struct{}{} // the one slot is taken
	defer func() { <-h.srv.sem }()
	if w := h.do(req{Path: "/healthz?challenge=" + strings.Repeat("ab", client.ChallengeBytes), NoAuth: true}); w.Code != 200 {
		t.Errorf("/healthz on a full server: %d, want 200", w.Code)
	}
	if w := h.do(req{Path: "/v1/stats"}); w.Code != http.StatusTooManyRequests {
		t.Errorf("/v1/stats on a full server: %d, want 429", w.Code)
	}
}
