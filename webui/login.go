package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pi-history/pi-history/internal/problem"
)

// CookieName is the session cookie; it equals api.CookieName.
const CookieName = "pi_history_session"

// Lifetimes.
const (
	CodeTTL    = 10 * time.Minute    // a login code is good this long, once
	SessionTTL = 30 * 24 * time.Hour // a session cookie is good this long after login
	maxCodes   = 64                  // outstanding codes kept; the oldest goes first
)

// Logins issues one-time login codes and the browser sessions they are
// exchanged for. Both live in memory only: a restarted server forgets every
// code and session, and 'pi-history open' logs in again. It is safe for
// concurrent use.
//
// A session is two secrets: the cookie, and a key the page keeps in its
// localStorage and sends with every request (header KeyHeader, or for a
// plain GET such as a download link or the event stream, query parameter
// KeyParam). The cookie alone is not enough: a browser sends the cookies of
// 127.0.0.1 to every port of it, so a page served by any other program on
// the machine (another user's, say) would get it with its own requests.
// localStorage belongs to one origin, port included, and the key reaches
// the page in a URL fragment, which the browser sends to no server.
type Logins struct {
	mu       sync.Mutex
	codes    map[[32]byte]time.Time  // sha256(code) → expiry
	sessions map[[32]byte]loginState // sha256(cookie value) → its session
	now      func() time.Time
}

// loginState is one browser session.
type loginState struct {
	exp time.Time
	key [32]byte // sha256 of the page's key
}

// The page's key travels in this header, or in this query parameter of a
// GET (see Logins).
const (
	KeyHeader = "X-Pi-History-Key"
	KeyParam  = "key"
)

// NewLogins returns an empty set of codes and sessions.
func NewLogins() *Logins {
	return &Logins{codes: map[[32]byte]time.Time{}, sessions: map[[32]byte]loginState{}, now: time.Now}
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("webui: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewCode returns a fresh login code, good once within CodeTTL. Print it as
// part of LoginURL.
func (l *Logins) NewCode() string {
	c := randomToken()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.gcLocked(now)
	for len(l.codes) >= maxCodes {
		var oldest [32]byte
		var t time.Time
		for k, exp := range l.codes {
			if t.IsZero() || exp.Before(t) {
				oldest, t = k, exp
			}
		}
		delete(l.codes, oldest)
	}
	l.codes[sha256.Sum256([]byte(c))] = now.Add(CodeTTL)
	return c
}

// LoginURL is the URL that logs a browser in with code; base is the server's
// base URL (http://127.0.0.1:7314).
func LoginURL(base, code string) string {
	return strings.TrimRight(base, "/") + "/ui/login?code=" + url.QueryEscape(code)
}

// LoginURLTo is LoginURL for a browser to be shown the page at route (a
// route of the page's fragment, such as /s/ID?e=ENTRY) once logged in.
func LoginURLTo(base, code, route string) string {
	u := LoginURL(base, code)
	if route != "" {
		u += "&" + url.Values{ToParam: {route}}.Encode()
	}
	return u
}

// ToParam names the page route a login goes on to (see LoginURLTo).
const ToParam = "to"

// pageRoute returns route when it is one of the page's own routes of a
// session or a search (what 'pi-history open' asks for), else "": a login
// link cannot send the page anywhere else.
func pageRoute(route string) string {
	if len(route) > 2048 || strings.ContainsAny(route, "#\x00\r\n") {
		return ""
	}
	if strings.HasPrefix(route, "/s/") || strings.HasPrefix(route, "/search?") {
		return route
	}
	return ""
}

// LoginPageFile is the page, in the data directory, that takes a browser
// to a login URL (see WriteLoginPage).
const LoginPageFile = "open-login.html"

// WriteLoginPage writes (0600) a page into dataDir that forwards a browser
// to the login URL u, and returns its path. 'pi-history open' gives the
// browser that path, not u: a command line (the opener's, the browser's)
// can be read by every user of the machine (/proc/PID/cmdline, ps), and the
// code in u logs in whoever uses it first. The code works once, so the page
// is harmless once used; the next one is written over it.
func WriteLoginPage(dataDir, u string) (string, error) {
	p := filepath.Join(dataDir, LoginPageFile)
	tmp, err := os.CreateTemp(dataDir, ".open-login-*.html") // 0600
	if err != nil {
		return "", err
	}
	e := html.EscapeString(u)
	_, err = fmt.Fprintf(tmp, `<!doctype html>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=%s">
<title>pi-history: logging in</title>
<p><a href="%s">Log in to pi-history</a></p>
`, e, e)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
}

// redeem consumes code and returns a new session: its cookie value and
// the page's key.
func (l *Logins) redeem(code string) (cookie, key string, ok bool) {
	if code == "" || len(code) > 200 {
		return "", "", false
	}
	k := sha256.Sum256([]byte(code))
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	exp, found := l.codes[k]
	delete(l.codes, k) // single use, even when expired
	if !found || !now.Before(exp) {
		return "", "", false
	}
	cookie, key = l.newSessionLocked(now)
	return cookie, key, true
}

func (l *Logins) newSessionLocked(now time.Time) (cookie, key string) {
	l.gcLocked(now)
	cookie, key = randomToken(), randomToken()
	l.sessions[sha256.Sum256([]byte(cookie))] = loginState{exp: now.Add(SessionTTL), key: sha256.Sum256([]byte(key))}
	return cookie, key
}

func (l *Logins) gcLocked(now time.Time) {
	for k, exp := range l.codes {
		if !now.Before(exp) {
			delete(l.codes, k)
		}
	}
	for k, st := range l.sessions {
		if !now.Before(st.exp) {
			delete(l.sessions, k)
		}
	}
}

// ValidCookieValue reports whether value is a live session cookie and r
// carries that session's key (see Logins). Its signature is
// api.CookieValidator's: install it with
// Authenticator.SetCookieValidator(logins.ValidCookieValue).
func (l *Logins) ValidCookieValue(r *http.Request, value string) bool {
	if value == "" || len(value) > 200 || r == nil {
		return false
	}
	key := r.Header.Get(KeyHeader)
	if key == "" && r.Method == http.MethodGet {
		key = r.URL.Query().Get(KeyParam)
	}
	if key == "" || len(key) > 200 {
		return false
	}
	k, kk := sha256.Sum256([]byte(value)), sha256.Sum256([]byte(key))
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.sessions[k]
	return ok && l.now().Before(st.exp) && subtle.ConstantTimeCompare(st.key[:], kk[:]) == 1
}

// DropKeyParam removes the key from r's query once it has been checked, so
// that the handlers, which refuse parameters they do not know, never see it.
func DropKeyParam(r *http.Request) {
	q := r.URL.Query()
	if q.Has(KeyParam) {
		q.Del(KeyParam)
		r.URL.RawQuery = q.Encode()
	}
}

// ValidCookie reports whether r carries a live session cookie and its key.
func (l *Logins) ValidCookie(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && l.ValidCookieValue(r, c.Value)
}

func (l *Logins) forget(value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, sha256.Sum256([]byte(value)))
}

// CodeHandler answers POST with a fresh login code as JSON:
// {"code": "…", "path": "/ui/login?code=…"}. The API mounts it behind
// bearer-token auth (e.g. POST /v1/ui/login-code) for 'pi-history open',
// which then opens base URL + path in a browser.
func (l *Logins) CodeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, problem.Method, "Method not allowed", "use POST")
			return
		}
		c := l.NewCode()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(struct {
			Code string `json:"code"`
			Path string `json:"path"`
		}{c, "/ui/login?code=" + url.QueryEscape(c)})
	})
}

func (u *ui) setSessionCookie(w http.ResponseWriter, value string) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(SessionTTL / time.Second)})
}

// loginCode exchanges ?code= for the session cookie. It is the one GET that
// changes anything, and all it changes is the cookie.
func (u *ui) loginCode(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	v, key, ok := u.o.Logins.redeem(r.URL.Query().Get("code"))
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("This login link was already used or has expired (codes are good once, for 10 minutes).\n" +
			"Run 'pi-history open' for a new one.\n"))
		return
	}
	u.loggedIn(w, r, v, key, pageRoute(r.URL.Query().Get(ToParam)))
}

// loggedIn sets the session cookie and sends the browser to the page with
// the session's key in the URL's fragment, which no request carries: the
// page moves it to its localStorage and out of the address bar.
func (u *ui) loggedIn(w http.ResponseWriter, r *http.Request, cookie, key, route string) {
	u.setSessionCookie(w, cookie)
	to := "/#" + KeyParam + "=" + key
	if route != "" {
		to += "&" + ToParam + "=" + url.QueryEscape(route)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// sameOrigin reports whether a state-changing request comes from this
// server's own page: its Origin must name the request's Host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return false
	}
	ou, err := url.Parse(o)
	return err == nil && (ou.Scheme == "http" || ou.Scheme == "https") && strings.EqualFold(ou.Host, r.Host)
}

// loginToken accepts a pasted API token from the page's login form.
func (u *ui) loginToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, problem.ForbiddenOrigin, "Forbidden", "log in from the pi-history page itself")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if u.o.ValidToken == nil || tok == "" || !u.o.ValidToken(tok) {
		http.Redirect(w, r, "/#/login?failed=1", http.StatusSeeOther)
		return
	}
	l := u.o.Logins
	l.mu.Lock()
	v, key := l.newSessionLocked(l.now())
	l.mu.Unlock()
	u.loggedIn(w, r, v, key, "")
}

func (u *ui) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, problem.ForbiddenOrigin, "Forbidden", "log out from the pi-history page itself")
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		u.o.Logins.forget(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// writeError sends an RFC 9457 problem document through the writer every
// route uses (internal/problem); typ is one of that package's types.
func writeError(w http.ResponseWriter, status int, typ, title, detail string) {
	problem.Write(w, problem.Doc{Type: typ, Title: title, Status: status, Detail: detail})
}
