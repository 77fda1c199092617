// Package window runs the context machinery of Pi sessions on top of the
// store: each session's notebook and named notes, the staleness status line,
// the rollover gate, the template compaction for session_before_compact, the
// reminder/fallback state machine and the ledger rows they produce. It knows
// no transport: package api decodes requests into this package's types,
// calls a Service method and encodes the result or the error.
//
// Every operation reads the branch it works on from the store (the Pi
// extension pushes or syncs its session before asking) and answers with a
// decision; nothing here appends to a journal. A notebook or note write
// returns the exact data of the custom entry that makes it real, which the
// extension appends with pi.appendEntry.
//
// The state machine's per-session volatile state (pending schedule,
// maintenance stage, reminder marker) lives in this process's memory, keyed
// by session. After a restart it is rebuilt from the branch with
// rollover.RebuildState: pending schedules and maintenance are volatile by
// design, and the journal holds everything else.
//
// The decisions themselves are pure functions in packages notebook and
// rollover; this package supplies their inputs (branch, notebook,
// configuration, state) and keeps what must outlive one request (the state
// map, the configuration as last read, the ledger file).
package window

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
)

// ConfigFile is the rollover configuration's file name inside the data
// directory (rollover.Config as JSON; every key optional).
const ConfigFile = "note-context.json"

// Lineage lists the sessions of a session's lineage (its forks and the
// agents that spawned it or that it spawned, at any depth), the session
// itself first, each with its owning agent. search.Engine implements it.
type Lineage interface {
	LineageMembers(sid string) ([]pihistory.LineageMember, error)
}

// Branches resolves a session and leaf (the current one when "") to the
// branch's entries, root first, with their raw journal lines, and the leaf
// used; an unknown session or leaf is an *Error of kind NotFound naming
// "session" or "leaf". search.Engine implements it: the one resolver of
// branches, which every route shares.
type Branches interface {
	BranchEntries(ctx context.Context, sid, leaf string) (leafUsed string, path []*journal.Entry, err error)
}

// Service answers the context operations of the sessions of one store. Its
// methods are safe for concurrent use.
type Service struct {
	resolver Branches
	lineage  Lineage // nil: the lineage scope covers the own session only
	ledger   *rollover.Ledger
	cfgPath  string
	log      *slog.Logger

	mu     sync.Mutex
	states map[string]*rollover.State

	cfgMu    sync.Mutex
	cfg      rollover.Config
	problems []rollover.ConfigProblem // what was wrong in the configuration file
	cfgStamp fileStamp                // the configuration file as cfg was last read from it
}

// New answers the context operations of the branches b resolves, with the
// ledger and the configuration file of dataDir. lineage may be nil (named notes then never
// look past their own session); log may be nil. A broken configuration file
// is logged and the defaults are used: the extension must keep working.
func New(b Branches, lineage Lineage, dataDir string, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{resolver: b, lineage: lineage, ledger: rollover.OpenLedger(dataDir),
		cfgPath: filepath.Join(dataDir, ConfigFile), log: log, states: map[string]*rollover.State{}}
	s.cfgStamp = stampOf(s.cfgPath)
	s.cfg, s.problems = loadConfig(s.cfgPath, log)
	return s
}

// Kind classifies the errors this package returns for a request it
// refuses; the kinds are pihistory's, shared by every layer.
type Kind = pihistory.Kind

// The kinds this package's errors have.
const (
	Invalid  = pihistory.Invalid  // a parameter is out of its range or missing
	NotFound = pihistory.NotFound // the session or the leaf is not stored
)

// Error is a refused request: what kind of failure, the parameter at fault
// ("" when none in particular) and a message that says what to do. Every
// HTTP route turns it into a problem document the same way
// (internal/problem).
type Error = pihistory.Error

func invalid(param, format string, args ...any) *Error {
	return pihistory.Errorf("", Invalid, param, format, args...)
}

func notFound(param, format string, args ...any) *Error {
	return pihistory.Errorf("", NotFound, param, format, args...)
}

// ---- configuration ----

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

// loadConfig reads the rollover configuration, logging what was wrong in
// it; the defaults stand in for what could not be read.
func loadConfig(path string, log *slog.Logger) (rollover.Config, []rollover.ConfigProblem) {
	cfg, problems, err := rollover.LoadConfig(path)
	if err != nil {
		log.Warn("rollover configuration unreadable; using defaults", "path", path, "err", err)
	}
	for _, p := range problems {
		log.Warn("rollover configuration value ignored", "path", path, "problem", p)
	}
	return cfg, problems
}

// Config returns the configuration in force and what was wrong in its file,
// reading the file again when it changed (written, replaced or removed)
// since it was last read, so an edit applies to the next request without
// restarting serve. A file that became unreadable gives the defaults, and
// the problem is logged.
func (s *Service) Config() (rollover.Config, []rollover.ConfigProblem) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if st := stampOf(s.cfgPath); st != s.cfgStamp {
		s.cfgStamp = st
		s.cfg, s.problems = loadConfig(s.cfgPath, s.log)
	}
	return s.cfg, s.problems
}

// config is the configuration in force (see Config).
func (s *Service) config() rollover.Config {
	cfg, _ := s.Config()
	return cfg
}

// limits are the notebook's size ceilings in force.
func (s *Service) limits() notebook.Limits {
	cfg := s.config()
	return notebook.Limits{MaxBytes: cfg.NotebookMaxBytes, MaxTokens: cfg.NotebookMaxTokens}
}

// ConfigInfo is the configuration in force with where it and the ledger
// live (GET /v1/context/config).
type ConfigInfo struct {
	Config   rollover.Config          `json:"config"`
	Problems []rollover.ConfigProblem `json:"problems"`
	Path     string                   `json:"path"`
	Ledger   string                   `json:"ledger"`
	Ledgered bool                     `json:"ledgerEnabled"`
}

// ConfigInfo reports the configuration in force (see Config), its problems
// (never nil), its file and the ledger's.
func (s *Service) ConfigInfo() ConfigInfo {
	cfg, probs := s.Config()
	if probs == nil {
		probs = []rollover.ConfigProblem{}
	}
	return ConfigInfo{Config: cfg, Problems: probs, Path: s.cfgPath, Ledger: s.ledger.Path(), Ledgered: s.ledger.Enabled()}
}

// ---- ledger ----

// LedgerPage is the rows of the ledger that match a filter, oldest first.
type LedgerPage struct {
	Rows    []rollover.Row `json:"rows"`    // never nil
	Skipped int            `json:"skipped"` // unreadable lines
	Path    string         `json:"path"`
}

// Ledger reads the ledger rows that match f.
func (s *Service) Ledger(f rollover.LedgerFilter) (LedgerPage, error) {
	rows, skipped, err := s.ledger.Read(f)
	if err != nil {
		return LedgerPage{}, err
	}
	if rows == nil {
		rows = []rollover.Row{}
	}
	return LedgerPage{Rows: rows, Skipped: skipped, Path: s.ledger.Path()}, nil
}

// record appends rows to the ledger. A row that cannot be written is
// logged, never an error: the ledger is a record, not a precondition.
func (s *Service) record(rows ...rollover.Row) {
	for _, r := range rows {
		if err := s.ledger.Append(r); err != nil {
			s.log.Warn("ledger row not written", "kind", r.Kind, "err", err)
		}
	}
}

// ---- branches ----

// branch is the branch of a session an operation works on.
type branch struct {
	sid  string
	leaf string           // the leaf used: the current one when the request names none
	path []*journal.Entry // root first
}

func (s *Service) branch(sid, leaf string) (branch, error) {
	path, leaf, err := s.branchPath(sid, leaf)
	if err != nil {
		return branch{}, err
	}
	return branch{sid: sid, leaf: leaf, path: path}, nil
}

// branchPath is the path (root first, raw lines filled) of leaf in session
// sid and the leaf used, from the one resolver (Branches). The context
// routes name the session in their path ({id}), so an unknown session is
// refused on "id", with what registers one.
func (s *Service) branchPath(sid, leaf string) ([]*journal.Entry, string, error) {
	leaf, path, err := s.resolver.BranchEntries(context.Background(), sid, leaf)
	var e *Error
	if errors.As(err, &e) && e.Kind == NotFound && e.Param == "session" {
		return nil, "", notFound("id", "no session %q is stored; register it with POST /v1/sessions/{id}/sync or push its entries first", sid)
	}
	return path, leaf, err
}

// branches returns the caller's branch and, for the lineage scope, the
// current branches of the other sessions of its lineage, with the leaf used.
func (s *Service) branches(sid, leaf, scope string) ([]notebook.Branch, string, error) {
	switch scope {
	case "", "branch", "lineage":
	default:
		return nil, "", invalid("scope", "scope must be branch or lineage, not %q", scope)
	}
	path, leaf, err := s.branchPath(sid, leaf)
	if err != nil {
		return nil, "", err
	}
	out := []notebook.Branch{{Session: sid, Agent: pihistory.RootAgent, Path: path}}
	if scope == "lineage" && s.lineage != nil {
		ms, err := s.lineage.LineageMembers(sid)
		if err != nil {
			return nil, "", err
		}
		for _, m := range ms {
			if m.Session == sid {
				out[0].Agent = m.Agent
				continue
			}
			p, _, err := s.branchPath(m.Session, "")
			if err != nil {
				continue // a session that vanished meanwhile
			}
			out = append(out, notebook.Branch{Session: m.Session, Agent: m.Agent, Path: p})
		}
	}
	return out, leaf, nil
}

// windowOf is the number of the window the end of path is in (1 for an
// empty path).
func windowOf(path []*journal.Entry) int {
	w := journal.WindowOf(path)
	if len(w) == 0 {
		return 1
	}
	return w[len(w)-1]
}

// ---- volatile state ----

// state returns the session's volatile state, rebuilding it from path when
// the process has none or the branch moved to another window. s.mu is held.
func (s *Service) state(sid string, path []*journal.Entry) *rollover.State {
	st := s.states[sid]
	if st == nil {
		r := rollover.RebuildState(path)
		st = &r
		s.states[sid] = st
	} else if w := windowOf(path); st.Window != 0 && st.Window != w {
		// The leaf moved to another window (/tree, a fork): volatile state
		// belongs to the old one.
		r := rollover.RebuildState(path)
		if r.Attempt < st.Attempt {
			r.Attempt = st.Attempt
		}
		*st = r
	}
	return st
}
