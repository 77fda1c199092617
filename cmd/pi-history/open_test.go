package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/webui"
)

func TestOpenPrintsALoginURLThatLogsIn(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`, srvLine("a1", "", "hello"))
	e.serve()

	out := strings.TrimSpace(e.mustCLI("open", "--print"))
	if !strings.HasPrefix(out, e.url+"/ui/login?code=") {
		t.Fatalf("open --print: %q, want %s/ui/login?code=…", out, e.url)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(out)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == api.CookieName {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("login URL: status %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	key, ok := strings.CutPrefix(resp.Header.Get("Location"), "/#"+webui.KeyParam+"=")
	if !ok {
		t.Fatalf("login URL sends the browser to %q, not to the page with its key", resp.Header.Get("Location"))
	}
	stats := func(withKey bool) int {
		req, _ := http.NewRequest("GET", e.url+"/v1/stats", nil)
		req.AddCookie(cookie)
		if withKey {
			req.Header.Set(webui.KeyHeader, key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := stats(true); code != 200 {
		t.Errorf("the cookie and key the login URL gave are refused: %d", code)
	}
	if code := stats(false); code != http.StatusUnauthorized {
		t.Errorf("the cookie alone: %d, want 401", code)
	}
	// A code is good once.
	resp, err = noRedirect.Get(out)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("second use of a login URL: status %d, want 403", resp.StatusCode)
	}
}

func TestOpenStartsTheBrowserOnATerminal(t *testing.T) {
	e := newTestEnv(t)
	e.serve()
	got := filepath.Join(t.TempDir(), "opened")
	opener := filepath.Join(t.TempDir(), "fake-xdg-open")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(o func() string, term func(io.Writer) bool) { browserOpener, stdoutIsTerminal = o, term }(browserOpener, stdoutIsTerminal)
	browserOpener = func() string { return opener }
	stdoutIsTerminal = func(io.Writer) bool { return true }

	out := strings.TrimSpace(e.mustCLI("open"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(got)
		if err == nil {
			// The browser gets a private page that forwards to the URL,
			// not the URL: another user can read a command line, and
			// the code in it logs in whoever uses it first.
			page := filepath.Join(e.data, webui.LoginPageFile)
			if string(b) != "file://"+page || strings.Contains(string(b), "code=") {
				t.Fatalf("the browser got %q; want file://%s", b, page)
			}
			info, err := os.Stat(page)
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("login page: %v, mode %v; want 0600", err, info.Mode())
			}
			html, _ := os.ReadFile(page)
			if !strings.Contains(string(html), `content="0;url=`+out+`"`) || !strings.Contains(string(html), `href="`+out+`"`) {
				t.Fatalf("the login page does not forward to %s:\n%s", out, html)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the browser was not started")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// --print never starts it, on a terminal either.
	os.Remove(got)
	e.mustCLI("open", "--print")
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(got); err == nil {
		t.Error("open --print started the browser")
	}
}

func TestOpenWithoutServer(t *testing.T) {
	e := newTestEnv(t)
	_, errOut, code := e.cli("open")
	if code != 1 || !strings.Contains(errOut, "no pi-history server is running") || !strings.Contains(errOut, "pi-history serve") {
		t.Errorf("open without a server: exit %d, %q", code, errOut)
	}
	// A server.json left by a server that died: it does not answer.
	os.MkdirAll(e.data, 0o700)
	api.WriteServerInfo(e.data, client.ServerInfo{Addr: "127.0.0.1:1", PID: 99999999, URL: "http://127.0.0.1:1"})
	os.WriteFile(filepath.Join(e.data, client.TokenFile), []byte(strings.Repeat("x", 64)), 0o600)
	_, errOut, code = e.cli("open")
	if code != 1 || !strings.Contains(errOut, "does not answer") || !strings.Contains(errOut, "pi-history serve") {
		t.Errorf("open with a dead server: exit %d, %q", code, errOut)
	}
}

// TestHitsLinkToTheirPageAndOpenGoesThere: while a server runs, every hit
// carries its entry's web UI address (text and --json), and 'open
// SESSION/ENTRY' logs in on the way to that page; an unknown session or
// entry is an error. Without a server, hits carry no address.
func TestHitsLinkToTheirPageAndOpenGoesThere(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1-aaaa", `{"type":"session","version":3,"id":"s1-aaaa","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "hello LinkMarker"))
	e.mustCLI("import")
	if out := e.mustCLI("search", "--json", "LinkMarker"); strings.Contains(out, `"url"`) {
		t.Errorf("a hit found without a server has an address: %s", out)
	}
	e.serve()
	want := e.url + "/#/s/s1-aaaa?e=a1"
	if out := e.mustCLI("search", "--json", "LinkMarker"); !strings.Contains(out, `"url":"`+want+`"`) {
		t.Errorf("--json hit lacks its address %s: %s", want, out)
	}
	if out := e.mustCLI("search", "LinkMarker"); !strings.Contains(out, "  "+want+"\n") {
		t.Errorf("hit line lacks its address %s: %s", want, out)
	}
	for _, c := range []struct{ arg, route string }{
		{"s1-aaaa", "/s/s1-aaaa"},
		{"s1", "/s/s1-aaaa"}, // a unique prefix
		{"s1/a1", "/s/s1-aaaa?e=a1"},
	} {
		out := strings.TrimSpace(e.mustCLI("open", "--print", c.arg))
		if !strings.HasPrefix(out, e.url+"/ui/login?code=") || !strings.HasSuffix(out, "&to="+url.QueryEscape(c.route)) {
			t.Errorf("open --print %s: %q; want a login URL going on to %s", c.arg, out, c.route)
		}
	}
	for _, arg := range []string{"nosuch", "s1-aaaa/nosuch", "/a1"} {
		if _, stderr, code := e.cli("open", "--print", arg); code == 0 || stderr == "" {
			t.Errorf("open --print %s: exit %d, %q; want an error", arg, code, stderr)
		}
	}
}
