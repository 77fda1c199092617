package ingest

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Skip is something the watcher leaves out, with the reason: a file it
// does not read (not a journal), lines of a journal it skips, a directory
// it cannot read, a link it does not follow.
type Skip struct {
	Path string `json:"path"`
	// Line is the last line skipped for this reason; 0 when the whole
	// file or directory is left out.
	Line   int       `json:"line,omitempty"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"` // when it was first seen
}

// skipKind says when a skip stops being one.
type skipKind int

const (
	skipUnread skipKind = iota // a file not read: until a read of it stores something
	skipLines                  // lines skipped: kept while the file exists (they are not read again)
	skipWalk                   // a directory or link left out: until a whole rescan no longer finds it
)

type skipKey struct {
	path, cause string
}

type skipRec struct {
	Skip
	kind skipKind
	seen time.Time // when last noted
}

// maxSkips bounds what the watcher keeps (and lists) of skips: a
// directory of ten thousand broken files costs no more than a thousand.
// Beyond it skips are still counted and logged.
const maxSkips = 1000

// skips is the watcher's record of what it leaves out: each skip is
// logged once per path and cause, counted once, and listed in the
// watcher's status while it lasts.
type skips struct {
	mu    sync.Mutex
	by    map[skipKey]*skipRec
	total uint64 // skips noted, each path and cause once
	log   *slog.Logger
}

// causeOf is the part of a reason that names its cause: reasons differ
// in details (a JSON error's offset, a count of lines) for one cause.
func causeOf(kind skipKind, reason string) string {
	if kind == skipUnread {
		return "unread" // one cause per file: the reason changes as it grows
	}
	c, _, _ := strings.Cut(reason, ":")
	return c
}

// note records a skip; the first time for its path and cause it is logged
// and counted.
func (s *skips) note(kind skipKind, path string, line int, reason string) {
	now := time.Now()
	k := skipKey{path, causeOf(kind, reason)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.by[k]; r != nil {
		r.Reason, r.seen = reason, now
		if line > 0 {
			r.Line = line
		}
		return
	}
	s.total++
	if len(s.by) < maxSkips {
		s.by[k] = &skipRec{Skip: Skip{Path: path, Line: line, Reason: reason, Since: now}, kind: kind, seen: now}
	}
	attrs := []any{"path", path, "reason", reason}
	if line > 0 {
		attrs = append(attrs, "line", line)
	}
	s.log.Warn("ingest: skipped", attrs...)
}

// drop forgets the skips of path of the given kinds.
func (s *skips) drop(path string, kinds ...skipKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.by {
		if k.path == path && slices.Contains(kinds, r.kind) {
			delete(s.by, k)
		}
	}
}

// dropWalkBefore forgets the directory and link skips not noted since t:
// a whole rescan did not find them again.
func (s *skips) dropWalkBefore(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.by {
		if r.kind == skipWalk && r.seen.Before(t) {
			delete(s.by, k)
		}
	}
}

// list is the skips that last, by path, and the total noted.
func (s *skips) list() ([]Skip, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Skip, 0, len(s.by))
	for _, r := range s.by {
		out = append(out, r.Skip)
	}
	slices.SortFunc(out, func(a, b Skip) int {
		return strings.Compare(a.Path+"\x00"+a.Reason, b.Path+"\x00"+b.Reason)
	})
	return out, s.total
}
