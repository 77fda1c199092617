// Package export writes stored sessions out of pi-history: as Pi's own
// journal format (jsonl), as a readable Markdown transcript (md), or as one
// self-contained HTML page (html), optionally zstd-compressed; and many
// sessions at once as a zstd-compressed tar archive that 'pi-history import'
// reads back.
//
// Scope: a whole session, one branch (the path from the root to a chosen
// leaf), or one context window of a branch. A jsonl export holds the
// original lines byte for byte: the session's header line, then either every
// entry in file order (whole session) or the entries of the path, root first
// (branch, window). Pi's SessionManager opens such a file as a session.
//
// Everything streams: entries are read from the store one raw line at a
// time and written at once, so memory does not grow with the size of a
// session's text or of an archive. (A session's entry metadata, a few
// hundred bytes per entry, is held while that session is written.)
//
// Files are written to a temporary name in the destination directory and
// renamed only when complete (see WriteFile), so a failed export never
// leaves a file that looks finished. Nothing here writes to the store.
package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// Format is an export format.
type Format string

// Formats.
const (
	JSONL    Format = "jsonl" // Pi's journal format, original lines byte for byte
	Markdown Format = "md"    // a readable transcript
	HTML     Format = "html"  // one self-contained page, no scripts
)

// ParseFormat accepts jsonl, md (markdown) and html.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "jsonl", "json", "ndjson":
		return JSONL, nil
	case "md", "markdown":
		return Markdown, nil
	case "html", "htm":
		return HTML, nil
	}
	return "", fmt.Errorf("%w: format %q: want jsonl, md or html", ErrInvalid, s)
}

// ErrInvalid marks a request that cannot be served as asked (bad format,
// window number < 0); unknown sessions, leaves and windows wrap
// store.ErrNotFound instead. Its kind is pihistory.Invalid, so an HTTP
// route answers it with the same problem document as any invalid
// parameter.
var ErrInvalid error = errInvalid{}

type errInvalid struct{}

func (errInvalid) Error() string             { return "invalid export request" }
func (errInvalid) ErrorKind() pihistory.Kind { return pihistory.Invalid }

// Options choose what one session export contains.
type Options struct {
	Format Format
	// Leaf exports the branch that ends at this entry id. Empty: the whole
	// session for jsonl; for md and html the current branch first, then each
	// other branch's own entries.
	Leaf string
	// Window exports only this context window (1-based) of the branch
	// (the current branch when Leaf is empty). 0: every window.
	Window int
	// Zstd compresses the output (one zstd frame).
	Zstd bool
}

// Source is what an export reads; *store.Store implements it.
type Source interface {
	Session(sid string) (*store.SessionInfo, error)
	SessionMetas(sid string) ([]*store.Meta, error)
	Raw(seq uint64) ([]byte, error)
	FileState(path string) (*store.FileState, error)
}

// Branches resolves a session and a leaf (its current one when "") to the
// branch: the session's tree, the path to the leaf (root first) and the
// leaf used; an unknown session or leaf is a pihistory.Error of kind
// NotFound. search.Engine's Branch implements it: the one resolver every
// route shares, so an export refuses what a search or a list refuses, in
// the same words.
type Branches interface {
	Branch(sid, leaf string) (*store.SessionTree, []*journal.Entry, string, error)
}

// Export is one validated session export, ready to write. New checks the
// session, leaf and window, so a caller can refuse a bad request before it
// creates a file or sends response headers.
type Export struct {
	src  Source
	Info *store.SessionInfo
	Opts Options

	tree    *store.SessionTree // nil for a whole-session jsonl export
	path    []*journal.Entry   // branch or window entries, root first (nil: whole session)
	windows []int              // window number of each path entry
	leaf    string             // the branch's leaf (a window's last entry may come before it)
}

// New validates a session export read from src (a *store.Store), its
// branch resolved by br. An unknown session wraps store.ErrNotFound, an
// unknown leaf is br's NotFound error, a window past the branch's end
// wraps store.ErrNotFound (all of kind NotFound); a bad format or window
// number wraps ErrInvalid. A whole-session jsonl export reads no branch
// (br may be nil for one).
func New(src Source, br Branches, sid string, o Options) (*Export, error) {
	if o.Format == "" {
		o.Format = JSONL
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return nil, err
	}
	if o.Window < 0 {
		return nil, fmt.Errorf("%w: window %d: windows are numbered from 1", ErrInvalid, o.Window)
	}
	info, err := src.Session(sid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("session %q: %w", sid, store.ErrNotFound)
	}
	if err != nil {
		// A store that fails to read is not a missing session.
		return nil, fmt.Errorf("session %q: %w", sid, err)
	}
	x := &Export{src: src, Info: info, Opts: o}
	if o.Format == JSONL && o.Leaf == "" && o.Window == 0 {
		return x, nil // whole session: streamed from the session's metas
	}
	if x.tree, x.path, x.leaf, err = br.Branch(info.ID, o.Leaf); err != nil {
		return nil, err
	}
	x.windows = journal.WindowOf(x.path)
	if o.Window > 0 {
		ws := journal.Windows(x.path)
		if o.Window > len(ws) {
			return nil, fmt.Errorf("window %d of session %q (leaf %q): the branch has %d window(s): %w",
				o.Window, info.ID, x.leaf, len(ws), store.ErrNotFound)
		}
		w := ws[o.Window-1]
		x.path, x.windows = x.path[w.Start:w.End], x.windows[w.Start:w.End]
	}
	return x, nil
}

// Name is a file name for the export: the session id, the leaf and window
// when chosen, and the format's extension (.jsonl, .md, .html, plus .zst).
func (x *Export) Name() string {
	var b strings.Builder
	b.WriteString(safeName(x.Info.ID))
	if x.Opts.Leaf != "" {
		b.WriteString("-" + safeName(x.Opts.Leaf))
	}
	if x.Opts.Window > 0 {
		b.WriteString("-w" + strconv.Itoa(x.Opts.Window))
	}
	b.WriteString("." + string(x.Opts.Format))
	if x.Opts.Zstd {
		b.WriteString(".zst")
	}
	return b.String()
}

// ContentType is the export's media type.
func (x *Export) ContentType() string {
	if x.Opts.Zstd {
		return "application/zstd"
	}
	switch x.Opts.Format {
	case Markdown:
		return "text/markdown; charset=utf-8"
	case HTML:
		return "text/html; charset=utf-8"
	}
	return "application/jsonl; charset=utf-8"
}

// WriteTo writes the export to w and returns the bytes written to w.
func (x *Export) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	var out io.Writer = cw
	var enc *zstd.Encoder
	if x.Opts.Zstd {
		var err error
		enc, err = newZstdWriter(cw)
		if err != nil {
			return 0, err
		}
		out = enc
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	err := x.write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if enc != nil {
		if cerr := enc.Close(); err == nil {
			err = cerr
		}
	}
	return cw.n, err
}

func (x *Export) write(w *bufio.Writer) error {
	switch x.Opts.Format {
	case Markdown, HTML:
		return x.render(w)
	}
	if err := writeLine(w, headerLine(x.src, x.Info)); err != nil {
		return err
	}
	if x.path == nil && x.tree == nil {
		metas, err := x.src.SessionMetas(x.Info.ID)
		if err != nil {
			return err
		}
		return writeRaws(w, x.src, metas)
	}
	for _, e := range x.path {
		m := x.tree.MetaOf(e.ID)
		if m == nil {
			return fmt.Errorf("entry %q of session %q has no stored record", e.ID, x.Info.ID)
		}
		raw, err := x.src.Raw(m.Seq)
		if err != nil {
			return err
		}
		if err := writeLine(w, raw); err != nil {
			return err
		}
	}
	return nil
}

// writeRaws writes the raw line of each meta, one read at a time.
func writeRaws(w io.Writer, src Source, metas []*store.Meta) error {
	for _, m := range metas {
		raw, err := src.Raw(m.Seq)
		if err != nil {
			return err
		}
		if err := writeLine(w, raw); err != nil {
			return err
		}
	}
	return nil
}

func writeLine(w io.Writer, line []byte) error {
	if _, err := w.Write(line); err != nil {
		return err
	}
	_, err := w.Write([]byte{'\n'})
	return err
}

// newZstdWriter is the encoder every export uses: one goroutine and a
// bounded window, so memory stays flat whatever the input size.
func newZstdWriter(w io.Writer) (*zstd.Encoder, error) {
	return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20), zstd.WithLowerEncoderMem(true))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// safeName keeps letters, digits, '.', '_' and '-' (as '_' otherwise), so
// an id can be part of a file name or a Content-Disposition header.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	out := strings.TrimLeft(string(b), ".")
	if out == "" {
		out = "session"
	}
	return out
}
