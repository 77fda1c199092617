package api

// This file serves the context machinery of package window (the notebook
// and named notes of a branch, the staleness status line, the rollover gate,
// the template compaction for session_before_compact, the reminder/fallback
// state machine and the ledger) to the Pi extension (pi-extension/). Each
// handler decodes its request, calls one window.Service method and encodes
// the answer, or the error as a problem document.

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/problem"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
	"github.com/pi-history/pi-history/window"
)

// ContextConfigFile is the rollover configuration's file name inside the data
// directory (rollover.Config as JSON; every key optional).
const ContextConfigFile = window.ConfigFile

// Body limits of the context routes.
const (
	contextBodyLimit = 1 << 20 // notes up to 64,000 characters fit easily
)

// The wire types of the context routes are package window's (see
// openapi.json for the routes that carry them).
type (
	NotebookView          = window.NotebookView          // GET /v1/sessions/{id}/notebook
	NotebookWriteRequest  = window.NotebookWriteRequest  // POST /v1/sessions/{id}/notebook
	EntryToAppend         = window.EntryToAppend         // the custom entry that makes a write real
	NotebookWriteResponse = window.NotebookWriteResponse // a validated notebook write or review
	ReviewRequest         = window.ReviewRequest         // POST /v1/sessions/{id}/notebook/review
	RevisionsResponse     = window.RevisionsResponse     // GET /v1/sessions/{id}/notebook/revisions
	NoteOpRequest         = window.NoteOpRequest         // POST /v1/sessions/{id}/notes
	NoteOpResponse        = window.NoteOpResponse        // a validated named-note change
	UsageBody             = window.UsageBody             // context usage as ctx.getContextUsage() gives it
	StatusRequest         = window.StatusRequest         // POST /v1/sessions/{id}/status
	GateRequest           = window.GateRequest           // POST /v1/sessions/{id}/gate
	CompactionRequest     = window.CompactionRequest     // POST /v1/sessions/{id}/compaction
	EventRequest          = window.EventRequest          // POST /v1/sessions/{id}/events
	EventResponse         = window.EventResponse         // its decision and the state after it
	ContextConfigResponse = window.ConfigInfo            // GET /v1/context/config
)

// LedgerResponse is GET /v1/ledger (defined in package client, which
// 'pi-history ledger' reads it with).
type LedgerResponse = client.LedgerResponse

// ContextRoutes serves the notebook and rollover routes of one store.
type ContextRoutes struct {
	Window *window.Service
	Log    *slog.Logger
}

// NewContextRoutes serves the context routes of st, with the ledger and the
// configuration file of dataDir. eng resolves branches (the one resolver)
// and gives named notes their lineage scope; nil resolves over st and keeps
// named notes to their own session. A broken configuration file is
// logged and the defaults are used: the extension must keep working.
func NewContextRoutes(st *store.Store, eng *search.Engine, dataDir string, log *slog.Logger) *ContextRoutes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var lineage window.Lineage
	if eng != nil {
		lineage = eng
	} else {
		eng = search.New(st, nil)
	}
	return &ContextRoutes{Window: window.New(eng, lineage, dataDir, log), Log: log}
}

// Mount registers the routes on r, the authenticated /v1 router: paths
// are relative to /v1.
func (c *ContextRoutes) Mount(r chi.Router) {
	w := c.Window
	r.Get("/context/config", c.getConfig)
	r.Get("/ledger", c.getLedger)
	r.Get("/sessions/{id}/notebook", leafRoute(c, w.Notebook))
	r.Post("/sessions/{id}/notebook", c.postNotebook)
	r.Post("/sessions/{id}/notebook/review", bodyRoute(c, w.Review))
	r.Get("/sessions/{id}/notebook/revisions", leafRoute(c, w.Revisions))
	r.Get("/sessions/{id}/notes", c.getNotes)
	r.Post("/sessions/{id}/notes", bodyRoute(c, w.ChangeNote))
	r.Get("/sessions/{id}/notes/search", c.searchNotes)
	r.Get("/sessions/{id}/notes/read", c.readNote)
	r.Post("/sessions/{id}/status", bodyRoute(c, w.Status))
	r.Post("/sessions/{id}/gate", bodyRoute(c, w.Gate))
	r.Post("/sessions/{id}/compaction", bodyRoute(c, w.Compaction))
	r.Post("/sessions/{id}/events", bodyRoute(c, w.Event))
	r.Get("/sessions/{id}/rollover-state", leafRoute(c, w.State))
}

// ---- adapters ----

// answer encodes out, or err as a problem document.
func answer[Out any](c *ContextRoutes, w http.ResponseWriter, r *http.Request, out Out, err error) {
	if err != nil {
		c.fail(w, r, err)
		return
	}
	contextJSON(w, out)
}

// leafRoute serves a GET route on the branch its only query parameter,
// leaf, names (the current leaf when absent).
func leafRoute[Out any](c *ContextRoutes, call func(sid, leaf string) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := newQuery(r)
		leaf := q.str("leaf")
		if err := q.done(); err != nil {
			c.fail(w, r, err)
			return
		}
		out, err := call(pathParam(r, "id"), leaf)
		answer(c, w, r, out, err)
	}
}

// bodyRoute serves a POST route whose JSON body decodes strictly into In.
func bodyRoute[In, Out any](c *ContextRoutes, call func(sid string, in In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		if err := decodeBody(w, r, &in); err != nil {
			c.fail(w, r, err)
			return
		}
		out, err := call(pathParam(r, "id"), in)
		answer(c, w, r, out, err)
	}
}

// ---- handlers with their own decoding ----

func (c *ContextRoutes) getConfig(w http.ResponseWriter, r *http.Request) {
	contextJSON(w, c.Window.ConfigInfo())
}

func (c *ContextRoutes) getLedger(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := rollover.LedgerFilter{Kind: q.str("kind"), Session: q.str("session"), Limit: q.int("limit", 0)}
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	page, err := c.Window.Ledger(f)
	answer(c, w, r, LedgerResponse(page), err)
}

// postNotebook takes the leaf out of the body before the notebook package's
// strict parser sees the rest: the leaf rides along with a notes call's
// arguments.
func (c *ContextRoutes) postNotebook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		c.fail(w, r, jsonError(err))
		return
	}
	leaf := ""
	if l, ok := obj["leaf"]; ok {
		if err := json.Unmarshal(l, &leaf); err != nil {
			c.fail(w, r, badParam("leaf", "leaf must be a string"))
			return
		}
		delete(obj, "leaf")
		body, _ = json.Marshal(obj)
	}
	req, err := notebook.ParseWriteRequest(body)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	out, err := c.Window.WriteNotebook(pathParam(r, "id"), NotebookWriteRequest{Leaf: leaf, WriteRequest: req})
	answer(c, w, r, out, err)
}

// The named-note reads take their parameters from the query; Go evaluates
// a composite literal's calls left to right, so the first bad parameter in
// reading order is the one reported.

func (c *ContextRoutes) getNotes(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	nq := window.NoteQuery{Leaf: q.str("leaf"), Scope: q.str("scope"), Offset: q.int("offset", 0)}
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	out, err := c.Window.Notes(pathParam(r, "id"), nq)
	answer(c, w, r, out, err)
}

func (c *ContextRoutes) searchNotes(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	nq := window.NoteQuery{Leaf: q.str("leaf"), Scope: q.str("scope"), Query: q.str("query"), Offset: q.int("offset", 0)}
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	out, err := c.Window.SearchNotes(pathParam(r, "id"), nq)
	answer(c, w, r, out, err)
}

func (c *ContextRoutes) readNote(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	nq := window.NoteQuery{Leaf: q.str("leaf"), Scope: q.str("scope"), Name: q.str("name"), Ref: q.str("ref"),
		Offset: q.int("offset", 0), Limit: q.int("limit", 0)}
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	out, err := c.Window.ReadNote(pathParam(r, "id"), nq)
	answer(c, w, r, out, err)
}

// ---- problems and bodies ----

// contextProblem is a problem document with the members the context routes
// add: the current revision of a stale write, the excess of an oversized one.
type contextProblem struct {
	client.Error
	CurrentRevision *int              `json:"currentRevision,omitempty"`
	Excess          []notebook.Excess `json:"excess,omitempty"`
	Hint            string            `json:"hint,omitempty"`
}

// fail answers err with its problem document: notebook's errors carry the
// members above, every other error is answered as on the rest of the API.
func (c *ContextRoutes) fail(w http.ResponseWriter, r *http.Request, err error) {
	var le *notebook.LimitError
	var se *notebook.StaleError
	var ie *notebook.InvalidError
	var ne *notebook.NotFoundError
	var p contextProblem
	// kindDoc is the document of a notebook error's kind with the given
	// detail and parameter.
	kindDoc := func(e pihistory.Kinded, detail, param string) problem.Doc {
		d := problem.OfKind(e.ErrorKind())
		d.Detail, d.Param = detail, param
		return d
	}
	switch {
	case errors.As(err, &le):
		p = contextProblem{Error: kindDoc(le, le.Error(), ""), Excess: le.Excess}
	case errors.As(err, &se):
		cur := se.Current
		p = contextProblem{Error: kindDoc(se, se.Error(), "expectedRevision"), CurrentRevision: &cur}
		p.Title = "Stale notebook revision"
	case errors.As(err, &ie):
		p = contextProblem{Error: kindDoc(ie, ie.Error(), ie.Field), Hint: ie.Hint}
	case errors.As(err, &ne):
		p = contextProblem{Error: kindDoc(ne, ne.Error(), ""), Hint: ne.Hint}
	default:
		pe, internal := problemFor(err)
		if internal {
			c.Log.Error("context route failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		p = contextProblem{Error: *pe}
	}
	problem.Write(w, p)
}

func contextJSON(w http.ResponseWriter, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// readBody reads a JSON body of at most contextBodyLimit bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if mt := mediaType(r); mt != "application/json" {
		return nil, unsupportedMedia(mt, "application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, contextBodyLimit))
	if err != nil {
		return nil, err
	}
	return body, refuseLossyJSON(body)
}

// decodeBody decodes a JSON body strictly into dst.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	return decodeJSON(w, r, dst, contextBodyLimit)
}
