package export

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// Selection picks the sessions of an archive. The conditions combine: a
// session must match every one that is set.
type Selection struct {
	All     bool      // every session (needed when nothing else is set)
	Project string    // sessions whose cwd is exactly this directory
	Since   time.Time // sessions with activity at or after this time
	Until   time.Time // sessions started before this time
}

func (s Selection) empty() bool {
	return !s.All && s.Project == "" && s.Since.IsZero() && s.Until.IsZero()
}

func (s Selection) match(si *store.SessionInfo) bool {
	if s.Project != "" && filepath.Clean(si.Cwd) != filepath.Clean(s.Project) {
		return false
	}
	if !s.Since.IsZero() {
		last := journal.ParseTime(si.LastActivity)
		if c := journal.ParseTime(si.Created); c.After(last) {
			last = c
		}
		if last.Before(s.Since) {
			return false
		}
	}
	if !s.Until.IsZero() {
		c := journal.ParseTime(si.Created)
		if !c.IsZero() && !c.Before(s.Until) {
			return false
		}
	}
	return true
}

// Select returns the sessions a selection names, oldest first. An empty
// selection (nothing set, not even All) is an error wrapping ErrInvalid.
func Select(st *store.Store, sel Selection) ([]*store.SessionInfo, error) {
	if sel.empty() {
		return nil, fmt.Errorf("%w: choose the sessions: all, a project or a time range", ErrInvalid)
	}
	all, err := st.Sessions()
	if err != nil {
		return nil, err
	}
	var out []*store.SessionInfo
	for _, si := range all {
		if sel.match(si) {
			out = append(out, si)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Created != out[j].Created {
			return out[i].Created < out[j].Created
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// ArchiveStats counts what an archive holds so far (see pihistory.ArchiveStats).
type ArchiveStats = pihistory.ArchiveStats

// WriteArchive writes sessions as a zstd-compressed tar: one member per
// session, holding its journal exactly as a whole-session jsonl export
// does, named as Pi names journals ("--<cwd>--/<time>_<id>.jsonl", see
// MemberName), so unpacking it into Pi's sessions directory gives Pi its
// sessions back. Sessions are written one at a time and their lines one by
// one; memory does not depend on the archive's size. progress, if not nil,
// is called after each session.
func WriteArchive(ctx context.Context, w io.Writer, st *store.Store, sessions []*store.SessionInfo, progress func(ArchiveStats)) (ArchiveStats, error) {
	return writeArchive(ctx, w, st, sessions, progress)
}

func writeArchive(ctx context.Context, w io.Writer, src Source, sessions []*store.SessionInfo, progress func(ArchiveStats)) (ArchiveStats, error) {
	var stats ArchiveStats
	cw := &countWriter{w: w}
	enc, err := newZstdWriter(cw)
	if err != nil {
		return stats, err
	}
	tw := tar.NewWriter(enc)
	bw := bufio.NewWriterSize(tw, 64<<10)
	names := map[string]bool{}
	for _, si := range sessions {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		metas, err := src.SessionMetas(si.ID)
		if err != nil {
			return stats, fmt.Errorf("session %s: %w", si.ID, err)
		}
		header := headerLine(src, si)
		size := int64(len(header) + 1)
		for _, m := range metas {
			size += int64(m.RawLen + 1)
		}
		name := uniqueName(MemberName(si), names)
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: modTime(si), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return stats, fmt.Errorf("archive member %s: %w", name, err)
		}
		if err := writeLine(bw, header); err != nil {
			return stats, err
		}
		if err := writeRaws(bw, src, metas); err != nil {
			return stats, fmt.Errorf("session %s: %w", si.ID, err)
		}
		if err := bw.Flush(); err != nil {
			return stats, fmt.Errorf("session %s: %w (its stored entries do not add up to %d bytes)", si.ID, err, size)
		}
		stats.Sessions++
		stats.Entries += len(metas)
		stats.Bytes += size
		stats.Written = cw.n
		if progress != nil {
			progress(stats)
		}
	}
	if err := tw.Close(); err != nil {
		return stats, err
	}
	if err := enc.Close(); err != nil {
		return stats, err
	}
	stats.Written = cw.n
	return stats, nil
}

// MemberName is the archive path of a session's journal: Pi's directory for
// the session's cwd ("--home-me-proj--") and the journal's own file name,
// or "<created>_<id>.jsonl" when the session was not read from a .jsonl
// file.
func MemberName(si *store.SessionInfo) string {
	dir := "--" + strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(strings.TrimPrefix(si.Cwd, "/")) + "--"
	if si.Cwd == "" {
		dir = "--unknown-project--"
	}
	base := si.File
	if i := strings.LastIndex(base, "!"); i >= 0 { // a member of an imported archive
		base = base[i+1:]
	}
	base = filepath.Base(filepath.ToSlash(base))
	if base == "." || base == "/" || !strings.HasSuffix(base, ".jsonl") {
		ts := strings.NewReplacer(":", "-", ".", "-").Replace(si.Created)
		base = safeName(ts) + "_" + safeName(si.ID) + ".jsonl"
	}
	return dir + "/" + base
}

func uniqueName(name string, seen map[string]bool) string {
	out := name
	for i := 2; seen[out]; i++ {
		out = strings.TrimSuffix(name, ".jsonl") + "-" + strconv.Itoa(i) + ".jsonl"
	}
	seen[out] = true
	return out
}

func modTime(si *store.SessionInfo) time.Time {
	t := journal.ParseTime(si.LastActivity)
	if t.IsZero() {
		t = journal.ParseTime(si.Created)
	}
	if t.IsZero() {
		return time.Unix(0, 0)
	}
	return t.Truncate(time.Second)
}

// ParseTime reads a --since/--until value: an RFC 3339 time, a date
// (YYYY-MM-DD, UTC), or an age before now such as 90m, 36h, 7d or 2w.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04", s); err == nil {
		return t, nil
	}
	if n := len(s); n > 1 {
		unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[n-1]]
		if unit > 0 {
			if v, err := strconv.ParseFloat(s[:n-1], 64); err == nil && v >= 0 {
				return now.Add(-time.Duration(v * float64(unit))), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, invalidf("time %q: want an RFC 3339 time, a date (2006-01-02) or an age (36h, 7d, 2w)", s)
}

// invalidError is a request that cannot be served as asked; its message
// says why without the generic ErrInvalid text, which it wraps.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}
