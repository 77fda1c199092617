package api

// This file serves the notebook and the rollover machinery to the Pi
// extension (pi-extension/): the notebook and named notes of a branch, the
// staleness status line, the rollover gate, the template compaction for
// session_before_compact, the reminder/fallback state machine and the ledger.
//
// Every route reads the branch it works on from the store (the extension
// pushes or syncs its session before asking) and answers with a decision;
// nothing here appends to a journal. A notebook or note write returns the
// exact data of the custom entry that makes it real, which the extension
// appends with pi.appendEntry.
//
// The state machine's per-session volatile state (pending schedule,
// maintenance stage, reminder marker) lives in this process's memory, keyed by
// session. After a restart it is rebuilt from the branch with
// rollover.RebuildState, which is what design §8 asks for: pending schedules
// and maintenance are volatile.

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

// ContextConfigFile is the rollover configuration's file name inside the data
// directory (rollover.Config as JSON; every key optional).
const ContextConfigFile = "note-context.json"

// Body limits of the context routes.
const (
	contextBodyLimit = 1 << 20 // notes up to 64,000 characters fit easily
)

// ContextRoutes serves the notebook and rollover routes of one store.
type ContextRoutes struct {
	Store      *store.Store
	Engine     *search.Engine // for the lineage scope of named notes; nil: own session only
	Ledger     *rollover.Ledger
	Config     rollover.Config
	Problems   []rollover.ConfigProblem // what was wrong in the configuration file
	ConfigPath string
	Log        *slog.Logger

	mu     sync.Mutex
	states map[string]*rollover.State

	cfgMu    sync.Mutex
	cfgStamp fileStamp // the configuration file as Config was last read from it
}

// fileStamp identifies a version of a file: its size and modification time
// (zero when it does not exist).
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}
}

// current returns the configuration in force, reading the file again when
// it changed (written, replaced or removed) since it was last read, so an
// edit applies to the next request without restarting serve. A file that
// became unreadable keeps the defaults, and the problem is logged.
func (c *ContextRoutes) current() (rollover.Config, []rollover.ConfigProblem) {
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	if c.ConfigPath != "" {
		if st := stampOf(c.ConfigPath); st != c.cfgStamp {
			c.cfgStamp = st
			c.Config, c.Problems = loadContextConfig(c.ConfigPath, c.Log)
		}
	}
	return c.Config, c.Problems
}

// cfgValue is the configuration in force (see current).
func (c *ContextRoutes) cfgValue() rollover.Config {
	cfg, _ := c.current()
	return cfg
}

// loadContextConfig reads the rollover configuration, logging what was wrong
// in it; the defaults stand in for what could not be read.
func loadContextConfig(path string, log *slog.Logger) (rollover.Config, []rollover.ConfigProblem) {
	cfg, problems, err := rollover.LoadConfig(path)
	if err != nil {
		log.Warn("rollover configuration unreadable; using defaults", "path", path, "err", err)
	}
	for _, p := range problems {
		log.Warn("rollover configuration value ignored", "path", path, "problem", p)
	}
	return cfg, problems
}

// NewContextRoutes serves the context routes of st, with the ledger and the
// configuration file of dataDir. A broken configuration file is logged and the
// defaults are used: the extension must keep working.
func NewContextRoutes(st *store.Store, eng *search.Engine, dataDir string, log *slog.Logger) *ContextRoutes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfgPath := filepath.Join(dataDir, ContextConfigFile)
	stamp := stampOf(cfgPath)
	cfg, problems := loadContextConfig(cfgPath, log)
	return &ContextRoutes{Store: st, Engine: eng, Ledger: rollover.OpenLedger(dataDir), Config: cfg, Problems: problems,
		ConfigPath: cfgPath, Log: log, states: map[string]*rollover.State{}, cfgStamp: stamp}
}

// Mount registers the routes on r, the authenticated /v1 router: paths
// are relative to /v1.
func (c *ContextRoutes) Mount(r chi.Router) {
	r.Get("/context/config", c.getConfig)
	r.Get("/ledger", c.getLedger)
	r.Get("/sessions/{id}/notebook", c.getNotebook)
	r.Post("/sessions/{id}/notebook", c.postNotebook)
	r.Post("/sessions/{id}/notebook/review", c.postReview)
	r.Get("/sessions/{id}/notebook/revisions", c.getRevisions)
	r.Get("/sessions/{id}/notes", c.getNotes)
	r.Post("/sessions/{id}/notes", c.postNote)
	r.Get("/sessions/{id}/notes/search", c.searchNotes)
	r.Get("/sessions/{id}/notes/read", c.readNote)
	r.Post("/sessions/{id}/status", c.postStatus)
	r.Post("/sessions/{id}/gate", c.postGate)
	r.Post("/sessions/{id}/compaction", c.postCompaction)
	r.Post("/sessions/{id}/events", c.postEvent)
	r.Get("/sessions/{id}/rollover-state", c.getState)
}

// ---- wire types ----

// NotebookView is GET /v1/sessions/{id}/notebook.
type NotebookView struct {
	Session        string         `json:"session"`
	Leaf           string         `json:"leaf"`
	Exists         bool           `json:"exists"`
	Notebook       notebook.State `json:"notebook"`
	Text           string         `json:"text"` // the notebook as notes() shows it
	RemainingBytes int            `json:"remainingBytes"`
	Window         int            `json:"window"`
}

// NotebookWriteRequest is POST /v1/sessions/{id}/notebook: a notes call
// (notebook.WriteRequest) on a branch.
type NotebookWriteRequest struct {
	Leaf string `json:"leaf,omitempty"`
	notebook.WriteRequest
}

// EntryToAppend is a custom entry the extension appends with
// pi.appendEntry(customType, data) to make a write real.
type EntryToAppend struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data"`
}

// NotebookWriteResponse is a validated notebook write.
type NotebookWriteResponse struct {
	Session string          `json:"session"`
	Leaf    string          `json:"leaf"`
	Result  notebook.Result `json:"result"`
	Append  EntryToAppend   `json:"append"`
}

// ReviewRequest is POST /v1/sessions/{id}/notebook/review.
type ReviewRequest struct {
	Leaf             string `json:"leaf,omitempty"`
	ReviewedThrough  string `json:"reviewedThrough,omitempty"`
	ReviewedTokens   *int   `json:"reviewedTokens,omitempty"`
	ExpectedRevision *int   `json:"expectedRevision,omitempty"`
}

// RevisionsResponse is GET /v1/sessions/{id}/notebook/revisions.
type RevisionsResponse struct {
	Session   string              `json:"session"`
	Leaf      string              `json:"leaf"`
	Revisions []notebook.Revision `json:"revisions"`
}

// NoteOpRequest is POST /v1/sessions/{id}/notes: one named-note change.
type NoteOpRequest struct {
	Leaf    string  `json:"leaf,omitempty"`
	Op      string  `json:"op"`                // write, append, delete, copy
	Name    string  `json:"name,omitempty"`    // the note (copy: the new name, "" keeps the source's)
	Content *string `json:"content,omitempty"` // write: the whole note (required; "" empties it)
	Text    *string `json:"text,omitempty"`    // append: what to add (required)
	Ref     string  `json:"ref,omitempty"`     // copy: context:<session>:<entry>
	Scope   string  `json:"scope,omitempty"`   // copy: where ref may point: branch (default) or lineage
}

// check refuses a change missing the field its op needs, or carrying one
// that belongs to another op. A write without content used to save an empty
// note: a model that put its text in "text" (append's field) erased the
// note and was told it was saved.
func (in *NoteOpRequest) check() error {
	fields := []struct {
		name    string
		present bool
		ops     []string // the ops it belongs to
	}{
		{"content", in.Content != nil, []string{notebook.OpWrite}},
		{"text", in.Text != nil, []string{notebook.OpAppend}},
		{"ref", in.Ref != "", []string{notebook.OpCopy}},
		{"scope", in.Scope != "", []string{notebook.OpCopy}},
	}
	known := false
	for _, f := range fields {
		for _, op := range f.ops {
			known = known || op == in.Op
		}
	}
	if !known && in.Op != notebook.OpDelete {
		return badParam("op", "op must be one of write, append, delete, copy; not %q", in.Op)
	}
	for _, f := range fields {
		if f.present && !slices.Contains(f.ops, in.Op) {
			return badParam(f.name, "%s belongs to op %s, not %s: nothing was changed", f.name, strings.Join(f.ops, " or "), in.Op)
		}
	}
	needs := map[string]string{"content": `the note's text in full; "" empties it`, "text": "the text to add", "ref": "context:<session>:<entry>"}
	for _, f := range fields {
		if !f.present && slices.Contains(f.ops, in.Op) && needs[f.name] != "" {
			return badParam(f.name, "op %s needs %s (%s); nothing was changed", in.Op, f.name, needs[f.name])
		}
	}
	return nil
}

// NoteOpResponse is a validated named-note change. Append is absent when
// nothing changes (appending "").
type NoteOpResponse struct {
	Session string              `json:"session"`
	Leaf    string              `json:"leaf"`
	Result  notebook.NoteResult `json:"result"`
	Append  *EntryToAppend      `json:"append,omitempty"`
}

// UsageBody is the context usage the extension reads from
// ctx.getContextUsage(); tokens null or absent means unknown.
type UsageBody struct {
	Tokens        *int `json:"tokens"`
	ContextWindow int  `json:"contextWindow"`
}

func (u *UsageBody) usage() rollover.Usage {
	if u == nil || u.Tokens == nil {
		win := 0
		if u != nil {
			win = u.ContextWindow
		}
		return rollover.Usage{Tokens: -1, ContextWindow: win}
	}
	return rollover.Usage{Tokens: *u.Tokens, ContextWindow: u.ContextWindow}
}

// StatusRequest is POST /v1/sessions/{id}/status. The caller keeps the
// delivery bookkeeping (notebook.StatusInput).
type StatusRequest struct {
	Leaf               string `json:"leaf,omitempty"`
	ContextTokens      *int   `json:"contextTokens"`
	WindowStartTokens  *int   `json:"windowStartTokens,omitempty"` // default: the path's first usage after its last compaction
	BranchChanged      bool   `json:"branchChanged,omitempty"`
	ExternalCompaction bool   `json:"externalCompaction,omitempty"`
	DeliveredStep      int    `json:"deliveredStep,omitempty"`
	Suppressed         bool   `json:"suppressed,omitempty"`
}

// GateRequest is POST /v1/sessions/{id}/gate: the gate alone, without
// scheduling anything.
type GateRequest struct {
	Leaf    string               `json:"leaf,omitempty"`
	Request rollover.Reason      `json:"request"`           // model, user or host
	Pending *rollover.Reason     `json:"pending,omitempty"` // default: the session's pending schedule
	Usage   *UsageBody           `json:"usage,omitempty"`
	Model   string               `json:"model,omitempty"`
	Pi      *rollover.PiSettings `json:"pi,omitempty"`
}

// CompactionRequest is POST /v1/sessions/{id}/compaction: Pi's
// session_before_compact (or a rollover the extension carries out).
type CompactionRequest struct {
	Leaf               string               `json:"leaf,omitempty"`
	FirstKeptEntryID   string               `json:"firstKeptEntryId,omitempty"` // preparation.firstKeptEntryId; "" projects the cut
	CustomInstructions string               `json:"customInstructions,omitempty"`
	Model              string               `json:"model,omitempty"`
	Ours               bool                 `json:"ours,omitempty"`   // this plugin asked for the compaction
	MidRun             bool                 `json:"midRun,omitempty"` // Pi's threshold compaction inside a run
	Reason             rollover.Reason      `json:"reason,omitempty"` // default: the pending schedule (ours) or threshold
	Pi                 *rollover.PiSettings `json:"pi,omitempty"`
}

// EventRequest is POST /v1/sessions/{id}/events: one state-machine event.
type EventRequest struct {
	Leaf  string               `json:"leaf,omitempty"`
	Event rollover.Event       `json:"event"`
	Usage *UsageBody           `json:"usage,omitempty"`
	Model string               `json:"model,omitempty"`
	Pi    *rollover.PiSettings `json:"pi,omitempty"`
}

// EventResponse is the decision for an event and the state after it.
type EventResponse struct {
	Session  string            `json:"session"`
	Leaf     string            `json:"leaf"`
	State    rollover.State    `json:"state"`
	Decision rollover.Decision `json:"decision"`
	// Notebook is the branch's notebook as the reminder and continuation
	// texts show it ("" without one).
	Notebook string `json:"notebook,omitempty"`
}

// ContextConfigResponse is GET /v1/context/config.
type ContextConfigResponse struct {
	Config   rollover.Config          `json:"config"`
	Problems []rollover.ConfigProblem `json:"problems"`
	Path     string                   `json:"path"`
	Ledger   string                   `json:"ledger"`
	Ledgered bool                     `json:"ledgerEnabled"`
}

// LedgerResponse is GET /v1/ledger (defined in package client, which
// 'pi-history ledger' reads it with).
type LedgerResponse = client.LedgerResponse

// ---- helpers ----

// BranchPath returns the path (root first) of leaf in session sid (the
// current leaf when leaf is ""), with Raw filled from the store, and the leaf
// used. The cached tree's entries are copied, never modified.
func BranchPath(st *store.Store, sid, leaf string) ([]*journal.Entry, string, error) {
	t, err := st.Tree(sid)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, "", notFound("id", "no session %q is stored; register it with POST /v1/sessions/{id}/sync or push its entries first", sid)
		}
		return nil, "", err
	}
	if leaf == "" {
		leaf = t.Leaf()
	}
	if leaf == "" {
		return nil, "", nil // a session without entries
	}
	p, err := t.Path(leaf)
	if err != nil {
		return nil, "", notFound("leaf", "entry %q is not in session %q", leaf, sid)
	}
	out := make([]*journal.Entry, len(p))
	for i, e := range p {
		m := t.MetaOf(e.ID)
		if m == nil {
			return nil, "", notFound("leaf", "entry %q of session %q has no stored record", e.ID, sid)
		}
		raw, err := st.Raw(m.Seq)
		if err != nil {
			return nil, "", err
		}
		c := *e
		c.Raw = raw
		out[i] = &c
	}
	return out, leaf, nil
}

// rolloverNotebook is a branch's notebook as the rollover package takes it:
// nil when the branch has none.
func rolloverNotebook(s notebook.State) *notebook.State {
	if !s.Exists() {
		return nil
	}
	return &s
}

func windowOf(path []*journal.Entry) int {
	w := journal.WindowOf(path)
	if len(w) == 0 {
		return 1
	}
	return w[len(w)-1]
}

func (c *ContextRoutes) piSettings(p *rollover.PiSettings) rollover.PiSettings {
	out := rollover.PiSettings{KeepRecentTokens: rollover.DefaultKeepRecentTokens, ReserveTokens: rollover.DefaultReserveTokens}
	if p != nil {
		if p.KeepRecentTokens > 0 {
			out.KeepRecentTokens = p.KeepRecentTokens
		}
		if p.ReserveTokens > 0 {
			out.ReserveTokens = p.ReserveTokens
		}
	}
	return out
}

func (c *ContextRoutes) limits() notebook.Limits {
	cfg, _ := c.current()
	return notebook.Limits{MaxBytes: cfg.NotebookMaxBytes, MaxTokens: cfg.NotebookMaxTokens}
}

// state returns the session's volatile state, rebuilding it from path when
// the process has none or the branch moved to another window. c.mu is held.
func (c *ContextRoutes) state(sid string, path []*journal.Entry) *rollover.State {
	s := c.states[sid]
	if s == nil {
		r := rollover.RebuildState(path)
		s = &r
		c.states[sid] = s
	} else if w := windowOf(path); s.Window != 0 && s.Window != w {
		// The leaf moved to another window (/tree, a fork): volatile state
		// belongs to the old one.
		r := rollover.RebuildState(path)
		if r.Attempt < s.Attempt {
			r.Attempt = s.Attempt
		}
		*s = r
	}
	return s
}

func (c *ContextRoutes) ledger(rows ...rollover.Row) {
	for _, r := range rows {
		if err := c.Ledger.Append(r); err != nil {
			c.Log.Warn("ledger row not written", "kind", r.Kind, "err", err)
		}
	}
}

// contextProblem is a problem document with the members the context routes
// add: the current revision of a stale write, the excess of an oversized one.
type contextProblem struct {
	client.Error
	CurrentRevision *int              `json:"currentRevision,omitempty"`
	Excess          []notebook.Excess `json:"excess,omitempty"`
	Hint            string            `json:"hint,omitempty"`
}

func (c *ContextRoutes) fail(w http.ResponseWriter, r *http.Request, err error) {
	var le *notebook.LimitError
	var se *notebook.StaleError
	var ie *notebook.InvalidError
	var ne *notebook.NotFoundError
	var p contextProblem
	switch {
	case errors.As(err, &le):
		p = contextProblem{Error: client.Error{Type: ProblemTooLarge, Title: "Over a size limit", Status: http.StatusRequestEntityTooLarge,
			Detail: le.Error()}, Excess: le.Excess}
	case errors.As(err, &se):
		cur := se.Current
		p = contextProblem{Error: client.Error{Type: ProblemConflict, Title: "Stale notebook revision", Status: http.StatusConflict,
			Detail: se.Error(), Param: "expectedRevision"}, CurrentRevision: &cur}
	case errors.As(err, &ie):
		p = contextProblem{Error: client.Error{Type: ProblemInvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest,
			Detail: ie.Error(), Param: ie.Field}, Hint: ie.Hint}
	case errors.As(err, &ne):
		p = contextProblem{Error: client.Error{Type: ProblemNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: ne.Error()}, Hint: ne.Hint}
	default:
		pe, internal := problemFor(err)
		if internal {
			c.Log.Error("context route failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		p = contextProblem{Error: *pe}
	}
	h := w.Header()
	h.Set("Content-Type", problemContentType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	w.Write(append(b, '\n'))
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

// branches returns the caller's branch and, for the lineage scope, the
// current branches of the other sessions of its lineage.
func (c *ContextRoutes) branches(sid, leaf, scope string) ([]notebook.Branch, string, error) {
	switch scope {
	case "", "branch", "lineage":
	default:
		return nil, "", badParam("scope", "scope must be branch or lineage, not %q", scope)
	}
	path, leaf, err := BranchPath(c.Store, sid, leaf)
	if err != nil {
		return nil, "", err
	}
	out := []notebook.Branch{{Session: sid, Agent: "root", Path: path}}
	if scope == "lineage" && c.Engine != nil {
		ids, err := c.Engine.Lineage(sid)
		if err != nil {
			return nil, "", err
		}
		for _, id := range ids {
			if id == sid {
				continue
			}
			p, _, err := BranchPath(c.Store, id, "")
			if err != nil {
				continue // a session that vanished meanwhile
			}
			out = append(out, notebook.Branch{Session: id, Agent: id, Path: p})
		}
	}
	return out, leaf, nil
}

// branch is the branch of session {id} a context request works on.
type branch struct {
	sid  string
	leaf string           // the leaf used: the current one when the request names none
	path []*journal.Entry // root first
}

// loadBranch loads the branch of session {id} that ends at leaf (the current
// leaf when leaf is ""). When it cannot, it writes the problem and returns
// false.
func (c *ContextRoutes) loadBranch(w http.ResponseWriter, r *http.Request, leaf string) (branch, bool) {
	sid := pathParam(r, "id")
	path, leaf, err := BranchPath(c.Store, sid, leaf)
	if err != nil {
		c.fail(w, r, err)
		return branch{}, false
	}
	return branch{sid: sid, leaf: leaf, path: path}, true
}

// queryBranch loads the branch a GET request names with its only query
// parameter, leaf. When it cannot, it writes the problem and returns false.
func (c *ContextRoutes) queryBranch(w http.ResponseWriter, r *http.Request) (branch, bool) {
	q := newQuery(r)
	leaf := q.str("leaf")
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return branch{}, false
	}
	return c.loadBranch(w, r, leaf)
}

// branchRequest is a JSON request body that names a leaf of the session.
type branchRequest interface {
	leafID() string
	// check reports what decoding cannot: a value out of its range. It runs
	// before the branch is loaded.
	check() error
}

func (in *StatusRequest) leafID() string     { return in.Leaf }
func (in *GateRequest) leafID() string       { return in.Leaf }
func (in *CompactionRequest) leafID() string { return in.Leaf }
func (in *EventRequest) leafID() string      { return in.Leaf }

func (in *StatusRequest) check() error { return nil }
func (in *GateRequest) check() error {
	switch in.Request {
	case rollover.ReasonModel, rollover.ReasonUser, rollover.ReasonHost:
	default:
		return badParam("request", "request must be model, user or host; not %q", in.Request)
	}
	if in.Pending != nil && *in.Pending != "" && !in.Pending.Valid() {
		return badParam("pending", "pending must be empty (none) or model, user, host, threshold or fallback; not %q", *in.Pending)
	}
	return nil
}

func (in *CompactionRequest) check() error {
	if in.Reason != "" && !in.Reason.Valid() {
		return badParam("reason", "reason must be model, user, host, threshold or fallback; not %q", in.Reason)
	}
	return nil
}

func (in *EventRequest) check() error {
	switch in.Event.Kind {
	case rollover.EvAgentStart, rollover.EvTurnEnd, rollover.EvToolCall, rollover.EvNotes, rollover.EvNewContext,
		rollover.EvSettle, rollover.EvCompaction, rollover.EvAbort, rollover.EvSessionStart:
		return nil
	case rollover.EvRolloverFailed:
		if !slices.Contains(rollover.FailureWhys, in.Event.Why) {
			return badParam("event.why", "why must be one of %s; not %q", strings.Join(rollover.FailureWhys, ", "), in.Event.Why)
		}
		return nil
	}
	return badParam("event.kind", "unknown event kind %q", in.Event.Kind)
}

// bodyBranch decodes the request body into in, checks it and loads the
// branch it names. When it cannot, it writes the problem and returns false.
func (c *ContextRoutes) bodyBranch(w http.ResponseWriter, r *http.Request, in branchRequest) (branch, bool) {
	if err := decodeBody(w, r, in); err != nil {
		c.fail(w, r, err)
		return branch{}, false
	}
	if err := in.check(); err != nil {
		c.fail(w, r, err)
		return branch{}, false
	}
	return c.loadBranch(w, r, in.leafID())
}

// ---- handlers ----

func (c *ContextRoutes) getConfig(w http.ResponseWriter, r *http.Request) {
	cfg, probs := c.current()
	if probs == nil {
		probs = []rollover.ConfigProblem{}
	}
	contextJSON(w, ContextConfigResponse{Config: cfg, Problems: probs, Path: c.ConfigPath, Ledger: c.Ledger.Path(), Ledgered: c.Ledger.Enabled()})
}

func (c *ContextRoutes) getLedger(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := rollover.LedgerFilter{Kind: q.str("kind"), Session: q.str("session"), Limit: q.int("limit", 0)}
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	rows, skipped, err := c.Ledger.Read(f)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if rows == nil {
		rows = []rollover.Row{}
	}
	contextJSON(w, LedgerResponse{Rows: rows, Skipped: skipped, Path: c.Ledger.Path()})
}

func (c *ContextRoutes) getNotebook(w http.ResponseWriter, r *http.Request) {
	b, ok := c.queryBranch(w, r)
	if !ok {
		return
	}
	nb := notebook.Read(b.path)
	lim := c.limits()
	if lim.MaxBytes == 0 {
		lim = notebook.DefaultLimits()
	}
	contextJSON(w, NotebookView{Session: b.sid, Leaf: b.leaf, Exists: nb.Exists(), Notebook: nb, Text: nb.Sections.Render(),
		RemainingBytes: max(0, lim.MaxBytes-nb.Bytes), Window: windowOf(b.path)})
}

func (c *ContextRoutes) write(w http.ResponseWriter, r *http.Request, leaf string, req notebook.WriteRequest) {
	b, ok := c.loadBranch(w, r, leaf)
	if !ok {
		return
	}
	res, rec, err := notebook.Write(b.path, req, c.limits())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data, err := json.Marshal(rec)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	contextJSON(w, NotebookWriteResponse{Session: b.sid, Leaf: b.leaf, Result: res, Append: EntryToAppend{CustomType: notebook.NotebookType, Data: data}})
}

func (c *ContextRoutes) postNotebook(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	// The leaf rides along with the write request; take it out before the
	// notebook package's strict parser sees the body.
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
	c.write(w, r, leaf, req)
}

func (c *ContextRoutes) postReview(w http.ResponseWriter, r *http.Request) {
	var in ReviewRequest
	if err := decodeBody(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	c.write(w, r, in.Leaf, notebook.WriteRequest{Reviewed: true, ReviewedThrough: in.ReviewedThrough,
		ReviewedTokens: in.ReviewedTokens, ExpectedRevision: in.ExpectedRevision})
}

func (c *ContextRoutes) getRevisions(w http.ResponseWriter, r *http.Request) {
	b, ok := c.queryBranch(w, r)
	if !ok {
		return
	}
	revs := notebook.Revisions(b.path)
	if revs == nil {
		revs = []notebook.Revision{}
	}
	contextJSON(w, RevisionsResponse{Session: b.sid, Leaf: b.leaf, Revisions: revs})
}

func (c *ContextRoutes) getNotes(w http.ResponseWriter, r *http.Request) {
	sid := pathParam(r, "id")
	q := newQuery(r)
	leaf, scope, offset := q.str("leaf"), q.str("scope"), q.int("offset", 0)
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	bs, _, err := c.branches(sid, leaf, scope)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	list := notebook.ListNotes(bs, offset)
	if list.Notes == nil {
		list.Notes = []notebook.NoteInfo{}
	}
	contextJSON(w, list)
}

func (c *ContextRoutes) searchNotes(w http.ResponseWriter, r *http.Request) {
	sid := pathParam(r, "id")
	q := newQuery(r)
	leaf, scope, query, offset := q.str("leaf"), q.str("scope"), q.str("query"), q.int("offset", 0)
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	if query == "" {
		c.fail(w, r, badParam("query", "query must not be empty"))
		return
	}
	bs, _, err := c.branches(sid, leaf, scope)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page, err := notebook.SearchNotes(bs, query, offset)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if page.Matches == nil {
		page.Matches = []notebook.Match{}
	}
	contextJSON(w, page)
}

func (c *ContextRoutes) readNote(w http.ResponseWriter, r *http.Request) {
	sid := pathParam(r, "id")
	q := newQuery(r)
	leaf, scope, name, ref := q.str("leaf"), q.str("scope"), q.str("name"), q.str("ref")
	offset, limit := q.int("offset", 0), q.int("limit", 0)
	if err := q.done(); err != nil {
		c.fail(w, r, err)
		return
	}
	if (name == "") == (ref == "") {
		c.fail(w, r, badParam("name", "give exactly one of name and ref"))
		return
	}
	if ref != "" && scope == "" {
		scope = "lineage" // a reference names its session; let it resolve there
	}
	bs, _, err := c.branches(sid, leaf, scope)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var nt notebook.NoteText
	if name != "" {
		nt, err = notebook.ReadNote(bs[0], name, offset, limit)
	} else {
		nt, err = notebook.ReadNoteRef(bs, ref, offset, limit)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	contextJSON(w, nt)
}

func (c *ContextRoutes) postNote(w http.ResponseWriter, r *http.Request) {
	sid := pathParam(r, "id")
	var in NoteOpRequest
	if err := decodeBody(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	if err := in.check(); err != nil {
		c.fail(w, r, err)
		return
	}
	scope := in.Scope
	if in.Op == notebook.OpCopy && scope == "" {
		scope = "lineage"
	}
	bs, leaf, err := c.branches(sid, in.Leaf, scope)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var res notebook.NoteResult
	var rec *notebook.NoteRecord
	switch in.Op {
	case notebook.OpWrite:
		res, rec, err = notebook.WriteNote(bs[0], in.Name, *in.Content)
	case notebook.OpAppend:
		res, rec, err = notebook.AppendNote(bs[0], in.Name, *in.Text)
	case notebook.OpDelete:
		res, rec, err = notebook.DeleteNote(bs[0], in.Name)
	case notebook.OpCopy:
		res, rec, err = notebook.CopyNote(bs, in.Ref, in.Name)
	default:
		err = badParam("op", "op must be one of write, append, delete, copy; not %q", in.Op)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	out := NoteOpResponse{Session: sid, Leaf: leaf, Result: res}
	if rec != nil {
		data, err := json.Marshal(rec)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		out.Append = &EntryToAppend{CustomType: notebook.NoteType, Data: data}
	}
	contextJSON(w, out)
}

func (c *ContextRoutes) postStatus(w http.ResponseWriter, r *http.Request) {
	var in StatusRequest
	b, ok := c.bodyBranch(w, r, &in)
	if !ok {
		return
	}
	ws := in.WindowStartTokens
	if ws == nil {
		ws = notebook.WindowStartTokens(b.path)
	}
	contextJSON(w, notebook.StatusLine(notebook.StatusInput{Notebook: notebook.Read(b.path), ContextTokens: in.ContextTokens,
		WindowStartTokens: ws, BranchChanged: in.BranchChanged, ExternalCompaction: in.ExternalCompaction,
		StepTokens: c.cfgValue().StatusStepTokens, DeliveredStep: in.DeliveredStep, Suppressed: in.Suppressed}))
}

func (c *ContextRoutes) postGate(w http.ResponseWriter, r *http.Request) {
	var in GateRequest
	b, ok := c.bodyBranch(w, r, &in)
	if !ok {
		return
	}
	c.mu.Lock()
	pending := c.state(b.sid, b.path).Pending
	c.mu.Unlock()
	if in.Pending != nil {
		pending = *in.Pending
	}
	contextJSON(w, rollover.Gate(rollover.GateInput{Path: b.path, Notebook: rolloverNotebook(notebook.Read(b.path)), Request: in.Request,
		Pending: pending, Usage: in.Usage.usage(), Model: in.Model, Pi: c.piSettings(in.Pi), Config: c.cfgValue()}))
}

func (c *ContextRoutes) postCompaction(w http.ResponseWriter, r *http.Request) {
	var in CompactionRequest
	b, ok := c.bodyBranch(w, r, &in)
	if !ok {
		return
	}
	reason := in.Reason
	c.mu.Lock()
	s := c.state(b.sid, b.path)
	if reason == "" {
		switch {
		case !in.Ours:
			reason = rollover.ReasonThreshold
		case s.Stage == rollover.StageCheckpointed:
			reason = rollover.ReasonFallback
		case s.Pending != "":
			reason = s.Pending
		default:
			reason = rollover.ReasonModel
		}
	}
	window := s.Window
	c.mu.Unlock()
	d := rollover.BeforeCompact(rollover.BeforeCompactInput{
		RolloverInput: rollover.RolloverInput{Path: b.path, Notebook: rolloverNotebook(notebook.Read(b.path)), Reason: reason,
			FirstKeptEntryID: in.FirstKeptEntryID, Pi: c.piSettings(in.Pi), Config: c.cfgValue()},
		CustomInstructions: in.CustomInstructions, Model: in.Model, Ours: in.Ours, MidRun: in.MidRun})
	if d.Compaction == nil && d.Declined != "" {
		c.ledger(rollover.Row{Kind: rollover.RowRolloverDeclined, Session: b.sid, Window: window, Reason: reason, Why: d.Declined})
	}
	contextJSON(w, d)
}

func (c *ContextRoutes) postEvent(w http.ResponseWriter, r *http.Request) {
	var in EventRequest
	b, ok := c.bodyBranch(w, r, &in)
	if !ok {
		return
	}
	sid, path := b.sid, b.path
	nb := notebook.Read(path)
	rnb := rolloverNotebook(nb)
	world := rollover.World{Path: path, Notebook: rnb, Usage: in.Usage.usage(), Model: in.Model, Pi: c.piSettings(in.Pi), Config: c.cfgValue()}

	c.mu.Lock()
	s := c.state(sid, path)
	ns, d := rollover.Step(*s, in.Event, world)
	*s = ns
	c.mu.Unlock()

	rows := rollover.DecisionRows(sid, ns, d)
	switch in.Event.Kind {
	case rollover.EvNotes:
		if in.Event.NotesOK && nb.Exists() {
			rows = append(rows, rollover.Row{Kind: rollover.RowNotes, Session: sid, Window: ns.Window,
				NotebookRevision: nb.Revision, NotebookBytes: nb.Bytes, EntryID: nb.EntryID, Review: nb.ReviewOnly})
		}
	case rollover.EvCompaction:
		rows = append(rows, rolloverRowsOf(sid, path, rnb)...)
	case rollover.EvTurnEnd:
		if row, ok := rollover.FollowUpRow(sid, path); ok {
			rows = append(rows, row)
		}
	}
	c.ledger(rows...)
	text := ""
	if rnb != nil {
		text = rnb.Sections.Render()
	}
	contextJSON(w, EventResponse{Session: sid, Leaf: b.leaf, State: ns, Decision: d, Notebook: text})
}

// contextTokens is Pi's estimate of the context a branch path gives the
// model.
func contextTokens(path []*journal.Entry) int {
	n := 0
	for _, m := range rollover.BuildContext(path) {
		n += rollover.EstimateTokens(m)
	}
	return n
}

// rolloverRowsOf are the ledger rows of the last compaction on path when
// this plugin wrote it (fromHook, with our details): the rollover, and the
// provider's cache figures of the window it ended.
func rolloverRowsOf(sid string, path []*journal.Entry, nb *notebook.State) []rollover.Row {
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		if e.Type != "compaction" {
			continue
		}
		if !e.FromHook {
			return nil
		}
		var v struct {
			Summary          string           `json:"summary"`
			FirstKeptEntryID string           `json:"firstKeptEntryId"`
			TokensBefore     int              `json:"tokensBefore"`
			Details          rollover.Details `json:"details"`
		}
		if json.Unmarshal(e.Raw, &v) != nil || !v.Details.Reason.Valid() {
			return nil
		}
		// What left the window: Pi's estimate of the context just before
		// the compaction, less that of the context it leaves.
		reclaim := contextTokens(path[:i]) - contextTokens(path[:i+1])
		row := rollover.RolloverRow(sid, rollover.Compaction{Summary: v.Summary, FirstKeptEntryID: v.FirstKeptEntryID,
			TokensBefore: v.TokensBefore, Details: v.Details}, nb, max(reclaim, 0))
		row.EntryID = e.ID
		// The notebook writes and reviews of the window that ended (spec
		// 000 §10): the records after the compaction before this one.
		start := 0
		for j := i - 1; j >= 0; j-- {
			if path[j].Type == "compaction" {
				start = j + 1
				break
			}
		}
		inWindow := map[string]bool{}
		for _, x := range path[start:i] {
			inWindow[x.ID] = true
		}
		for _, rev := range notebook.Revisions(path[:i]) {
			switch {
			case !inWindow[rev.EntryID]:
			case rev.ReviewOnly:
				row.NotebookReviews++
			default:
				row.NotebookWrites++
			}
		}
		return []rollover.Row{row, rollover.WindowCacheRow(sid, row.EndedWindow, path[start:i])}
	}
	return nil
}

func (c *ContextRoutes) getState(w http.ResponseWriter, r *http.Request) {
	b, ok := c.queryBranch(w, r)
	if !ok {
		return
	}
	c.mu.Lock()
	s := *c.state(b.sid, b.path)
	c.mu.Unlock()
	contextJSON(w, struct {
		Session string         `json:"session"`
		Leaf    string         `json:"leaf"`
		State   rollover.State `json:"state"`
	}{b.sid, b.leaf, s})
}
