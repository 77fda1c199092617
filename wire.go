package pihistory

import (
	"fmt"
	"time"
)

// This file is the wire format of the HTTP API: the request and response
// bodies beside those of History (history.go). The server (package api)
// encodes exactly these types and api/client decodes them, so a change here
// is a change of the API and of api/openapi.json. The packages that make
// them (service, ingest, store, rollover, export) name them by aliases.

// ServerInfo is <data>/server.json, written by a running 'pi-history serve'
// and removed when it stops.
type ServerInfo struct {
	Addr string `json:"addr"` // host:port the server listens on
	PID  int    `json:"pid"`
	URL  string `json:"url"` // base URL, e.g. http://127.0.0.1:7314
}

// SessionsResponse is GET /v1/sessions.
type SessionsResponse struct {
	Sessions []SessionSummary `json:"sessions"`
}

// TreeEntry is one entry of a session's tree: enough to draw it.
type TreeEntry struct {
	ID         string `json:"id"`
	ParentID   string `json:"parentId,omitempty"`
	Type       string `json:"type"`
	Role       string `json:"role,omitempty"`
	CustomType string `json:"customType,omitempty"`
	Label      string `json:"label,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`
	Window     int    `json:"window"` // context window on the entry's own branch
	Pushed     bool   `json:"pushed,omitempty"`
}

// SessionDetail is GET /v1/sessions/{id}: the summary, the whole tree in
// file order (unless tree=false was asked), its leaves, the current leaf, and
// the windows of one branch (the current one unless leaf= was given).
type SessionDetail struct {
	Summary     SessionSummary `json:"summary"`
	CurrentLeaf string         `json:"currentLeaf"`
	Leaves      []string       `json:"leaves"`
	Tree        []TreeEntry    `json:"tree,omitempty"`
	WindowsLeaf string         `json:"windowsLeaf"`
	Windows     []Window       `json:"windows"`
}

// LedgerResponse is GET /v1/ledger: the rows of the rollover ledger that
// match, oldest first.
type LedgerResponse struct {
	Rows    []LedgerRow `json:"rows"`
	Skipped int         `json:"skipped"` // unreadable lines
	Path    string      `json:"path"`
}

// LoginCode is POST /v1/ui/login-code: a one-time web UI login code and the
// path (under the server's base URL) that redeems it.
type LoginCode struct {
	Code string `json:"code"`
	Path string `json:"path"`
}

// WindowsResponse is GET /v1/sessions/{id}/windows.
type WindowsResponse struct {
	Session string   `json:"session"`
	Leaf    string   `json:"leaf"`
	Windows []Window `json:"windows"`
}

// SyncRequest is the body of POST /v1/sessions/{id}/sync.
type SyncRequest struct {
	Path string `json:"path"` // absolute path of the session's journal, under a sessions directory
}

// SyncResponse says what syncing a journal stored. When it returns, every
// complete line the file held when the request arrived is stored.
type SyncResponse struct {
	Session string     `json:"session"`
	Leaf    string     `json:"leaf"`    // the session's current leaf after the sync
	Entries int        `json:"entries"` // entries of the session after the sync
	LastSeq uint64     `json:"lastSeq"`
	Report  FileReport `json:"report"`
}

// PushRequest is the JSON body of POST /v1/sessions/{id}/entries: journal
// lines exactly as Pi writes them (without newlines). The first may be the
// session header, needed when the server has never seen the session.
type PushRequest struct {
	Lines []string `json:"lines"`
}

// ImportRequest is the body of POST /v1/import: absolute paths of journal
// files or directories of them, as readable by the server.
type ImportRequest struct {
	Paths []string `json:"paths"`
}

// ImportEvent is one line of POST /v1/import's progress stream (asked for
// with Accept: application/x-ndjson): exactly one field is set. Progress
// comes while files are read, Indexing once they are (the import waits for
// the index), Compacting when a large import ends by compacting, and the
// last line is Summary or Error.
type ImportEvent struct {
	Progress   *ImportProgress   `json:"progress,omitempty"`
	Indexing   *IndexingProgress `json:"indexing,omitempty"`
	Compacting bool              `json:"compacting,omitempty"`
	Summary    *ImportSummary    `json:"summary,omitempty"`
	Error      *Problem          `json:"error,omitempty"`
}

// ImportEventOf is the stream line of one status of an import.
func ImportEventOf(st ImportStatus) ImportEvent {
	switch {
	case st.Compacting:
		return ImportEvent{Compacting: true}
	case st.Indexing:
		return ImportEvent{Indexing: &IndexingProgress{Through: st.Through, Target: st.Target}}
	}
	return ImportEvent{Progress: &ImportProgress{FilesDone: st.FilesDone, Files: st.Files, Bytes: st.Bytes, TotalBytes: st.TotalBytes, Entries: st.Entries,
		IndexedThrough: st.Through, IndexTarget: st.Target}}
}

// Status is the import status a progress, indexing or compacting line
// stands for.
func (ev ImportEvent) Status() ImportStatus {
	switch {
	case ev.Compacting:
		return ImportStatus{Compacting: true}
	case ev.Indexing != nil:
		return ImportStatus{Indexing: true, Through: ev.Indexing.Through, Target: ev.Indexing.Target}
	case ev.Progress != nil:
		p := ev.Progress
		return ImportStatus{FilesDone: p.FilesDone, Files: p.Files, Bytes: p.Bytes, TotalBytes: p.TotalBytes, Entries: p.Entries,
			Through: p.IndexedThrough, Target: p.IndexTarget}
	}
	return ImportStatus{}
}

// ImportProgress is how far the reading of an import's files is.
type ImportProgress struct {
	FilesDone  int   `json:"filesDone"`
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	TotalBytes int64 `json:"totalBytes"`
	Entries    int   `json:"entries"`
	// the index's mark and where it is heading: it lags while files are
	// read (absent from servers before 2026-11-30)
	IndexedThrough uint64 `json:"indexedThrough,omitempty"`
	IndexTarget    uint64 `json:"indexTarget,omitempty"`
}

// IndexingProgress is how far the index is once the files are read.
type IndexingProgress struct {
	Through uint64 `json:"through"`
	Target  uint64 `json:"target"`
}

// ImportStreamType is the media type of POST /v1/import's progress stream.
const ImportStreamType = "application/x-ndjson"

// ArchiveTrailer is the HTTP trailer in which GET /v1/export/archive sends
// the archive's ArchiveStats (JSON) once the last byte is written: a
// client that gets the body without it got a truncated archive.
const ArchiveTrailer = "Pi-History-Archive"

// ArchiveSessionsHeader tells, before an archive's body, how many sessions
// it will hold (for progress).
const ArchiveSessionsHeader = "Pi-History-Archive-Sessions"

// CompactResponse is what POST /v1/maintenance/compact did: sizes on disk
// in bytes before and after.
type CompactResponse struct {
	StoreBefore int64   `json:"storeBefore"`
	StoreAfter  int64   `json:"storeAfter"`
	IndexBefore int64   `json:"indexBefore"`
	IndexAfter  int64   `json:"indexAfter"`
	Seconds     float64 `json:"seconds"`
}

// ReindexResponse is what POST /v1/maintenance/reindex did.
type ReindexResponse struct {
	Entries uint64  `json:"entries"` // the store's last seq when the new index took over
	Seconds float64 `json:"seconds"`
}

// FileStatus is how far one journal file has been read.
type FileStatus struct {
	Path      string `json:"path"`
	Session   string `json:"session"`
	Offset    int64  `json:"offset"`  // bytes stored
	Size      int64  `json:"size"`    // bytes on disk now (-1 if the file is gone)
	Pending   int64  `json:"pending"` // size - offset when positive: not yet read
	Skipped   int    `json:"skipped"` // lines skipped as unreadable
	LastError string `json:"lastError,omitempty"`
}

// WatcherStatus describes the live watcher of Pi's sessions directories.
type WatcherStatus struct {
	Running     bool      `json:"running"`
	Dirs        []string  `json:"dirs"`        // the sessions directories
	WatchedDirs int       `json:"watchedDirs"` // directories with an active watch
	Ingests     uint64    `json:"ingests"`     // file reads done
	Errors      uint64    `json:"errors"`
	LastError   string    `json:"lastError,omitempty"`
	LastRescan  time.Time `json:"lastRescan,omitzero"`
	// Polling: the tree is too large to watch; it is rescanned every few
	// seconds instead.
	Polling bool `json:"polling,omitempty"`
	// Skips counts what the watcher left out since it started, each path
	// and cause once; Skipped is what it leaves out now (at most 1,000).
	Skips   uint64        `json:"skips"`
	Skipped []WatcherSkip `json:"skipped,omitempty"`
	// FirstScan is how far the watcher's first reading of the sessions
	// directories is (absent before it began): searches and the session
	// list are partial until it is done.
	FirstScan *FirstScan `json:"firstScan,omitempty"`
}

// FirstScan is the progress of a watcher's first scan.
type FirstScan struct {
	Files     int     `json:"files"`     // journals to read
	FilesDone int     `json:"filesDone"` // read so far
	Bytes     int64   `json:"bytes"`     // their size
	BytesDone int64   `json:"bytesDone"`
	Entries   int     `json:"entries"` // entries stored from them
	Done      bool    `json:"done"`
	Seconds   float64 `json:"seconds"` // so far, or in all once done
}

// WatcherSkip is a file, directory or link the watcher leaves out, or
// lines of a journal it skips, with the reason.
type WatcherSkip struct {
	Path   string    `json:"path"`
	Line   int       `json:"line,omitempty"` // the last line skipped for this reason; 0 for a whole file or directory
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// IndexStatus is how far the search index follows the store.
type IndexStatus struct {
	LastSeq        uint64 `json:"lastSeq"`
	IndexedThrough uint64 `json:"indexedThrough"`
	// Lag is the entries the index has still to take in: 0 once it has
	// caught up (the newest entries, less than a block, are searched by
	// scanning and are not lag).
	Lag uint64 `json:"lag"`
}

// IngestStatus is GET /v1/ingest/status.
type IngestStatus struct {
	Files        []FileStatus   `json:"files"`
	PendingBytes int64          `json:"pendingBytes"` // sum of Pending
	SkippedLines int            `json:"skippedLines"`
	Index        IndexStatus    `json:"index"`
	Watcher      *WatcherStatus `json:"watcher,omitempty"` // absent when the server does not watch
}

// Health is GET /healthz.
type Health struct {
	// Status is "ok", or "degraded" while a fault keeps part of the
	// server from working (Faults says which and why); searches, lists
	// and reads go on while it is degraded.
	Status string  `json:"status"`
	Faults []Fault `json:"faults,omitempty"`
	Proof  string  `json:"proof,omitempty"` // with ?challenge=C: Proof(token, Host, C)
}

// Fault is one cause of degraded health.
type Fault struct {
	// Part is what is affected: "writes" (the store refuses ingest and
	// pushes until it clears), "background" (the store's flushes or
	// compactions fail and are retried) or "index" (indexing fails and is
	// retried; searches scan what is not indexed meanwhile).
	Part  string `json:"part"`
	Cause string `json:"cause"`
	Since string `json:"since"` // RFC 3339
	// Restart: the fault clears only when the server restarts.
	Restart bool `json:"restart,omitempty"`
}

// Problem is an RFC 9457 problem document: what every HTTP route of the
// server answers a failure with (package internal/problem writes it), and
// the error a client (api/client) returns for an HTTP error status.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Param  string `json:"param,omitempty"` // the offending parameter, field or line
	Entry  string `json:"entry,omitempty"` // 409: the entry id already stored with other content
}

func (e *Problem) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP status %d", e.Status)
	}
	if e.Param != "" {
		return fmt.Sprintf("%s (%s)", msg, e.Param)
	}
	return msg
}

// StoreStats summarises the data directory.
type StoreStats struct {
	Sessions       int    `json:"sessions"`
	Entries        int    `json:"entries"`
	Searchable     int    `json:"searchable"`
	Bytes          int64  `json:"bytes"` // bytes of journal lines stored
	StoreBytes     int64  `json:"storeBytes"`
	IndexBytes     int64  `json:"indexBytes"`
	LastSeq        uint64 `json:"lastSeq"`
	IndexedThrough uint64 `json:"indexedThrough"`
	IndexLag       uint64 `json:"indexLag"`      // entries stored but not yet indexed (searches read them meanwhile)
	IndexSegments  int    `json:"indexSegments"` // the index's files (segments and runs)
	IndexHealthy   bool   `json:"indexHealthy"`
	// IndexFormat names the layout of the index's files; files of another
	// are built again by themselves.
	IndexFormat  string `json:"indexFormat"`
	Files        int    `json:"files"`
	SkippedLines int    `json:"skippedLines"`
	DataDir      string `json:"dataDir"`
	// SkippedPaths is how many files, directories and links a server's
	// live watcher leaves out now (its /v1/ingest/status lists them); nil
	// without a watcher.
	SkippedPaths *int `json:"skippedPaths,omitempty"`
}

// ImportSummary is what an import did.
type ImportSummary struct {
	Files    int             `json:"files"`
	Sessions int             `json:"sessions"`
	Entries  int             `json:"entries"` // entries added
	Stored   int             `json:"stored"`  // entries of the sessions read that were stored before
	Dups     int             `json:"duplicates"`
	Bytes    int64           `json:"bytes"` // journal bytes read
	Skipped  int             `json:"skippedLines"`
	Problems []ImportProblem `json:"problems"`
	// Waiting are the files that end in a line without its newline (Pi
	// writing it, or a file cut short): that line is read once complete.
	Waiting []WaitingFile `json:"waiting,omitempty"`
	Seconds float64       `json:"seconds"`
}

// WaitingFile is a file whose last Bytes have no newline yet.
type WaitingFile struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

// ImportStatus is how far an import is, as ImportWatched reports it: the
// files while they are read; once they are, the index catching up
// (Indexing, Through of Target) or the store and index compacting.
type ImportStatus struct {
	FilesDone, Files  int
	Bytes, TotalBytes int64
	Entries           int
	Indexing          bool
	Through, Target   uint64 // the index's mark and where it is heading (also while files are read)
	Compacting        bool
}

// ImportProblem is a line that was skipped, or a file that could not be read.
type ImportProblem struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
	// Unread: the whole file (or archive member) was not read: not a
	// journal, unreadable, or an archive cut short. Otherwise one line was
	// skipped and the rest read.
	Unread bool `json:"unread,omitempty"`
}

// FileReport says what reading one file did.
type FileReport struct {
	Path      string          `json:"path"`
	Session   string          `json:"session,omitempty"`
	Added     int             `json:"added"`
	Confirmed int             `json:"confirmed"`
	Dups      int             `json:"duplicates"`
	Replaced  int             `json:"replaced"`
	Bytes     int64           `json:"bytes"` // bytes consumed by this call
	Rewritten bool            `json:"rewritten"`
	Problems  []ImportProblem `json:"problems,omitempty"`
	Pending   int64           `json:"pending"` // bytes of an incomplete last line left for later
}

// PushResult says what storing entries did (a push, or reading a file).
type PushResult struct {
	Session    string `json:"session"`
	Added      int    `json:"added"`      // new entries stored
	Confirmed  int    `json:"confirmed"`  // pushed entries now also found in the file
	Duplicates int    `json:"duplicates"` // entries already stored with the same bytes
	Replaced   int    `json:"replaced"`   // entries a rewrite dropped (a v1 journal migrated) or gave other bytes
	LastSeq    uint64 `json:"lastSeq"`
}

// LedgerRow is one line of the rollover ledger (package rollover). Only the fields of its kind are set.
type LedgerRow struct {
	Time             string         `json:"ts"`
	Kind             string         `json:"kind"`
	Session          string         `json:"session,omitempty"`
	Window           int            `json:"window,omitempty"`
	EndedWindow      int            `json:"endedWindow,omitempty"` // a rollover row: the window it ended, which its writes, reviews and reclaim are of
	Reason           RolloverReason `json:"reason,omitempty"`
	Auto             bool           `json:"auto,omitempty"`
	OK               *bool          `json:"ok,omitempty"`
	Blocker          GateBlocker    `json:"blocker,omitempty"`
	Why              string         `json:"why,omitempty"`
	ReclaimTokens    int            `json:"reclaimTokens,omitempty"`
	TokensBefore     int            `json:"tokensBefore,omitempty"`
	NotebookRevision int            `json:"notebookRevision,omitempty"`
	NotebookBytes    int            `json:"notebookBytes,omitempty"`
	NotebookWrites   int            `json:"notebookWrites,omitempty"`
	NotebookReviews  int            `json:"notebookReviews,omitempty"`
	Review           bool           `json:"review,omitempty"` // a notes row: the model reviewed the notebook without changing it
	FirstKeptEntryID string         `json:"firstKeptEntryId,omitempty"`
	EntryID          string         `json:"entryId,omitempty"`
	Stage            FallbackStage  `json:"stage,omitempty"`
	Attempt          int            `json:"attempt,omitempty"`
	Calls            int            `json:"calls,omitempty"`
	CacheReadTokens  int            `json:"cacheReadTokens,omitempty"`
	UncachedTokens   int            `json:"uncachedInputTokens,omitempty"` // input not read from the cache: plain input plus cache writes
	CacheWriteTokens int            `json:"cacheWriteTokens,omitempty"`    // the part of uncachedInputTokens written to the cache
	PinnedHits       int            `json:"pinnedHits,omitempty"`          // a rollover_followup row: history calls that named or returned a pinned entry
}

// LedgerFilter selects rows when reading.
type LedgerFilter struct {
	Kind    string // "" for all kinds
	Session string // "" for all sessions
	Limit   int    // the newest Limit rows; 0 for all
}

// ArchiveStats counts what an archive holds so far.
type ArchiveStats struct {
	Sessions int   `json:"sessions"`
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`   // journal bytes (uncompressed)
	Written  int64 `json:"written"` // bytes written (compressed)
}

func (p ImportProblem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Reason)
}

// RolloverReason says who asked for a rollover (package rollover names the
// values); it is carried into gate verdicts, compaction details and ledger
// rows.
type RolloverReason string

// GateBlocker is the stable name of a gate refusal, in ledger rows and API
// responses (package rollover names the values).
type GateBlocker string

// FallbackStage is the fallback state machine's stage (package rollover
// names the values).
type FallbackStage string

// HTTPStatus is the status the document is sent with (internal/problem's
// Write reads it).
func (e Problem) HTTPStatus() int { return e.Status }
