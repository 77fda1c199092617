package client

import pihistory "github.com/pi-history/pi-history"

// The wire format of the HTTP API is the root package's (wire.go and
// history.go there): the server (package api) encodes those types and this
// client decodes them. These names are the ones the client has always
// used.
type (
	ServerInfo       = pihistory.ServerInfo
	SessionsResponse = pihistory.SessionsResponse
	TreeEntry        = pihistory.TreeEntry
	SessionDetail    = pihistory.SessionDetail
	LedgerResponse   = pihistory.LedgerResponse
	LoginCode        = pihistory.LoginCode
	WindowsResponse  = pihistory.WindowsResponse
	SyncRequest      = pihistory.SyncRequest
	SyncResponse     = pihistory.SyncResponse
	PushRequest      = pihistory.PushRequest
	ImportRequest    = pihistory.ImportRequest
	ImportEvent      = pihistory.ImportEvent
	ImportProgress   = pihistory.ImportProgress
	IndexingProgress = pihistory.IndexingProgress
	CompactResponse  = pihistory.CompactResponse
	ReindexResponse  = pihistory.ReindexResponse
	FileStatus       = pihistory.FileStatus
	WatcherStatus    = pihistory.WatcherStatus
	FirstScan        = pihistory.FirstScan
	WatcherSkip      = pihistory.WatcherSkip
	IndexStatus      = pihistory.IndexStatus
	IngestStatus     = pihistory.IngestStatus
	Health           = pihistory.Health
	Fault            = pihistory.Fault
	// Error is an RFC 9457 problem document returned by the server, and
	// the error type of every Client method that got an HTTP error status.
	Error = pihistory.Problem
)

// ImportEventOf is the stream line of one status of an import.
func ImportEventOf(st pihistory.ImportStatus) ImportEvent { return pihistory.ImportEventOf(st) }

// Wire words of the HTTP API.
const (
	// ImportStreamType is the media type of POST /v1/import's progress stream.
	ImportStreamType = pihistory.ImportStreamType
	// ArchiveTrailer is the HTTP trailer in which GET /v1/export/archive
	// sends the archive's pihistory.ArchiveStats (JSON) once the last byte
	// is written: a client that gets the body without it got a truncated
	// archive.
	ArchiveTrailer = pihistory.ArchiveTrailer
	// ArchiveSessionsHeader tells, before an archive's body, how many
	// sessions it will hold (for progress).
	ArchiveSessionsHeader = pihistory.ArchiveSessionsHeader
)
