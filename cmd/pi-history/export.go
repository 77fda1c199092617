package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

var exportFlags struct {
	format  string
	leaf    string
	window  int
	zstd    bool
	out     string
	force   bool
	all     bool
	project string
	since   string
	until   string
}

func init() {
	register(&command{
		name:    "export",
		usage:   "SESSION [--leaf ID] [--window N] [--format jsonl|md|html] [--zstd] [-o FILE] [--force]\n       pi-history export --all|--project CWD|--since TIME [--until TIME] -o FILE.tar.zst [--force]",
		summary: "write sessions out as Pi journals, Markdown or HTML, or many into a .tar.zst",
		help: `One session: SESSION is its id (or a unique prefix of it, or its journal
file). --format jsonl (the default) writes Pi's own journal, the original
lines byte for byte (each ended by \n, as Pi writes them, also where a
journal had \r\n): the whole session, or with --leaf the branch ending at
that entry (header, then its path from the root), which Pi opens as a
session. --format md writes a readable transcript and --format html one
self-contained page (no scripts); without --leaf they show the current
branch, then the entries of every other branch. --window N keeps one
context window of the branch (windows start at compactions). --zstd
compresses (.zst); it is implied by an -o name ending in .zst, as the
format is by one ending in .md or .html.

Many sessions: --all, --project DIR (sessions run in that directory) and
--since/--until TIME (an RFC 3339 time, a date such as 2026-01-31, or an
age such as 36h, 7d, 2w) select sessions; they are written with -o into a
zstd-compressed tar with one journal per session, laid out as Pi lays out
its sessions directory. 'pi-history import FILE.tar.zst' reads it back.

The output goes to stdout unless -o is given. A file is written under a
temporary name and renamed when complete, so a failed export (a full disk,
an interrupt) leaves nothing that looks finished; an existing file is
replaced only with --force. The store is only read.

While 'pi-history serve' runs, exports stream from its API with the same
output: one session from GET /v1/sessions/{id}/export, an archive from
GET /v1/export/archive (ages such as 7d count back from this command's
clock).

Examples:
  pi-history export 01a2286a --format html -o checkout.html
  pi-history export 01a2286a --leaf 9e0cdd09 > branch.jsonl
  pi-history export 01a2286a --window 2 --format md --zstd -o w2.md.zst
  pi-history export --project ~/src/shop --since 30d -o shop.tar.zst`,
		flags: func(fs *flag.FlagSet, g *globals) {
			f := &exportFlags
			fs.StringVar(&f.format, "format", "", "jsonl, md or html (default jsonl, or from the -o name)")
			fs.StringVar(&f.leaf, "leaf", "", "export the branch ending at this entry id")
			fs.IntVar(&f.window, "window", 0, "export only this context window (1-based) of the branch")
			fs.BoolVar(&f.zstd, "zstd", false, "compress with zstd")
			fs.StringVar(&f.out, "o", "", "output file (default stdout; required for archives)")
			fs.BoolVar(&f.force, "force", false, "replace an existing output file")
			fs.BoolVar(&f.all, "all", false, "archive every session")
			fs.StringVar(&f.project, "project", "", "archive the sessions whose working directory is `CWD`")
			fs.StringVar(&f.since, "since", "", "archive the sessions active since `TIME`")
			fs.StringVar(&f.until, "until", "", "archive the sessions started before `TIME`")
		},
		run: runExport,
	})
}

func runExport(g *globals, args []string) error {
	f := &exportFlags
	many := f.all || f.project != "" || f.since != "" || f.until != ""
	switch {
	case many && len(args) > 0:
		return usagef("give a SESSION or --all/--project/--since, not both")
	case !many && len(args) != 1:
		return usagef("give one SESSION (an id), or --all, --project CWD or --since TIME for an archive")
	}
	if many {
		return exportArchive(g)
	}
	if f.out == "" {
		if f.format == "" {
			f.format = "jsonl"
		}
	} else {
		lower := strings.ToLower(f.out)
		if strings.HasSuffix(lower, ".tar.zst") || strings.HasSuffix(lower, ".tzst") {
			// One session is a journal, not a tar: under this name 'import'
			// would take it for an archive and fail to read it.
			return usagef("-o %s: a .tar.zst is an archive of many sessions (--all, --project, --since); one session is written as .jsonl, .jsonl.zst, .md or .html", f.out)
		}
		if strings.HasSuffix(lower, ".zst") {
			f.zstd = true
			lower = strings.TrimSuffix(lower, ".zst")
		}
		if f.format == "" {
			switch filepath.Ext(lower) {
			case ".md", ".markdown":
				f.format = "md"
			case ".html", ".htm":
				f.format = "html"
			default:
				f.format = "jsonl"
			}
		}
	}
	format, err := export.ParseFormat(f.format)
	if err != nil {
		return usagef("--format %q: want jsonl, md or html", f.format)
	}
	if f.window < 0 {
		return usagef("--window %d: windows are numbered from 1", f.window)
	}
	if f.out == "" && f.zstd && isTerminal(g.stdout) {
		return usagef("refusing to write compressed data to a terminal; use -o FILE or redirect stdout")
	}
	svc, c, err := g.existingOrRemote(context.Background(), true)
	if err != nil {
		return err
	}
	if c != nil {
		// While 'serve' owns the data directory, its API streams the export.
		return exportRemote(g, c, args[0], format)
	}
	defer svc.Close()
	sid, err := resolveSession(svc.Store, args[0])
	if err != nil {
		return err
	}
	x, err := export.New(svc.Store, search.New(svc.Store, nil), sid, export.Options{Format: format, Leaf: f.leaf, Window: f.window, Zstd: f.zstd})
	if err != nil {
		return err
	}
	if f.out == "" {
		_, err := x.WriteTo(g.stdout)
		return err
	}
	// Ctrl-C stops the writing, and WriteFile removes the partial file (it
	// used to stay behind, the process killed mid-write). A second Ctrl-C
	// (a write that does not return) removes it and ends the process.
	var partial partialFile
	ctx, stop := interruptible(partial.remove)
	defer stop()
	var n int64
	if err := partial.writeFile(f.out, f.force, func(w io.Writer) error {
		var err error
		n, err = x.WriteTo(stopWriter{ctx, w})
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "wrote %s (%s, %s)\n", f.out, format, size(n))
	return nil
}

func exportArchive(g *globals) error {
	f := &exportFlags
	if f.out == "" {
		return usagef("an archive needs -o FILE.tar.zst")
	}
	if f.leaf != "" || f.window != 0 || (f.format != "" && f.format != "jsonl") {
		return usagef("--leaf, --window and --format apply to one SESSION; an archive holds whole sessions as jsonl")
	}
	if !strings.HasSuffix(strings.ToLower(f.out), ".tar.zst") && !strings.HasSuffix(strings.ToLower(f.out), ".tzst") {
		return usagef("-o %s: an archive is a zstd-compressed tar; name it *.tar.zst so 'pi-history import' recognises it", f.out)
	}
	sel := export.Selection{All: f.all, Project: f.project}
	now := time.Now()
	var err error
	if f.project != "" {
		if sel.Project, err = filepath.Abs(f.project); err != nil {
			return err
		}
	}
	if f.since != "" {
		if sel.Since, err = export.ParseTime(f.since, now); err != nil {
			return usagef("--since: %v", err)
		}
	}
	if f.until != "" {
		if sel.Until, err = export.ParseTime(f.until, now); err != nil {
			return usagef("--until: %v", err)
		}
	}
	var partial partialFile
	ctx, stop := interruptible(partial.remove)
	defer stop()
	svc, c, err := g.existingOrRemote(ctx, true)
	if err != nil {
		return err
	}
	if c != nil {
		return exportArchiveRemote(ctx, g, c, sel, &partial)
	}
	defer svc.Close()
	sessions, err := export.Select(svc.Store, sel)
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		return errNoArchiveMatch
	}
	start := time.Now()
	tty := isTerminal(g.stderr)
	var stats export.ArchiveStats
	err = partial.writeFile(f.out, f.force, func(w io.Writer) error {
		var err error
		stats, err = export.WriteArchive(ctx, w, svc.Store, sessions, func(s export.ArchiveStats) {
			if tty {
				fmt.Fprintf(g.stderr, "\r\033[Kexport: sessions %d/%d  entries %d  %.1f MB", s.Sessions, len(sessions), s.Entries, float64(s.Bytes)/1e6)
			}
		})
		return err
	})
	if tty {
		fmt.Fprintln(g.stderr)
	}
	if err != nil {
		return err
	}
	reportArchive(g, stats, start)
	return nil
}

// errNoArchiveMatch is an archive whose selection no stored session meets.
var errNoArchiveMatch = errors.New("no stored session matches; nothing written")

func reportArchive(g *globals, stats export.ArchiveStats, start time.Time) {
	el := time.Since(start).Seconds()
	fmt.Fprintf(g.stdout, "wrote %s: %d sessions, %d entries, %s of journals in %s, %.1f MB/s\n",
		exportFlags.out, stats.Sessions, stats.Entries, size(stats.Bytes), size(stats.Written), float64(stats.Bytes)/1e6/max(el, 1e-3))
}

// exportArchiveRemote writes the archive the running server streams
// (GET /v1/export/archive): the same file, messages and exit codes as when
// the store is opened here. Times are sent as absolute RFC 3339 times, so
// an age such as 7d counts back from this command's clock.
func exportArchiveRemote(ctx context.Context, g *globals, c *client.Client, sel export.Selection, partial *partialFile) error {
	f := &exportFlags
	g.log.Debug("exporting an archive through the running server", "url", c.BaseURL())
	start := time.Now()
	tty := isTerminal(g.stderr)
	var stats export.ArchiveStats
	err := partial.writeFile(f.out, f.force, func(w io.Writer) error {
		var err error
		stats, err = c.ExportArchive(ctx, client.ArchiveOptions{All: sel.All, Project: sel.Project, Since: sel.Since, Until: sel.Until}, w,
			func(n int64) {
				if tty {
					fmt.Fprintf(g.stderr, "\r\033[Kexport: %.1f MB received from the server", float64(n)/1e6)
				}
			})
		return err
	})
	if tty {
		fmt.Fprintln(g.stderr)
	}
	if pe := (*client.Error)(nil); errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		return errNoArchiveMatch
	}
	if err != nil {
		return err
	}
	reportArchive(g, stats, start)
	return nil
}

// resolveSession accepts a session id, a unique prefix of one, or the path
// of a journal file the store has read.
func resolveSession(st *store.Store, arg string) (string, error) {
	if si, err := st.Session(arg); err == nil {
		return si.ID, nil
	}
	if abs, err := filepath.Abs(arg); err == nil {
		if si, err := st.SessionByFile(abs); err == nil {
			return si.ID, nil
		}
	}
	all, err := st.Sessions()
	if err != nil {
		return "", err
	}
	ids := make([]string, len(all))
	for i, si := range all {
		ids[i] = si.ID
	}
	return pickPrefix(arg, ids)
}

// pickPrefix returns the one id of ids that starts with arg.
func pickPrefix(arg string, ids []string) (string, error) {
	var found []string
	for _, id := range ids {
		if strings.HasPrefix(id, arg) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no stored session %q (give its id, a unique prefix, or its journal file): %w", arg, store.ErrNotFound)
	case 1:
		return found[0], nil
	}
	n := len(found)
	if n > 5 {
		found = append(found[:5], "…")
	}
	return "", fmt.Errorf("%q matches %d sessions (%s); give more of the id", arg, n, strings.Join(found, ", "))
}

// exportRemote streams one session's export from the server that owns the
// data directory: the same bytes, messages and exit codes as a local export.
func exportRemote(g *globals, c *client.Client, arg string, format export.Format) error {
	f := &exportFlags
	var partial partialFile
	ctx, stop := interruptible(partial.remove)
	defer stop()
	sid, err := resolveRemoteSession(ctx, c, arg)
	if err != nil {
		return err
	}
	xs, err := c.Export(ctx, sid, client.ExportOptions{Format: string(format), Leaf: f.leaf, Window: f.window, Zstd: f.zstd})
	if err != nil {
		return client.Refusal(err) // printed as the same refusal made here would be
	}
	defer xs.Close()
	g.log.Debug("exporting through the running server", "url", c.BaseURL(), "session", sid, "file", xs.FileName)
	copyAll := func(w io.Writer) (int64, error) {
		n, err := io.Copy(w, xs)
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("the server's export stopped after %d bytes (see its log): %w", n, err)
		}
		return n, err
	}
	if f.out == "" {
		_, err := copyAll(g.stdout)
		return err
	}
	var n int64
	if err := partial.writeFile(f.out, f.force, func(w io.Writer) error {
		var err error
		n, err = copyAll(w)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "wrote %s (%s, %s)\n", f.out, format, size(n))
	return nil
}

// resolveRemoteSession is resolveSession through the API.
func resolveRemoteSession(ctx context.Context, c *client.Client, arg string) (string, error) {
	d, err := c.Session(ctx, arg, client.SessionOptions{NoTree: true})
	if err == nil {
		return d.Summary.ID, nil
	}
	if pe := (*client.Error)(nil); !errors.As(err, &pe) || pe.Status != 404 {
		return "", err
	}
	all, err := c.Sessions(ctx)
	if err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(arg)
	ids := make([]string, len(all))
	for i, si := range all {
		if si.File != "" && si.File == abs {
			return si.ID, nil
		}
		ids[i] = si.ID
	}
	return pickPrefix(arg, ids)
}

// interruptible returns a context that ends at the first Ctrl-C, and its
// stop function. A second Ctrl-C before stop runs cleanup and ends the
// process with status 130, as a shell's interrupted command does. The
// handler stays installed throughout, so no Ctrl-C between the two falls to
// Go's default (an exit without cleanup).
func interruptible(cleanup func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		cancel()
		select {
		case <-sig:
			cleanup()
			exitProcess(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}

// partialFile is the file an export is writing, for a second Ctrl-C to
// remove (export.WriteFile removes it itself when the write returns).
type partialFile struct{ name atomic.Pointer[string] }

// writeFile is export.WriteFile, noting the partial file it writes.
func (p *partialFile) writeFile(path string, force bool, write func(w io.Writer) error) error {
	return export.WriteFile(path, force, func(w io.Writer) error {
		p.track(w)
		return write(w)
	})
}

// track notes w's name when it is a file.
func (p *partialFile) track(w io.Writer) {
	if f, ok := w.(*os.File); ok {
		name := f.Name()
		p.name.Store(&name)
	}
}

func (p *partialFile) remove() {
	if n := p.name.Load(); n != nil {
		os.Remove(*n)
	}
}

// exitProcess ends the process (a test replaces it).
var exitProcess = os.Exit

// stopWriter writes to w until ctx ends, then fails every write with the
// context's error.
type stopWriter struct {
	ctx context.Context
	w   io.Writer
}

func (s stopWriter) Write(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("interrupted: %w", err)
	}
	return s.w.Write(p)
}
