package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/webui"
)

const testAddr = "127.0.0.1:7314"

// harness is a server over a real store in a temporary data directory.
type harness struct {
	t        *testing.T
	dataDir  string
	sessions string // the sessions directory
	journal  string // the fixture journal of session s1
	svc      *service.Service
	srv      *Server
	token    string
	logins   *webui.Logins // issues the codes of POST /v1/ui/login-code
}

type harnessOpt func(*Options)

// on returns a copy of h that reports to t (for subtests).
func (h *harness) on(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessOn(t, nil, opts...)
}

// newHarnessOn is newHarness with the store in storeFS (see
// service.Options.StoreFS; the operating system's when nil).
func newHarnessOn(t *testing.T, storeFS vfs.FS, opts ...harnessOpt) *harness {
	t.Helper()
	root := t.TempDir()
	h := &harness{t: t, dataDir: filepath.Join(root, "data"), sessions: filepath.Join(root, "sessions")}
	h.journal = writeJournal(t, h.sessions, "--home-dev-shop--", "s1", fixtureLines("s1"))
	svc, err := service.Open(service.Options{DataDir: h.dataDir, SessionsDirs: []string{h.sessions}, StoreFS: storeFS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	h.svc = svc
	if _, err := svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	tok, _, _, err := LoadOrCreateToken(h.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	h.token = tok
	eng := search.New(svc.Store, svc.Index)
	ctxRoutes := NewContextRoutes(svc.Store, eng, h.dataDir, nil)
	h.logins = webui.NewLogins()
	o := Options{Service: svc, Engine: eng, Token: tok, Addr: testAddr, MountV1: func(r chi.Router) {
		ctxRoutes.Mount(r)
		MountLoginCode(r, h.logins.CodeHandler())
	}}
	for _, f := range opts {
		f(&o)
	}
	h.srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fixtureLines is a small v3 session: a first window, a side branch, a
// compaction starting window 2, and a label.
func fixtureLines(sid string) []string {
	long := strings.Repeat("0123456789", 500) // 5,000 characters
	return []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/dev/shop"}`, sid),
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":"The checkout test fails with ErrCartEmpty; find out why."}}`,
		`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Reading the test."},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"cart/cart_test.go"}}]}}`,
		`{"type":"message","id":"m3","parentId":"m2","timestamp":"2026-01-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"` + long + `"}],"isError":false}}`,
		`{"type":"message","id":"b1","parentId":"m2","timestamp":"2026-01-01T10:00:04.000Z","message":{"role":"user","content":"an abandoned side branch"}}`,
		`{"type":"compaction","id":"c1","parentId":"m3","timestamp":"2026-01-01T10:00:05.000Z","summary":"Summary: ErrCartEmpty comes from cart.go","firstKeptEntryId":"m3","tokensBefore":1000}`,
		`{"type":"message","id":"m4","parentId":"c1","timestamp":"2026-01-01T10:00:06.000Z","message":{"role":"user","content":"fix it please"}}`,
		`{"type":"message","id":"m5","parentId":"m4","timestamp":"2026-01-01T10:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Fixed ErrCartEmpty in cart.go."}]}}`,
		`{"type":"label","id":"l1","parentId":"m5","timestamp":"2026-01-01T10:00:08.000Z","targetId":"m4","label":"the fix"}`,
	}
}

func userLine(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T11:00:00.000Z","message":{"role":"user","content":%q}}`, id, p, text)
}

func writeJournal(t testing.TB, sessions, project, sid string, lines []string) string {
	t.Helper()
	p := filepath.Join(sessions, project, sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func appendLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// req describes one request; zero values mean: authenticated with the
// bearer token, Host 127.0.0.1:7314, JSON body when Body is not a string.
type req struct {
	Method, Path string
	Body         any               // string: sent as is; otherwise JSON-encoded
	Header       map[string]string // "" value deletes the header
	NoAuth       bool
}

func (h *harness) do(r req) *httptest.ResponseRecorder {
	h.t.Helper()
	var body io.Reader
	ct := ""
	switch b := r.Body.(type) {
	case nil:
	case string:
		body, ct = strings.NewReader(b), "application/json"
	case []byte:
		body, ct = bytes.NewReader(b), "application/json"
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		body, ct = bytes.NewReader(enc), "application/json"
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	hr := httptest.NewRequest(r.Method, "http://"+testAddr+r.Path, body)
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if !r.NoAuth {
		hr.Header.Set("Authorization", "Bearer "+h.token)
	}
	for k, v := range r.Header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, hr)
	return w
}

// ok decodes a 200 answer into out.
func (h *harness) ok(w *httptest.ResponseRecorder, out any) {
	h.t.Helper()
	if w.Code != http.StatusOK {
		h.t.Fatalf("status %d, want 200: %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		h.t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if out != nil {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			h.t.Fatalf("decode %s: %v", w.Body, err)
		}
	}
}

// problem checks a problem answer: status, and param when want.Param is set.
func (h *harness) problem(w *httptest.ResponseRecorder, status int, param string) *client.Error {
	h.t.Helper()
	if w.Code != status {
		h.t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		h.t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p client.Error
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		h.t.Fatalf("decode problem %s: %v", w.Body, err)
	}
	if p.Status != status || p.Type == "" || p.Title == "" || p.Detail == "" {
		h.t.Fatalf("incomplete problem document: %s", w.Body)
	}
	if param != "" && p.Param != param {
		h.t.Fatalf("problem names param %q, want %q: %s", p.Param, param, w.Body)
	}
	return &p
}

// unchanged fails the test if the store changed since lastSeq was read.
func (h *harness) unchanged(lastSeq uint64, sessions int) {
	h.t.Helper()
	if got := h.svc.Store.LastSeq(); got != lastSeq {
		h.t.Fatalf("store changed: last seq %d, was %d", got, lastSeq)
	}
	ss, err := h.svc.Store.Sessions()
	if err != nil {
		h.t.Fatal(err)
	}
	if len(ss) != sessions {
		h.t.Fatalf("store has %d sessions, had %d", len(ss), sessions)
	}
}
