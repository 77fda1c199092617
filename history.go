package pihistory

import (
	"context"
	"time"
)

// History is what pi-history knows about stored sessions, as every client
// of it asks: literal search, chronological lists, reads by id, a branch's
// context windows, the sessions, and the path of a branch. *search.Engine
// answers from the store and index in this process; the HTTP API serves
// one (package api), and api/client's History is one again on the other
// side of the wire, so the CLI holds a History and need not know which.
// Readers in the server's process that need the entries themselves (the
// web UI's pages, the context machinery in package window) resolve their
// branches with the same resolver (search.Engine.Branch).
//
// Every method fails with an *Error whose Kind says why: Invalid for a
// malformed request (Param names the field), NotFound for a session, leaf
// or window that is not stored; anything else is the server's own failure.
type History interface {
	Search(ctx context.Context, req *SearchRequest) (*SearchResponse, error)
	List(ctx context.Context, req *ListRequest) (*ListResponse, error)
	Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error)
	// Windows returns the context windows of the branch ending at leaf
	// (the session's current leaf when leaf is ""), and the leaf used.
	Windows(ctx context.Context, session, leaf string) (leafUsed string, windows []Window, err error)
	// Sessions lists every session, newest activity first.
	Sessions(ctx context.Context) ([]SessionSummary, error)
	// Session describes one session, with its leaves.
	Session(ctx context.Context, id string) (*SessionSummary, error)
	// BranchPath returns the entries of the branch ending at leaf (the
	// session's current leaf when leaf is ""), root first, and the leaf
	// used: the one resolver of a session and leaf to a branch that every
	// route uses. A session without entries has an empty path and leaf.
	BranchPath(ctx context.Context, session, leaf string) (leafUsed string, path []EntryRef, err error)
}

// RootAgent is the agent name of a session no agent lineage record says
// was spawned by another.
const RootAgent = "root"

// LineageMember is one session of a lineage (a session with those it was
// forked from and into, and those of the agents that spawned it or that it
// spawned) with the agent that owns it.
type LineageMember struct {
	Session string `json:"session"`
	Agent   string `json:"agent"` // the owning agent's id, or RootAgent
}

// EntryRef names one stored entry: its session, its id, and its seq (the
// store's order of arrival, unique across sessions).
type EntryRef struct {
	Session string `json:"session"`
	Entry   string `json:"entry"`
	Seq     uint64 `json:"seq"`
}

// Ref is how the model cites an entry: "[history entry=ID]".
func Ref(id string) string { return RefOpen + id + RefClose }

// What a reference puts around an entry's id (see Ref).
const (
	RefOpen  = "[history entry="
	RefClose = "]"
)

// Window is one context window of a branch: the entries between two
// compactions on the path. Window 1 starts at the root; each compaction on
// the path starts the next window and is its first entry.
type Window struct {
	N            int    `json:"window"`
	Start        int    `json:"-"` // index into the path
	End          int    `json:"-"` // index into the path, exclusive
	FirstEntry   string `json:"firstEntry"`
	LastEntry    string `json:"lastEntry"`
	Entries      int    `json:"entries"`
	CompactionID string `json:"compactionId,omitempty"` // the compaction that started it (none for window 1)
	Kind         string `json:"startedBy"`              // "start", "compaction" (Pi's own) or "hook" (an extension's, e.g. a rollover)
	StartedAt    string `json:"startedAt,omitempty"`
}

// Scope names what a request covers.
type Scope string

// Scopes.
const (
	ScopeBranch  Scope = "branch"  // the ancestor chain of a leaf (default: the session's current leaf)
	ScopeSession Scope = "session" // every branch of one session
	ScopeLineage Scope = "lineage" // the session, its ancestors and its descendants through forks and agent lineage records
	ScopeAll     Scope = "all"     // every session
)

// SearchRequest is a search: literal and case-sensitive by default, ignoring
// case (Unicode simple folding, as strings.EqualFold) with IgnoreCase, a
// regular expression (RE2 syntax) with Regex, both with both.
type SearchRequest struct {
	Needle      string    `json:"needle"`
	IgnoreCase  bool      `json:"ignoreCase,omitempty"` // match letters of either case (see pattern)
	Regex       bool      `json:"regex,omitempty"`      // the needle is a regular expression (RE2 syntax)
	Scope       Scope     `json:"scope,omitempty"`      // default: branch when Session is set, else all
	Session     string    `json:"session,omitempty"`    // required for branch, session and lineage scopes
	Leaf        string    `json:"leaf,omitempty"`       // branch scope: default the session's current leaf
	Window      int       `json:"window,omitempty"`     // 0: any window
	Types       []string  `json:"types,omitempty"`      // entry types (message, compaction, custom, …)
	Roles       []string  `json:"roles,omitempty"`      // message roles (user, assistant, toolResult, …)
	Since       time.Time `json:"since,omitzero"`
	Until       time.Time `json:"until,omitzero"`
	NewestFirst bool      `json:"newestFirst,omitempty"`
	Limit       int       `json:"limit,omitempty"` // default 20, at most 1000 (search.DefaultLimit, search.MaxLimit)
	All         bool      `json:"all,omitempty"`   // every hit, no limit
	Cursor      string    `json:"cursor,omitempty"`
	Count       bool      `json:"count,omitempty"`  // also count every hit (exact)
	Budget      int       `json:"budget,omitempty"` // snippet characters for the whole response
}

// Hit is one matching entry.
type Hit struct {
	Session         string    `json:"session"`
	Agent           string    `json:"agent,omitempty"` // lineage scope: the agent owning the session (its id, or root)
	Title           string    `json:"title,omitempty"` // the session's name, else the start of its first user message
	Cwd             string    `json:"cwd,omitempty"`   // the session's project directory
	Entry           string    `json:"entry"`
	Type            string    `json:"type"`
	Role            string    `json:"role,omitempty"`
	CustomType      string    `json:"customType,omitempty"`
	ToolName        string    `json:"toolName,omitempty"`
	Timestamp       string    `json:"timestamp"`
	Window          int       `json:"window"`
	OnCurrentBranch bool      `json:"onCurrentBranch"`
	Leaves          []string  `json:"leaves,omitempty"` // session/lineage scope: the leaves whose branch holds the entry
	Matches         int       `json:"matches"`          // occurrences of the needle in the entry
	Snippets        []Snippet `json:"snippets"`
	Ref             string    `json:"ref"`           // "[history entry=ID]"
	URL             string    `json:"url,omitempty"` // the entry's page in the web UI, when a server answered
	Seq             uint64    `json:"seq"`
}

// Snippet is a piece of an entry's text around a match. The match is
// Text[MatchStart:MatchEnd] (byte offsets into Text).
type Snippet struct {
	Text       string `json:"text"`
	MatchStart int    `json:"matchStart"`
	MatchEnd   int    `json:"matchEnd"`
	Offset     int    `json:"offset"` // character offset of Text in the entry's text
}

// SearchStats say what a search cost.
type SearchStats struct {
	Candidates   int     `json:"candidates"`   // blocks of entries proposed by the index (see package index)
	Scanned      int     `json:"scanned"`      // entries whose text was read and compared
	Confirmed    int     `json:"confirmed"`    // entries that really contain the needle
	BytesScanned int64   `json:"bytesScanned"` // text bytes compared
	Skipped      int     `json:"skipped"`      // entries ruled out by their trigram sketch (or, in all scope, by the filters), text unread
	TookMs       float64 `json:"tookMs"`
	Plan         string  `json:"plan"` // how it was answered, in words (for people; the words may change)
	// PlanKind is how it was answered, for programs; CountPlanKind, with
	// Count, how the count was.
	PlanKind      PlanKind `json:"planKind"`
	CountPlanKind PlanKind `json:"countPlanKind,omitempty"`
}

// PlanKind names the way a search page (or count) was answered.
type PlanKind string

// Plan kinds.
const (
	PlanNowhere PlanKind = "nowhere" // a trigram of the needle is in no entry the index holds: only the rest is read
	PlanIndex   PlanKind = "index"   // the index named the candidate entries
	PlanScan    PlanKind = "scan"    // every text in range was read
	PlanMembers PlanKind = "members" // a session, branch or lineage: its members the index did not rule out
)

// SearchResponse is a page of hits.
type SearchResponse struct {
	Hits      []Hit       `json:"hits"`
	Cursor    string      `json:"cursor,omitempty"` // pass back for the next page; empty when done
	Total     *int        `json:"total,omitempty"`  // with Count: every hit, all pages
	Truncated bool        `json:"truncated"`        // snippets were cut to fit the budget
	Stats     SearchStats `json:"stats"`
}

// ListRequest asks for the entries of a branch (or one window of it) in order.
type ListRequest struct {
	Session     string   `json:"session"`
	Leaf        string   `json:"leaf,omitempty"`
	Window      int      `json:"window,omitempty"`
	Types       []string `json:"types,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	NewestFirst bool     `json:"newestFirst,omitempty"`
	AllBranches bool     `json:"allBranches,omitempty"` // every entry of the session in file order
	Limit       int      `json:"limit,omitempty"`
	Cursor      string   `json:"cursor,omitempty"`
	// Offset is the position of the first item to answer (0-based, in the
	// filtered list), for callers that page by position (seed B's history
	// paging) rather than by cursor; not with Cursor.
	Offset int `json:"offset,omitempty"`
	// Allowlisted lists only what the history allowlist admits (the
	// model's history tool), as ReadRequest.Allowlisted reads: entries
	// with no searchable text are left out, and a type or role that never
	// has any is refused.
	Allowlisted bool `json:"allowlisted,omitempty"`
}

// Item is one line of a list.
type Item struct {
	Entry      string `json:"entry"`
	ParentID   string `json:"parentId,omitempty"`
	Type       string `json:"type"`
	Role       string `json:"role,omitempty"`
	CustomType string `json:"customType,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	Timestamp  string `json:"timestamp"`
	Window     int    `json:"window"`
	Preview    string `json:"preview"` // at most 120 characters: "user: …", "assistant → bash(…)", …
	Label      string `json:"label,omitempty"`
	Seq        uint64 `json:"seq"`
}

// ListResponse is a page of items.
type ListResponse struct {
	Session string `json:"session"`
	Leaf    string `json:"leaf"`
	Items   []Item `json:"items"`
	Total   int    `json:"total"` // items in the list, all pages
	Cursor  string `json:"cursor,omitempty"`
	// NextOffset is the position of the next page's first item, when one
	// follows (the cursor's position, for paging by offset).
	NextOffset *int `json:"nextOffset,omitempty"`
}

// ReadRequest reads one entry.
type ReadRequest struct {
	Session string `json:"session"`
	Entry   string `json:"entry"`
	Context int    `json:"context,omitempty"` // neighbours on each side, on the entry's branch
	Offset  int    `json:"offset,omitempty"`  // character offset into the text (or raw line)
	Length  int    `json:"length,omitempty"`  // characters to return (default 2000 for raw, all for text up to 20000)
	Raw     bool   `json:"raw,omitempty"`     // return the original JSON line instead of the decoded text
	// Allowlisted reads only what the history allowlist admits (the
	// model's history tool): an entry with no searchable text (a bash
	// command run with !!, another extension's data, a setting change)
	// is refused, its raw line included.
	Allowlisted bool `json:"allowlisted,omitempty"`
}

// ReadResponse is one entry with its neighbours.
type ReadResponse struct {
	Item       Item   `json:"item"`
	Text       string `json:"text"`                 // decoded searchable text (or raw line) from Offset
	Offset     int    `json:"offset"`               // character offset of Text
	TotalChars int    `json:"totalChars"`           // length of the whole text or raw line, in characters
	NextOffset int    `json:"nextOffset,omitempty"` // where the next piece starts; 0 when complete
	Before     []Item `json:"before,omitempty"`
	After      []Item `json:"after,omitempty"`
	Ref        string `json:"ref"`
}

// SessionSummary describes one session for lists.
type SessionSummary struct {
	ID            string `json:"id"`
	Title         string `json:"title"` // Name, else the start of the first user message ("" when neither)
	Name          string `json:"name"`
	Cwd           string `json:"cwd"`
	File          string `json:"file"`
	Created       string `json:"created"`
	LastActivity  string `json:"lastActivity"`
	Entries       int    `json:"entries"`
	Bytes         int64  `json:"bytes"`
	Windows       int    `json:"windows"` // on the current branch
	Leaf          string `json:"leaf"`
	ParentSession string `json:"parentSession,omitempty"` // id of the session this was forked from, when known
	ParentFile    string `json:"parentFile,omitempty"`    // as the header names it
	// Leaves are the session's branch ends: given for one session
	// (GET /v1/sessions/{id}), left out of the list of every session,
	// which would have to read every session's tree for them.
	Leaves []string `json:"leaves,omitempty"`
	// Score, Match and MatchField are set by a word search of sessions
	// (GET /v1/sessions?match=): how well the session matched (higher
	// first), the stretch that matched on one line, and the field it is
	// from ("title", "name", "text" for the user messages, "cwd").
	Score      float64 `json:"score,omitempty"`
	Match      string  `json:"match,omitempty"`
	MatchField string  `json:"matchField,omitempty"`
}
