// Package webui is pi-history's web UI: a small single-page app embedded in
// the binary (plain JavaScript modules and CSS, no build step, no remote
// origin) and the few routes it needs besides the JSON API under /v1.
//
// Handler serves:
//
//	GET  /                          the app shell (index.html) with a strict Content-Security-Policy
//	GET  /assets/{file}             the embedded scripts, styles and icon
//	GET  /ui/login?code=…           exchanges a one-time login code for the session cookie, then redirects to /
//	POST /ui/login                  the same for a pasted API token (form field "token"), when Options.ValidToken is set
//	POST /ui/logout                 forgets the session cookie
//	GET  /ui/events                 server-sent events: a "change" event after every store commit that moved a session
//	GET  /ui/check                        204 when the cookie and key sent make a session
//	GET  /ui/data/sessions/{id}/entries   a page of a branch's window with each entry's original JSON line
//	GET  /ui/data/sessions/{id}/branches  the session's tree reduced to forks and leaves, with labels and branch summaries
//	GET  /ui/data/sessions/{id}/notebook  the notebook of a branch, its revision timeline and its named notes
//
// Everything under /ui/ except the login exchange requires the session
// cookie and the page's key (see Logins). The page itself reads sessions,
// session summaries and search results from the JSON API under /v1,
// authenticated the same way: the API installs Logins.ValidCookieValue as
// its cookie validator.
//
// Session content is hostile text. The page builds every node with
// textContent (never innerHTML), shows images only from data: URLs with an
// image/* type, never turns javascript: (or any non-http) URL into a link,
// and the shell's Content-Security-Policy forbids inline script and every
// remote origin.
package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/pi-history/pi-history/search"

	"github.com/pi-history/pi-history/internal/problem"
	"github.com/pi-history/pi-history/store"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is sent with the app shell and every other response
// of this package.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Options configure Handler.
type Options struct {
	// Store is the store the UI shows; its commits drive /ui/events and the
	// /ui/data routes read it. Required.
	Store *store.Store
	// Logins issues and checks login codes and session cookies. Required.
	Logins *Logins
	// ValidToken, when set, lets the login page accept a pasted API token
	// (POST /ui/login) as well as a login code (api.Authenticator.ValidToken).
	ValidToken func(token string) bool
	// Done, when closed, ends every /ui/events stream: pass the server's
	// shutdown signal so that open pages do not hold a graceful shutdown up.
	// The pages reconnect by themselves to the next server.
	Done <-chan struct{}
	// Log receives handler errors; nil discards them.
	Log *slog.Logger
	// Engine resolves sessions and leaves to branches (the one resolver
	// every route shares); nil: an engine over Store.
	Engine *search.Engine
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

type ui struct {
	o      Options
	assets map[string]*asset // by name under static/
	mux    *http.ServeMux

	bmu    sync.Mutex
	bcache map[string]*branchView // by session and leaf; see branchOf
}

// Handler returns the web UI. Mount it for every path the API does not own
// ("/", "/assets/", "/ui/"); it answers 404 for anything else.
func Handler(o Options) http.Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Store == nil || o.Logins == nil {
		panic("webui: Options.Store and Options.Logins are required")
	}
	if o.Engine == nil {
		o.Engine = search.New(o.Store, nil)
	}
	u := &ui{o: o, assets: map[string]*asset{}}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) {
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		u.assets[strings.TrimPrefix(p, "static/")] = &asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("webui: embedded assets: " + err.Error())
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", u.shell)
	m.HandleFunc("GET /assets/{file...}", u.asset)
	m.HandleFunc("GET /ui/login", u.loginCode)
	m.HandleFunc("POST /ui/login", u.loginToken)
	m.HandleFunc("POST /ui/logout", u.logout)
	m.Handle("GET "+EventsPath, u.authed(u.events))
	// 204 when the request's cookie and key make a session: the page tries
	// a key from its address with it before keeping it.
	m.Handle("GET /ui/check", u.authed(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	m.Handle("GET /ui/data/sessions/{id}/entries", u.authed(u.entries))
	m.Handle("GET /ui/data/sessions/{id}/branches", u.authed(u.branches))
	m.Handle("GET /ui/data/sessions/{id}/notebook", u.authed(u.notebook))
	u.mux = m
	return u
}

func (u *ui) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	u.mux.ServeHTTP(w, r)
}

// securityHeaders are set on every response of the package.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's own form POST (the token login), which
	// the Origin checks must refuse. Other sites still get no referrer.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (u *ui) shell(w http.ResponseWriter, r *http.Request) {
	a := u.assets["index.html"]
	w.Header().Set("Cache-Control", "no-cache")
	u.serveAsset(w, r, a)
}

func (u *ui) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	a := u.assets[name]
	if a == nil || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	// Names are stable, so revalidate each time (cheap: ETag) rather than
	// risk a stale script after an upgrade.
	w.Header().Set("Cache-Control", "no-cache")
	u.serveAsset(w, r, a)
}

func (u *ui) serveAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	http.ServeContent(w, r, "", timeZero, bytes.NewReader(a.body))
}

// authed requires the session cookie and a same-origin (or direct) request.
func (u *ui) authed(fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			writeError(w, http.StatusForbidden, problem.ForbiddenOrigin, "Forbidden", "a request with the session cookie must come from the pi-history page itself")
			return
		}
		if !u.o.Logins.ValidCookie(r) {
			writeError(w, http.StatusUnauthorized, problem.Unauthorized, "Authentication required", "log in first: open the URL 'pi-history serve' printed, or run 'pi-history open'")
			return
		}
		DropKeyParam(r)
		fn(w, r)
	})
}
