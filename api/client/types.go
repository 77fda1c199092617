package client

import (
	"fmt"
	"time"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/rollover"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// This file is the wire format of the HTTP API: the request and response
// bodies that are not already types of packages search, service, store or
// ingest. The server (package api) encodes exactly these types, so a change
// here is a change of the API and of api/openapi.json.

// ServerInfo is <data>/server.json, written by a running 'pi-history serve'
// and removed when it stops.
type ServerInfo struct {
	Addr string `json:"addr"` // host:port the server listens on
	PID  int    `json:"pid"`
	URL  string `json:"url"` // base URL, e.g. http://127.0.0.1:7314
}

// SessionsResponse is GET /v1/sessions.
type SessionsResponse struct {
	Sessions []search.SessionSummary `json:"sessions"`
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
	Summary     search.SessionSummary `json:"summary"`
	CurrentLeaf string                `json:"currentLeaf"`
	Leaves      []string              `json:"leaves"`
	Tree        []TreeEntry           `json:"tree,omitempty"`
	WindowsLeaf string                `json:"windowsLeaf"`
	Windows     []journal.Window      `json:"windows"`
}

// LedgerResponse is GET /v1/ledger: the rows of the rollover ledger that
// match, oldest first.
type LedgerResponse struct {
	Rows    []rollover.Row `json:"rows"`
	Skipped int            `json:"skipped"` // unreadable lines
	Path    string         `json:"path"`
}

// LoginCode is POST /v1/ui/login-code: a one-time web UI login code and the
// path (under the server's base URL) that redeems it.
type LoginCode struct {
	Code string `json:"code"`
	Path string `json:"path"`
}

// WindowsResponse is GET /v1/sessions/{id}/windows.
type WindowsResponse struct {
	Session string           `json:"session"`
	Leaf    string           `json:"leaf"`
	Windows []journal.Window `json:"windows"`
}

// SyncRequest is the body of POST /v1/sessions/{id}/sync.
type SyncRequest struct {
	Path string `json:"path"` // absolute path of the session's journal, under a sessions directory
}

// SyncResponse says what syncing a journal stored. When it returns, every
// complete line the file held when the request arrived is stored.
type SyncResponse struct {
	Session string            `json:"session"`
	Leaf    string            `json:"leaf"`    // the session's current leaf after the sync
	Entries int               `json:"entries"` // entries of the session after the sync
	LastSeq uint64            `json:"lastSeq"`
	Report  ingest.FileReport `json:"report"`
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
	Progress   *ImportProgress        `json:"progress,omitempty"`
	Indexing   *IndexingProgress      `json:"indexing,omitempty"`
	Compacting bool                   `json:"compacting,omitempty"`
	Summary    *service.ImportSummary `json:"summary,omitempty"`
	Error      *Error                 `json:"error,omitempty"`
}

// ImportEventOf is the stream line of one status of an import.
func ImportEventOf(st service.ImportStatus) ImportEvent {
	switch {
	case st.Compacting:
		return ImportEvent{Compacting: true}
	case st.Indexing:
		return ImportEvent{Indexing: &IndexingProgress{Through: st.Through, Target: st.Target}}
	}
	return ImportEvent{Progress: &ImportProgress{FilesDone: st.FilesDone, Files: st.Files, Bytes: st.Bytes, TotalBytes: st.TotalBytes, Entries: st.Entries,
		IndexedThrough: st.Through, IndexTarget: st.Target}}
}

// status is the import status a progress, indexing or compacting line
// stands for.
func (ev ImportEvent) status() service.ImportStatus {
	switch {
	case ev.Compacting:
		return service.ImportStatus{Compacting: true}
	case ev.Indexing != nil:
		return service.ImportStatus{Indexing: true, Through: ev.Indexing.Through, Target: ev.Indexing.Target}
	case ev.Progress != nil:
		p := ev.Progress
		return service.ImportStatus{FilesDone: p.FilesDone, Files: p.Files, Bytes: p.Bytes, TotalBytes: p.TotalBytes, Entries: p.Entries,
			Through: p.IndexedThrough, Target: p.IndexTarget}
	}
	return service.ImportStatus{}
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
	Entries    uint64  `json:"entries"`    // the store's last seq when the new index took over
	Resketched int     `json:"resketched"` // entries whose trigram sketch was rewritten in the current format
	Seconds    float64 `json:"seconds"`
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

// Error is an RFC 9457 problem document returned by the server, and the
// error type of every Client method that got an HTTP error status.
type Error struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Param  string `json:"param,omitempty"` // the offending parameter, field or line
	Entry  string `json:"entry,omitempty"` // 409: the entry id already stored with other content
}

func (e *Error) Error() string {
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
