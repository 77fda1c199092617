// Package api is pi-history's HTTP API: everything the Pi extension, the
// web UI and scripts can ask of a running 'pi-history serve', over chi.
//
// All routes but /healthz need a bearer token (or the web UI's session
// cookie, see Authenticator). Every request must name this server in its
// Host header (loopback names, the listening address, or hosts allowed
// explicitly), which defeats DNS rebinding; state-changing requests that
// carry an Origin must be same-origin and cross-site fetches are refused,
// which defeats cross-site requests; no CORS headers are ever sent. Errors
// are RFC 9457 problem documents naming the offending parameter. Request
// bodies are size-limited and decoded strictly (unknown fields are errors).
//
// Read-your-writes for a live Pi: POST /v1/sessions/{id}/sync reads the
// session's journal to its current end before answering, and POST
// /v1/sessions/{id}/entries stores entries the extension pushes (by id,
// idempotent; an entry pushed and later read from the file is one entry).
//
// The routes are documented in openapi.json (served at /v1/openapi.json);
// a test keeps that document and the router in step.
package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pihistory "github.com/pi-history/pi-history"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

// Engine answers the search-related routes: a History, with the two
// answers only a server gives (every hit of a search in pages, and the
// windows the model's history tool sees). *search.Engine implements it.
type Engine interface {
	pihistory.History
	SearchPages(ctx context.Context, r *pihistory.SearchRequest, fn func(*pihistory.SearchResponse) error) error
	AllowlistedWindows(ctx context.Context, session, leaf string) (leafUsed string, windows []pihistory.Window, err error)
	// Branch is the one resolver of a session and leaf to a branch, for
	// the routes that read the entries themselves (export).
	Branch(session, leaf string) (*store.SessionTree, []*journal.Entry, string, error)
	// MatchedSessions describes the sessions a word search found, in its
	// order (GET /v1/sessions?match=).
	MatchedSessions(ctx context.Context, ms []index.SessionMatch) ([]pihistory.SessionSummary, error)
}

// Default limits.
const (
	DefaultAddr         = "127.0.0.1:7314"
	DefaultMaxBodyBytes = 1 << 20  // JSON request bodies
	DefaultMaxPushBytes = 32 << 20 // pushed journal lines
	DefaultMaxInFlight  = 256
	DefaultMaxStreams   = 64
)

// Options configure a Server.
type Options struct {
	Service *service.Service // required: store, index, sessions directories
	Engine  Engine           // required: search, list, read, windows, sessions
	Token   string           // required: the bearer token

	// Addr is the address the server listens on (host:port); the Host
	// header must name it or a loopback name with its port.
	Addr string
	// AllowedHosts are further names (host or host:port) accepted in Host,
	// for a server deliberately reachable under another name.
	AllowedHosts []string

	// Watcher is the live watcher of the sessions directories, for the
	// ingest status; nil when the server does not watch.
	Watcher *ingest.Watcher
	// Serial reads journal files for sync; share the watcher's so both never
	// read the same file at once. Default: the watcher's, else a new one.
	Serial *ingest.Serial

	Log *slog.Logger

	MaxBodyBytes int64 // default DefaultMaxBodyBytes
	MaxPushBytes int64 // default DefaultMaxPushBytes
	// MaxInFlight bounds concurrent requests; beyond it the answer is 429.
	MaxInFlight int
	// StreamPaths are the paths of long-lived streams (the web UI's
	// server-sent events): they do not count against MaxInFlight, which
	// held streams would use up (every other request then refused), but
	// against MaxStreams (default DefaultMaxStreams).
	StreamPaths []string
	MaxStreams  int

	// Mount, if set, adds routes outside /v1 (the web UI) behind the same
	// Host and Origin checks. They authenticate themselves, typically with
	// Server.Auth().Middleware.
	Mount func(r chi.Router)
	// MountV1, if set, adds routes under /v1 (the notebook and rollover
	// routes of ContextRoutes), behind the same checks and authentication.
	// Document them in openapi.json too.
	MountV1 func(r chi.Router)
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	o       Options
	svc     *service.Service
	engine  Engine
	serial  *ingest.Serial
	auth    *Authenticator
	hosts   *hostGuard
	base    string // URLFor(o.Addr): this server's address for clients, the base of its web UI's links
	log     *slog.Logger
	router  chi.Router
	metrics *metrics
	sem     chan struct{}
	streams chan struct{}    // slots of StreamPaths
	export  http.HandlerFunc // GET /v1/sessions/{id}/export
	archive http.HandlerFunc // GET /v1/export/archive
	maint   sync.Mutex       // held by a running compact or reindex

	inflight sync.WaitGroup
}

// New builds a Server.
func New(o Options) (*Server, error) {
	if o.Service == nil || o.Engine == nil {
		return nil, fmt.Errorf("api: Service and Engine are required")
	}
	if len(o.Token) < 16 {
		return nil, fmt.Errorf("api: a token of at least 16 characters is required")
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxPushBytes <= 0 {
		o.MaxPushBytes = DefaultMaxPushBytes
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Serial == nil {
		if o.Watcher != nil {
			o.Serial = o.Watcher.Serial()
		} else {
			o.Serial = o.Service.Serial()
		}
	}
	hg, err := newHostGuard(o.Addr, o.AllowedHosts)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, svc: o.Service, engine: o.Engine, serial: o.Serial, auth: NewAuthenticator(o.Token),
		hosts: hg, base: URLFor(o.Addr), log: o.Log, sem: make(chan struct{}, o.MaxInFlight), streams: make(chan struct{}, cmp.Or(o.MaxStreams, DefaultMaxStreams))}
	s.metrics = newMetrics(s)
	s.export = serveExport(o.Service.Store, o.Engine, s.fail)
	s.archive = serveArchive(o.Service.Store, s.fail)
	s.router = s.routes()
	return s, nil
}

// Auth is the server's authenticator; the web UI installs its cookie check
// on it and wraps its own routes with its Middleware.
func (s *Server) Auth() *Authenticator { return s.auth }

// Router is the chi router (for route walks and tests).
func (s *Server) Router() chi.Router { return s.router }

// Registry holds the server's Prometheus metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.track, s.recoverer, s.guard, s.limit)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/healthz", s.h(s.handleHealth))
	r.With(s.auth.Middleware).Get("/metrics", s.metrics.handler.ServeHTTP)

	// The API's description holds no history: it needs no token (but
	// passes the same Host and Origin guards as every route).
	r.Get("/v1/openapi.json", s.handleOpenAPI)
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.auth.Middleware)
		r.NotFound(s.notFound)
		r.MethodNotAllowed(s.methodNotAllowed)
		r.Get("/search", s.h(s.handleSearchGet))
		r.Post("/search", s.h(s.handleSearchPost))
		r.Get("/sessions", s.h(s.handleSessions))
		r.Get("/sessions/{id}", s.h(s.handleSession))
		r.Get("/sessions/{id}/windows", s.h(s.handleWindows))
		r.Get("/sessions/{id}/entries", s.h(s.handleList))
		r.Post("/sessions/{id}/entries", s.h(s.handlePush))
		r.Get("/sessions/{id}/entries/{entry}", s.h(s.handleRead))
		r.Get("/sessions/{id}/export", s.handleExport)
		r.Get("/export/archive", s.handleArchive)
		r.Post("/sessions/{id}/sync", s.h(s.handleSync))
		r.Get("/ingest/status", s.h(s.handleIngestStatus))
		r.Post("/import", s.h(s.handleImport))
		r.Post("/maintenance/compact", s.h(s.handleCompact))
		r.Post("/maintenance/reindex", s.h(s.handleReindex))
		r.Get("/stats", s.h(s.handleStats))
		if s.o.MountV1 != nil {
			s.o.MountV1(r)
		}
	})
	if s.o.Mount != nil {
		s.o.Mount(r)
	}
	return r
}

// h adapts a handler that returns an error: the error becomes a problem
// document (500s are logged, without the request's content).
func (s *Server) h(fn func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p, internal := problemFor(err)
	if internal {
		s.log.Error("api: request failed", "method", r.Method, "route", routePattern(r), "err", err)
	}
	writeProblem(w, p)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, &client.Error{Type: ProblemNotFound, Title: "Not found", Status: http.StatusNotFound,
		Detail: fmt.Sprintf("no route %s %s; the routes are listed in /v1/openapi.json", r.Method, r.URL.Path)})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, &client.Error{Type: ProblemMethod, Title: "Method not allowed", Status: http.StatusMethodNotAllowed,
		Detail: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)})
}

// writeJSON sends v as JSON with status 200. The document is encoded into
// a pooled buffer first, so the response goes out with a Content-Length in
// as few writes as possible (not chunked), and a value that cannot be
// encoded leaves the response untouched for the caller's problem document.
func writeJSON(w http.ResponseWriter, v any) error {
	jb := jsonBufs.Get().(*jsonBuf)
	defer jb.release()
	if err := jb.enc.Encode(v); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(jb.buf.Len()))
	_, err := w.Write(jb.buf.Bytes())
	return err
}

// jsonBuf is a reusable response buffer with its encoder. HTML escaping is
// off: responses are JSON for programs, never HTML.
type jsonBuf struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledJSON is the largest buffer kept for reuse; a rare large
// response (a long list, a big tree) is not held on to.
const maxPooledJSON = 256 << 10

var jsonBufs = sync.Pool{New: func() any {
	jb := &jsonBuf{}
	jb.enc = json.NewEncoder(&jb.buf)
	jb.enc.SetEscapeHTML(false)
	return jb
}}

func (jb *jsonBuf) release() {
	if jb.buf.Cap() > maxPooledJSON {
		return
	}
	jb.buf.Reset()
	jsonBufs.Put(jb)
}

// entryNavigation reports whether r is a browser opening the web UI's page
// or its login link from elsewhere (a link in another site, the page
// 'pi-history open' writes to a file): a top-level GET of "/" or of
// /ui/login. Neither answers with data: "/" is the app's shell, whose own
// requests are same-origin, and a login code is good only if this server
// issued it (to a holder of the token), so another site cannot log a
// browser in to anything.
func entryNavigation(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate" &&
		r.Header.Get("Sec-Fetch-Dest") == "document" && (r.URL.Path == "/" || r.URL.Path == "/ui/login")
}

// guard enforces the Host, Sec-Fetch-Site and Origin rules on every route.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.ok(r.Host) {
			writeProblem(w, &forbidden(ProblemForbiddenHost, "Host",
				"Host %q does not name this server; use %s (requests for other names are refused to defeat DNS rebinding; see serve --allow-host)", r.Host, s.base).p)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" && !entryNavigation(r) {
			writeProblem(w, &forbidden(ProblemForbiddenOrigin, "Sec-Fetch-Site", "cross-site requests are refused").p)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && unsafeMethod(r.Method) {
			if !strings.EqualFold(origin, "http://"+r.Host) {
				writeProblem(w, &forbidden(ProblemForbiddenOrigin, "Origin",
					"Origin %q is not this server (http://%s); state-changing requests from other sites are refused", origin, r.Host).p)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// limit answers 429 when too many requests are in flight. /healthz is
// never limited: clients ask it, every few seconds, whether this server
// holds their token, and a busy server must not look like another program.
func (s *Server) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		sem, what := s.sem, "requests are"
		if slices.Contains(s.o.StreamPaths, r.URL.Path) {
			sem, what = s.streams, "event streams are"
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			writeProblem(w, &client.Error{Type: ProblemTooManyRequests, Title: "Too many requests", Status: http.StatusTooManyRequests,
				Detail: fmt.Sprintf("more than %d %s in progress; retry shortly", cap(sem), what)})
		}
	})
}

// recoverer turns a panic into a logged 500.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("api: panic", "method", r.Method, "route", routePattern(r), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rw, ok := w.(*statusWriter); !ok || !rw.wrote {
					writeProblem(w, &client.Error{Type: ProblemInternal, Title: "Internal server error", Status: http.StatusInternalServerError, Detail: internalErrorDetailText})
				}
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// track counts the request in flight (for graceful shutdown), records its
// metrics and logs one line at debug level: method, route, status, size and
// time, never the query string, the body or the token.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		d := time.Since(start)
		route := routePattern(r)
		s.metrics.observe(route, r.Method, sw.status, d)
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("http", "method", r.Method, "route", route, "path", r.URL.Path, "status", sw.status,
				"bytes", sw.bytes, "ms", float64(d.Microseconds())/1000, "remote", r.RemoteAddr)
		}
	})
}

func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" && !strings.HasSuffix(p, "/*") {
			return p
		}
	}
	return "unmatched"
}

// statusWriter remembers the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
