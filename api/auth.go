package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/datadir"
)

// CookieName is the web UI's session cookie. The API accepts it in place of
// the bearer token when a CookieValidator is installed.
const CookieName = "pi_history_session"

// UIKeyParam is the query parameter that may carry the web UI page's key
// beside its cookie (it equals webui.KeyParam; the cookie validator checks
// it).
const UIKeyParam = "key"

// LoadOrCreateToken returns the API token kept in <dataDir>/api-token,
// creating it (32 random bytes, hex, mode 0600) when absent. A token file
// readable by others is made private again and reported by fixedMode.
func LoadOrCreateToken(dataDir string) (token string, created, fixedMode bool, err error) {
	p := filepath.Join(dataDir, client.TokenFile)
	// Prepare makes a readable token private; whether it was is told.
	if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
		fixedMode = true
	}
	if err := datadir.Prepare(dataDir, true); err != nil {
		return "", false, false, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			f.Close()
			os.Remove(p)
			return "", false, false, err
		}
		tok := hex.EncodeToString(b[:])
		_, werr := f.WriteString(tok + "\n")
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(p)
			return "", false, false, fmt.Errorf("write API token %s: %w", p, err)
		}
		return tok, true, false, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, false, fmt.Errorf("create API token %s: %w", p, err)
	}
	info, err := os.Stat(p)
	if err != nil {
		return "", false, false, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(p, 0o600); err != nil {
			return "", false, false, fmt.Errorf("API token %s is readable by others and cannot be made private: %w", p, err)
		}
		fixedMode = true
	}
	tok, err := client.ReadToken(dataDir)
	if err != nil {
		return "", false, fixedMode, err
	}
	if len(tok) < 32 {
		return "", false, fixedMode, fmt.Errorf("API token in %s is too short (%d characters); delete the file and restart to create a new one", p, len(tok))
	}
	return tok, false, fixedMode, nil
}

// CookieValidator reports whether value is a valid web UI session cookie.
// The web UI package provides it (see Authenticator.SetCookieValidator).
type CookieValidator func(r *http.Request, value string) bool

// Authenticator decides whether a request may use the API: a bearer token
// equal to the server's, or a pi_history_session cookie accepted by the
// installed CookieValidator. A request authenticated by cookie comes from a
// browser, so for it the server also demands a same-origin Origin on every
// state-changing request and refuses any Sec-Fetch-Site other than
// same-origin or none.
type Authenticator struct {
	token  []byte
	cookie atomic.Pointer[CookieValidator]
}

// NewAuthenticator checks bearer tokens against token.
func NewAuthenticator(token string) *Authenticator {
	return &Authenticator{token: []byte(token)}
}

// SetCookieValidator installs (or, with nil, removes) the cookie check. The
// web UI calls it with a function that validates the cookies its login flow
// issues; the login flow itself can check a pasted token with ValidToken.
func (a *Authenticator) SetCookieValidator(fn CookieValidator) {
	if fn == nil {
		a.cookie.Store(nil)
		return
	}
	a.cookie.Store(&fn)
}

// ValidToken reports, in constant time, whether tok is the API token.
func (a *Authenticator) ValidToken(tok string) bool {
	return len(a.token) > 0 && subtle.ConstantTimeCompare([]byte(tok), a.token) == 1
}

// AuthMethod says how a request authenticated.
type AuthMethod int

// Methods.
const (
	AuthNone AuthMethod = iota
	AuthBearer
	AuthCookie
)

// Check authenticates r.
func (a *Authenticator) Check(r *http.Request) AuthMethod {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && a.ValidToken(strings.TrimSpace(tok)) {
			return AuthBearer
		}
		return AuthNone // a wrong token is not rescued by a cookie
	}
	if fn := a.cookie.Load(); fn != nil {
		if c, err := r.Cookie(CookieName); err == nil && c.Value != "" && (*fn)(r, c.Value) {
			return AuthCookie
		}
	}
	return AuthNone
}

// Middleware refuses unauthenticated requests with 401 and applies the
// browser rules to cookie-authenticated ones.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch a.Check(r) {
		case AuthBearer:
			next.ServeHTTP(w, r)
			return
		case AuthCookie:
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
				writeProblem(w, &forbidden(ProblemForbiddenOrigin, "Sec-Fetch-Site", "a cookie-authenticated request must come from the pi-history page itself (Sec-Fetch-Site %q)", site).p)
				return
			}
			if unsafeMethod(r.Method) && r.Header.Get("Origin") == "" {
				writeProblem(w, &forbidden(ProblemForbiddenOrigin, "Origin", "a cookie-authenticated %s must carry a same-origin Origin header", r.Method).p)
				return
			}
			// The page's key may come as a query parameter (a download
			// link); the validator has checked it, and the routes, which
			// refuse parameters they do not know, must not see it.
			if q := r.URL.Query(); q.Has(UIKeyParam) {
				q.Del(UIKeyParam)
				r.URL.RawQuery = q.Encode()
			}
			next.ServeHTTP(w, r)
			return
		}
		detail := "send Authorization: Bearer <token>; 'pi-history token' prints the token"
		if r.Header.Get("Authorization") != "" {
			detail = "the bearer token is wrong (or not a Bearer token); 'pi-history token' prints the right one"
		}
		writeProblem(w, &client.Error{Type: ProblemUnauthorized, Title: "Authentication required", Status: http.StatusUnauthorized,
			Detail: detail, Param: "Authorization"})
	})
}

// BearerOnly admits only requests authenticated with the bearer token, not
// with the web UI's cookie; use it under /v1 (after Middleware) for routes
// that mint credentials, such as POST /v1/ui/login-code. A request that got
// past Middleware with an Authorization header carried the right token (a
// wrong one is never rescued by a cookie), so the header's presence decides.
func BearerOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			writeProblem(w, &forbidden(ProblemForbiddenOrigin, "Authorization",
				"this route needs the bearer token ('pi-history token'); the web UI's session cookie is not enough").p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoginCodePath is the route, under /v1, that issues web UI login codes.
const LoginCodePath = "/ui/login-code"

// MountLoginCode adds POST /v1/ui/login-code, bearer token only, answered
// by codes (the web UI's Logins.CodeHandler): 'pi-history open' asks it for
// a one-time code and opens the login URL in a browser. Call it from
// Options.MountV1.
func MountLoginCode(r chi.Router, codes http.Handler) {
	r.With(BearerOnly).Method(http.MethodPost, LoginCodePath, codes)
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// hostGuard accepts requests whose Host header names this server: a
// loopback name with the listening port, the configured address, or one of
// the extra allowed hosts. Anything else is a DNS-rebinding attempt (a
// hostile name resolved to 127.0.0.1) or a misdirected request.
type hostGuard struct {
	allowed map[string]bool // lower-case host[:port]
}

// newHostGuard builds the allow-list for a server listening on addr
// (host:port). extra are further host or host:port names (e.g. a LAN name
// when bound to a non-loopback address).
func newHostGuard(addr string, extra []string) (*hostGuard, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: want HOST:PORT: %w", addr, err)
	}
	g := &hostGuard{allowed: map[string]bool{}}
	add := func(h string) {
		h = strings.ToLower(h)
		g.allowed[net.JoinHostPort(h, port)] = true
		if port == "80" {
			g.allowed[hostOnly(h)] = true
		}
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		add(h)
	}
	if host != "" && !isUnspecified(host) {
		add(host)
	}
	for _, e := range extra {
		if e == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(e); err == nil {
			g.allowed[strings.ToLower(e)] = true
		} else {
			add(strings.Trim(e, "[]"))
		}
	}
	return g, nil
}

func hostOnly(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

func isUnspecified(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

func (g *hostGuard) ok(host string) bool { return g.allowed[strings.ToLower(host)] }

// IsLoopback reports whether addr's host is a loopback address or name.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
