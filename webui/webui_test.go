package webui

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/store"
)

const (
	shopID    = "0199bbbb-0000-7000-8000-00000000b001"
	blogID    = "0199cccc-0000-7000-8000-00000000c001"
	hostileID = "0199dddd-0000-7000-8000-00000000d001"
)

// openStore opens a store in a temporary directory and imports the named
// journals from testdata.
func openStore(t testing.TB, journals ...string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, j := range journals {
		importFile(t, st, filepath.Join("testdata", j))
	}
	return st
}

func importFile(t testing.TB, st *store.Store, path string) {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ingest.File(st, abs, nil)
	if err != nil {
		t.Fatalf("import %s: %v", path, err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("import %s: problems %v", path, rep.Problems)
	}
}

type fixture struct {
	st     *store.Store
	logins *Logins
	h      http.Handler
	cookie *http.Cookie
	key    string // the page's key (see Logins)
}

func newFixture(t *testing.T, journals ...string) *fixture {
	t.Helper()
	f := &fixture{st: openStore(t, journals...), logins: NewLogins()}
	f.h = Handler(Options{Store: f.st, Logins: f.logins, ValidToken: func(s string) bool { return s == "sekrit-token" }})
	f.cookie, f.key = f.login(t)
	return f
}

func (f *fixture) login(t *testing.T) (*http.Cookie, string) {
	t.Helper()
	rec := f.do(httptest.NewRequest("GET", "/ui/login?code="+url.QueryEscape(f.logins.NewCode()), nil))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login: status %d: %s", rec.Code, rec.Body)
	}
	key, ok := strings.CutPrefix(rec.Header().Get("Location"), "/#"+KeyParam+"=")
	if !ok || len(key) < 40 {
		t.Fatalf("login sent the browser to %q, not to the page with its key", rec.Header().Get("Location"))
	}
	for _, c := range rec.Result().Cookies() {
		if c.Name == CookieName {
			return c, key
		}
	}
	t.Fatal("login set no cookie")
	return nil, ""
}

// authed gives r the session: its cookie and its key.
func (f *fixture) authed(r *http.Request) *http.Request {
	r.AddCookie(f.cookie)
	r.Header.Set(KeyHeader, f.key)
	return r
}

func (f *fixture) do(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	return rec
}

func (f *fixture) get(t *testing.T, path string, out any) *httptest.ResponseRecorder {
	t.Helper()
	rec := f.do(f.authed(httptest.NewRequest("GET", path, nil)))
	if out != nil {
		if rec.Code != 200 {
			t.Fatalf("GET %s: status %d: %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return rec
}

func TestShellHasStrictCSP(t *testing.T) {
	f := newFixture(t)
	rec := f.do(httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	h := rec.Header()
	want := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	if got := h.Get("Content-Security-Policy"); got != want {
		t.Errorf("CSP = %q, want %q", got, want)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no nosniff")
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Errorf("content type %q", h.Get("Content-Type"))
	}
	body := rec.Body.String()
	if !strings.Contains(body, `<script type="module" src="/assets/app.js"></script>`) {
		t.Error("shell does not load /assets/app.js")
	}
	// No inline script, no inline style, no remote origin.
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]+</script>`), regexp.MustCompile(`(?i)\sstyle=`),
		regexp.MustCompile(`(?i)\son[a-z]+=`), regexp.MustCompile(`(?i)(src|href)="(https?:)?//`)} {
		if m := re.FindString(body); m != "" {
			t.Errorf("shell has %q", m)
		}
	}
	// Every asset the shell names is embedded and served with the headers.
	for _, m := range regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(body, -1) {
		rec := f.do(httptest.NewRequest("GET", m[1], nil))
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Errorf("%s: status %d, %d bytes", m[1], rec.Code, rec.Body.Len())
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s: security headers missing", m[1])
		}
	}
	if rec := f.do(httptest.NewRequest("GET", "/nope", nil)); rec.Code != 404 {
		t.Errorf("/nope: status %d", rec.Code)
	}
	if rec := f.do(httptest.NewRequest("GET", "/assets/index.html", nil)); rec.Code != 404 {
		t.Errorf("/assets/index.html: status %d", rec.Code)
	}
	if rec := f.do(httptest.NewRequest("POST", "/", nil)); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: status %d", rec.Code)
	}
}

func TestAssetsEmbedded(t *testing.T) {
	f := newFixture(t)
	wantType := map[string]string{".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
	n := 0
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "index.html") {
			return err
		}
		n++
		name := strings.TrimPrefix(p, "static/")
		rec := f.do(httptest.NewRequest("GET", "/assets/"+name, nil))
		if rec.Code != 200 {
			t.Errorf("%s: status %d", name, rec.Code)
			return nil
		}
		want, _ := staticFS.ReadFile(p)
		if rec.Body.String() != string(want) {
			t.Errorf("%s: body differs from the embedded file", name)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, wantType[filepath.Ext(name)]) {
			t.Errorf("%s: content type %q", name, ct)
		}
		etag := rec.Header().Get("ETag")
		r := httptest.NewRequest("GET", "/assets/"+name, nil)
		r.Header.Set("If-None-Match", etag)
		if rec := f.do(r); etag == "" || rec.Code != http.StatusNotModified {
			t.Errorf("%s: revalidation with ETag %q gave %d", name, etag, rec.Code)
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walked %d assets: %v", n, err)
	}
	// Content is never put into the DOM as HTML.
	for _, name := range []string{"static/app.js", "static/render.js"} {
		b, _ := staticFS.ReadFile(name)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
}

func TestLoginCode(t *testing.T) {
	st := openStore(t)
	l := NewLogins()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	h := Handler(Options{Store: st, Logins: l})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	code := l.NewCode()
	if len(code) < 40 {
		t.Fatalf("code %q is short", code)
	}
	if code2 := l.NewCode(); code2 == code {
		t.Fatal("two codes are equal")
	}
	rec := get("/ui/login?code=" + url.QueryEscape(code))
	key, hasKey := strings.CutPrefix(rec.Header().Get("Location"), "/#key=")
	if rec.Code != http.StatusSeeOther || !hasKey || len(key) < 40 {
		t.Fatalf("login: status %d, location %q; want the page with the session's key in the fragment", rec.Code, rec.Header().Get("Location"))
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("login Cache-Control %q", cc)
	}
	sc := rec.Header().Get("Set-Cookie")
	for _, want := range []string{CookieName + "=", "Path=/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	if strings.Contains(sc, "Domain=") {
		t.Errorf("Set-Cookie %q names a domain", sc)
	}
	c := rec.Result().Cookies()[0]
	with := func(method, cookie, header, query string) *http.Request {
		r := httptest.NewRequest(method, "/x?"+url.Values{KeyParam: {query}}.Encode(), nil)
		r.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
		if header != "" {
			r.Header.Set(KeyHeader, header)
		}
		return r
	}
	r := with("GET", c.Value, key, "")
	if !l.ValidCookie(r) || !l.ValidCookieValue(r, c.Value) {
		t.Fatal("the cookie and key just issued are not valid")
	}
	for _, bad := range []struct {
		name string
		r    *http.Request
	}{
		{"a wrong cookie", with("GET", c.Value+"x", key, "")},
		{"no cookie", httptest.NewRequest("GET", "/", nil)},
		// The cookie alone: another program on 127.0.0.1 gets it from
		// the browser, but not the key.
		{"the cookie without the key", with("GET", c.Value, "", "")},
		{"a wrong key", with("GET", c.Value, key+"x", "")},
		{"the key in the query of a POST", with("POST", c.Value, "", key)},
	} {
		if l.ValidCookie(bad.r) {
			t.Errorf("%s is valid", bad.name)
		}
	}
	// A plain GET (a download link, the event stream) may carry the key in
	// its query; it is dropped before the handlers see it.
	q := with("GET", c.Value, "", key)
	if !l.ValidCookie(q) {
		t.Error("the key in a GET's query is not valid")
	}
	DropKeyParam(q)
	if q.URL.RawQuery != "" {
		t.Errorf("query after DropKeyParam: %q", q.URL.RawQuery)
	}
	// Single use.
	if rec := get("/ui/login?code=" + url.QueryEscape(code)); rec.Code != http.StatusForbidden || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("second use: status %d, cookie %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	// Expiry: good just before 10 minutes, not at 10 minutes.
	c1, c2 := l.NewCode(), l.NewCode()
	now = now.Add(CodeTTL - time.Second)
	if rec := get("/ui/login?code=" + url.QueryEscape(c1)); rec.Code != http.StatusSeeOther {
		t.Fatalf("code used within its lifetime: status %d", rec.Code)
	}
	now = now.Add(time.Second)
	if rec := get("/ui/login?code=" + url.QueryEscape(c2)); rec.Code != http.StatusForbidden {
		t.Fatalf("expired code: status %d", rec.Code)
	}
	for _, bad := range []string{"", "nonsense", strings.Repeat("a", 500)} {
		if rec := get("/ui/login?code=" + url.QueryEscape(bad)); rec.Code != http.StatusForbidden {
			t.Errorf("code %q: status %d", bad, rec.Code)
		}
	}
	// The session itself expires.
	if !l.ValidCookie(r) {
		t.Fatal("session expired early")
	}
	now = now.Add(SessionTTL)
	if l.ValidCookie(r) {
		t.Fatal("session outlived SessionTTL")
	}
	if got := LoginURL("http://127.0.0.1:7314/", "a+b"); got != "http://127.0.0.1:7314/ui/login?code=a%2Bb" {
		t.Errorf("LoginURL = %q", got)
	}
}

func TestCodeHandlerAndTokenLogin(t *testing.T) {
	f := newFixture(t)
	rec := httptest.NewRecorder()
	f.logins.CodeHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/ui/login-code", nil))
	var got struct{ Code, Path string }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Code == "" {
		t.Fatalf("code handler: %d %s", rec.Code, rec.Body)
	}
	if rec := f.do(httptest.NewRequest("GET", got.Path, nil)); rec.Code != http.StatusSeeOther {
		t.Fatalf("code from handler: status %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	f.logins.CodeHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/ui/login-code", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET code handler: %d", rec.Code)
	}

	post := func(token, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://127.0.0.1:7314/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return f.do(r)
	}
	if rec := post("sekrit-token", "http://127.0.0.1:7314"); rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), CookieName) {
		t.Errorf("token login: %d %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	if rec := post("wrong", "http://127.0.0.1:7314"); rec.Header().Get("Set-Cookie") != "" || !strings.Contains(rec.Header().Get("Location"), "failed") {
		t.Errorf("wrong token: %d %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	for _, o := range []string{"", "http://evil.example", "null"} {
		if rec := post("sekrit-token", o); rec.Code != http.StatusForbidden {
			t.Errorf("token login with Origin %q: %d", o, rec.Code)
		}
	}
	// Logout forgets the cookie; it needs a same-origin Origin.
	r := httptest.NewRequest("POST", "http://127.0.0.1:7314/ui/logout", nil)
	r.AddCookie(f.cookie)
	if rec := f.do(r); rec.Code != http.StatusForbidden {
		t.Errorf("logout without Origin: %d", rec.Code)
	}
	r.Header.Set("Origin", "http://127.0.0.1:7314")
	if rec := f.do(r); rec.Code != http.StatusNoContent {
		t.Errorf("logout: %d", rec.Code)
	}
	if f.logins.ValidCookie(f.authed(httptest.NewRequest("GET", "/", nil))) {
		t.Error("cookie valid after logout")
	}
}

func TestDataNeedsCookie(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	for _, p := range []string{"/ui/data/sessions/" + shopID + "/entries", "/ui/data/sessions/" + shopID + "/branches",
		"/ui/data/sessions/" + shopID + "/notebook", "/ui/events"} {
		if rec := f.do(httptest.NewRequest("GET", p, nil)); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s without cookie: %d", p, rec.Code)
		}
		r := httptest.NewRequest("GET", p, nil)
		r.AddCookie(f.cookie)
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		if rec := f.do(r); rec.Code != http.StatusForbidden {
			t.Errorf("%s cross-site: %d", p, rec.Code)
		}
	}
	// The cookie without the page's key, as a page served by another
	// program on 127.0.0.1 would get it from the browser, is refused.
	r := httptest.NewRequest("GET", "/ui/data/sessions/"+shopID+"/entries", nil)
	r.AddCookie(f.cookie)
	if rec := f.do(r); rec.Code != http.StatusUnauthorized {
		t.Errorf("the cookie without the key: %d, want 401", rec.Code)
	}
	if rec := f.get(t, "/ui/data/sessions/nope/entries", nil); rec.Code != 404 {
		t.Errorf("unknown session: %d", rec.Code)
	}
	if rec := f.get(t, "/ui/data/sessions/"+shopID+"/entries?limit=0", nil); rec.Code != 400 {
		t.Errorf("limit=0: %d", rec.Code)
	}
	if rec := f.get(t, "/ui/data/sessions/"+shopID+"/entries?window=9", nil); rec.Code != 404 {
		t.Errorf("window=9: %d", rec.Code)
	}
	// Unknown or repeated parameters are refused, as the /v1 routes refuse
	// them: the answer would not be the one asked for.
	for _, q := range []string{"/entries?limit=1&limit=999", "/entries?bogus=1", "/notebook?leaf=a&leaf=b", "/notebook?lef=a"} {
		if rec := f.get(t, "/ui/data/sessions/"+shopID+q, nil); rec.Code != 400 {
			t.Errorf("%s: %d, want 400", q, rec.Code)
		}
	}
}

func TestEntries(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	var r EntriesResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/entries", &r)
	if r.Leaf != "a0000004" || r.CurrentLeaf != "a0000004" || len(r.Windows) != 3 || r.Window != 3 {
		t.Fatalf("leaf %s current %s windows %d window %d", r.Leaf, r.CurrentLeaf, len(r.Windows), r.Window)
	}
	if r.Windows[1].Kind != "compaction" || r.Windows[2].Kind != "hook" || !strings.Contains(r.Windows[2].Summary, "Rollover summary") {
		t.Errorf("windows %+v", r.Windows)
	}
	if len(r.Items) != 3 || r.Items[0].Entry != "ro000001" || !strings.Contains(r.Items[0].Raw, `"fromHook":true`) {
		t.Fatalf("items %+v", r.Items)
	}
	// Window 1 in pages.
	var p1, p2 EntriesResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?window=1&limit=5", &p1)
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?window=1&limit=5&from=5", &p2)
	if p1.Total != p2.Total || p1.Total < 10 || p1.Items[0].Entry != "m0000001" || p2.Items[0].Index != 5 || p2.Items[0].Entry == p1.Items[4].Entry {
		t.Fatalf("pages: %+v / %+v", p1.Items, p2.Items)
	}
	// The page that ends before an index ("Load earlier").
	var pb EntriesResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?window=1&limit=3&to=5", &pb)
	if pb.From != 2 || len(pb.Items) != 3 || pb.Items[0].Entry != p1.Items[2].Entry || pb.Items[2].Entry != p1.Items[4].Entry {
		t.Fatalf("page before 5: from %d items %+v", pb.From, pb.Items)
	}
	if rec := f.get(t, "/ui/data/sessions/"+shopID+"/entries?window=1&to=5&from=1", nil); rec.Code != 400 {
		t.Errorf("to with from: %d, want 400", rec.Code)
	}
	// An entry on the side branch: its branch, its window, neighbours before it.
	var fe EntriesResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?entry=u0000005&before=2", &fe)
	if fe.Leaf != "a0000005" || fe.Focus != "u0000005" || fe.Window != 1 || fe.Items[2].Entry != "u0000005" || fe.Items[0].Index != fe.From {
		t.Fatalf("focus: leaf %s window %d from %d items %v", fe.Leaf, fe.Window, fe.From, fe.Items)
	}
	// A leaf given with an entry not on it: the branch holding the entry wins.
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?entry=u0000005&leaf=a0000004", &fe)
	if fe.Leaf != "a0000005" {
		t.Fatalf("leaf %s", fe.Leaf)
	}
	// Labels come with their entries.
	f.get(t, "/ui/data/sessions/"+shopID+"/entries?entry=u0000001&before=0&limit=1", &fe)
	if fe.Items[0].Label != "bug report" {
		t.Errorf("label %q", fe.Items[0].Label)
	}
}

func TestBranchesAndNotebook(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	var b BranchesResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/branches", &b)
	if len(b.Roots) != 1 || b.Leaves != 2 || b.CurrentLeaf != "a0000004" {
		t.Fatalf("branches %+v", b)
	}
	fork := b.Roots[0]
	if fork.Kind != "fork" || fork.Entry != "i0000001" || !fork.Current || len(fork.Children) != 2 || len(fork.Labels) != 1 || fork.Labels[0].Label != "bug report" {
		t.Fatalf("fork %+v", fork)
	}
	side, main := fork.Children[0], fork.Children[1]
	if side.Entry != "a0000005" || side.Current || len(side.Summaries) != 1 || !strings.Contains(side.Summaries[0].Text, "abandoned") {
		t.Errorf("side %+v", side)
	}
	if main.Entry != "a0000004" || !main.CurrentLeaf || main.Depth != fork.Depth+main.Segment || !strings.Contains(main.Preview, "PurpleElephantMarker") {
		t.Errorf("main %+v", main)
	}
	var nb NotebookResponse
	f.get(t, "/ui/data/sessions/"+shopID+"/notebook", &nb)
	if nb.Notebook.Revision != 2 || len(nb.Revisions) != 2 || len(nb.Notes) != 1 || nb.Notes[0].Name != "plan" {
		t.Fatalf("notebook %+v", nb)
	}
	if len(nb.Sections) != 3 || nb.Sections[1].Name != "State" || nb.Revisions[1].Added[0] != "State" || len(nb.Revisions[0].Content) != 2 {
		t.Errorf("sections %+v revisions %+v", nb.Sections, nb.Revisions)
	}
	f.get(t, "/ui/data/sessions/"+shopID+"/notebook?leaf=a0000005", &nb)
	if nb.Notebook.Revision != 1 || len(nb.Revisions) != 1 {
		t.Errorf("side branch notebook: %+v", nb.Notebook)
	}
}

// readEvent reads one server-sent event (skipping comments).
func readEvent(t *testing.T, br *bufio.Reader, timeout time.Duration) (string, Change) {
	t.Helper()
	type ev struct {
		name string
		c    Change
		err  error
	}
	ch := make(chan ev, 1)
	go func() {
		var e ev
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				e.err = err
				ch <- e
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && e.name != "":
				ch <- e
				return
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.err = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.c)
			}
		}
	}()
	select {
	case e := <-ch:
		if e.err != nil {
			t.Fatal(e.err)
		}
		return e.name, e.c
	case <-time.After(timeout):
		t.Fatal("no event within", timeout)
	}
	return "", Change{}
}

func TestEventsOnCommit(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	// EventSource sends no header: the key comes in the query.
	req, _ := http.NewRequest("GET", srv.URL+"/ui/events?key="+url.QueryEscape(f.key), nil)
	req.AddCookie(f.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	name, c := readEvent(t, br, 5*time.Second)
	if name != "hello" || c.LastSeq != f.st.LastSeq() {
		t.Fatalf("first event %s %+v", name, c)
	}
	importFile(t, f.st, "testdata/blog.jsonl")
	name, c = readEvent(t, br, 5*time.Second)
	if name != "change" || c.LastSeq != f.st.LastSeq() || len(c.Sessions) != 1 || c.Sessions[0] != blogID {
		t.Fatalf("after commit: %s %+v", name, c)
	}
	// A session that grows is reported too.
	importFile(t, f.st, "testdata/hostile.jsonl")
	name, c = readEvent(t, br, 5*time.Second)
	if name != "change" || len(c.Sessions) != 1 || c.Sessions[0] != hostileID {
		t.Fatalf("after second commit: %s %+v", name, c)
	}
	resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
}

// TestPagesStopShortOfLargeLines: a page whose lines would pass pageBytes
// holds fewer entries than its limit, always at least one, the entry asked
// for included; the next page (from, or to for the one before) carries on
// where it stopped.
func TestPagesStopShortOfLargeLines(t *testing.T) {
	mb := int64(1 << 20)
	sizes := []int64{3 * mb, 3 * mb, 3 * mb, 100, 100, 9 * mb, 100, 2 * mb}
	size := func(i int) int64 { return sizes[i] }
	n := len(sizes)
	for _, c := range []struct {
		name                string
		at, before, limit   int
		wantFirst, wantLast int
	}{
		{"from the start: two lines of 3 MB, not a third", 0, 0, 100, 0, 2},
		{"the limit comes first", 3, 0, 2, 3, 5},
		{"small lines, then one over the budget alone", 3, 0, 100, 3, 5},
		{"a line over the budget is a page of its own", 5, 0, 100, 5, 6},
		{"after it, the rest", 6, 0, 100, 6, 8},
		{"the entry asked for, and what fits before it", 4, 5, 100, 1, 5},
		{"past the end", 8, 0, 100, 8, 8},
	} {
		first, last := pageAround(c.at, c.before, c.limit, n, size)
		if first != c.wantFirst || last != c.wantLast {
			t.Errorf("%s: pageAround(%d, before %d, limit %d) = [%d, %d), want [%d, %d)", c.name, c.at, c.before, c.limit, first, last, c.wantFirst, c.wantLast)
		}
	}
	for _, c := range []struct {
		to, limit, wantFirst int
	}{{8, 100, 6}, {6, 100, 5}, {5, 100, 1}, {5, 1, 4}, {2, 100, 0}, {0, 100, 0}} {
		if first, last := pageBefore(c.to, c.limit, size); first != c.wantFirst || last != c.to {
			t.Errorf("pageBefore(%d, limit %d) = [%d, %d), want [%d, %d)", c.to, c.limit, first, last, c.wantFirst, c.to)
		}
	}
}

// TestLoginGoesOnToTheAskedPageOnly: a login link naming a session or
// search page sends the browser there with its key; any other route (a
// scheme, another host, a fragment of its own) is dropped and the browser
// lands on the list.
func TestLoginGoesOnToTheAskedPageOnly(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ route, want string }{
		{"/s/s1?e=m1", "&to=" + url.QueryEscape("/s/s1?e=m1")},
		{"/s/a%2Fb", "&to=" + url.QueryEscape("/s/a%2Fb")},
		{"/search?q=x", "&to=" + url.QueryEscape("/search?q=x")},
		{"", ""},
		{"javascript:alert(1)", ""},
		{"//evil.example/s/x", ""},
		{"/s/x#key=stolen", ""},
		{"/login", ""},
	} {
		rec := f.do(httptest.NewRequest("GET", LoginURLTo("", f.logins.NewCode(), c.route), nil))
		loc := rec.Header().Get("Location")
		rest, ok := strings.CutPrefix(loc, "/#"+KeyParam+"=")
		if rec.Code != http.StatusSeeOther || !ok {
			t.Fatalf("route %q: status %d, Location %q", c.route, rec.Code, loc)
		}
		if _, to, _ := strings.Cut(rest, "&"); "&"+to != c.want && !(to == "" && c.want == "") {
			t.Errorf("route %q: Location %q; want it to end %q", c.route, loc, c.want)
		}
	}
}
