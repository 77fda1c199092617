// Package search answers questions about stored history: literal search,
// chronological lists, reads by id, context windows and sessions, each
// scoped to a branch, a session (all its branches), a lineage (a session
// with the sessions it was forked from and into, and those of the agents that
// spawned it or that it spawned) or everything.
//
// Search is literal by default: a hit is an entry whose searchable text
// contains the needle byte for byte (case-sensitive, no normalisation),
// like grep -F over the decoded text. A request may instead ignore case
// (Unicode simple folding) or give a regular expression (RE2 syntax): the
// literals every match must contain select the candidates, and the
// expression confirms each (see pattern). In "all" scope the trigram index proposes candidates and
// the stored text confirms each; entries the index has not reached yet are
// scanned, so a search never misses what the store holds. Narrow scopes scan
// their entries' text directly.
//
// Paging uses opaque cursors that name the last seq examined, so pages stay
// correct (no duplicates, no gaps) while new entries arrive.
package search

import (
	pihistory "github.com/pi-history/pi-history"
)

// The words of a request and its answer are the root package's, shared by
// every client of a History (see pihistory.History, which *Engine
// implements); this package names them as it always has.

// Scope names what a request covers.
type Scope = pihistory.Scope

// Scopes.
const (
	ScopeBranch  = pihistory.ScopeBranch  // the ancestor chain of a leaf (default: the session's current leaf)
	ScopeSession = pihistory.ScopeSession // every branch of one session
	ScopeLineage = pihistory.ScopeLineage // the session, its fork ancestors and its fork descendants
	ScopeAll     = pihistory.ScopeAll     // every session
)

// Limits.
const (
	MaxNeedleBytes = 4096
	DefaultLimit   = 20
	MaxLimit       = 1000
	// DefaultBudget is the default character budget for all snippets of a response.
	DefaultBudget = 8000
	// RawPiece is the size of one piece of a raw read, in characters.
	RawPiece = 2000
)

// Requests, answers and their parts.
type (
	Request        = pihistory.SearchRequest
	Hit            = pihistory.Hit
	Snippet        = pihistory.Snippet
	Stats          = pihistory.SearchStats
	Response       = pihistory.SearchResponse
	ListRequest    = pihistory.ListRequest
	Item           = pihistory.Item
	ListResponse   = pihistory.ListResponse
	ReadRequest    = pihistory.ReadRequest
	ReadResponse   = pihistory.ReadResponse
	SessionSummary = pihistory.SessionSummary
)

// Error is a request the engine refuses: a pihistory.Error whose Param
// names the offending field and whose Kind is Invalid or NotFound.
type Error = pihistory.Error

// Kind classifies errors (pihistory's kinds).
type Kind = pihistory.Kind

// The kinds of the engine's refusals.
const (
	BadRequest = pihistory.Invalid
	NotFound   = pihistory.NotFound
)

func badf(param, format string, args ...any) error {
	return pihistory.Errorf("", pihistory.Invalid, param, format, args...)
}

func notFoundf(param, format string, args ...any) error {
	return pihistory.Errorf("", pihistory.NotFound, param, format, args...)
}
