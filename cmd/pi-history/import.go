package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/service"
)

var importJSON bool

func init() {
	register(&command{
		name:    "import",
		usage:   "[--json] [PATH...]",
		summary: "read journal files, session archives or directories into the store",
		help: `Reads Pi session journals (*.jsonl) and session archives (*.tar.zst or
*.tzst, as 'pi-history export --all -o FILE.tar.zst' writes them) from the
given files and directories, at any depth, or from Pi's sessions directory
when none are given, and one session compressed by 'export --zstd'
(*.jsonl.zst) when named. Archives are read as they are, nothing is
unpacked. Files already imported are resumed where they stopped: importing
the same files again adds nothing, and an archive (or a copy) of sessions
already stored adds only what is new. Unreadable lines are skipped and
reported with their file and line number; a file that could not be read at
all makes the import fail after its summary.

What the summary counts is on disk when it is printed. On the way, what
was read reaches the disk in flushes, one every 16 MB of stored records
(PI_HISTORY_FLUSH_KB sets it): an import that is killed loses what it read
since its last flush, and the next import reads those lines again.

On a terminal a progress line shows files, entries, MB/s and the time left.
While 'pi-history serve' runs, the server reads the files (give paths it
can read); the progress line and the summary are the same.

Examples:
  pi-history import
  pi-history import ~/old-sessions/ one-session.jsonl
  pi-history import laptop-2025.tar.zst            # an archive from another machine
  pi-history import ~/backups/                     # every journal and archive in it
  pi-history import --json | jq .entries`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.BoolVar(&importJSON, "json", false, "print the summary as one JSON object")
		},
		run: runImport,
	})
}

func runImport(g *globals, args []string) error {
	if len(args) == 0 {
		dirs, err := datadir.SessionsDirs(g.sessions)
		if err != nil {
			return err
		}
		args = dirs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	svc, remote, err := g.openOrRemote(ctx)
	if err != nil {
		return err
	}
	if remote != nil {
		// A running server owns the store: it reads the files (the same
		// paths, made absolute here) and answers with the same summary.
		abs := make([]string, len(args))
		for i, a := range args {
			if abs[i], err = filepath.Abs(a); err != nil {
				return err
			}
		}
		return importShowing(ctx, g, func(show func(service.ImportStatus)) (service.ImportSummary, error) {
			if show == nil {
				return remote.Import(ctx, abs)
			}
			return remote.ImportWithProgress(ctx, abs, show)
		})
	}
	defer svc.Close()
	return importShowing(ctx, g, func(show func(service.ImportStatus)) (service.ImportSummary, error) {
		if show == nil {
			return svc.Import(ctx, args, nil)
		}
		return svc.ImportWatched(ctx, args, show)
	})
}

// importLine draws an import's progress line on a terminal: the same
// whether this process reads the files or a running server does.
type importLine struct {
	g     *globals
	now   func() time.Time // time.Now; tests replace it
	start time.Time
	// when the indexing phase was first shown, and the mark then
	idxStart time.Time
	idxFrom  uint64
}

func newImportLine(g *globals) *importLine {
	return &importLine{g: g, now: time.Now, start: time.Now()}
}

func (l *importLine) show(st service.ImportStatus) {
	switch {
	case st.Compacting:
		fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files read and indexed; compacting the store and the index")
	case st.Indexing:
		l.indexing(st.Through, st.Target)
	default:
		l.files(st)
	}
}

// indexing shows the index catching up, with its rate and an ETA once it
// has been watched for a second.
func (l *importLine) indexing(through, target uint64) {
	now := l.now()
	if l.idxStart.IsZero() {
		l.idxStart, l.idxFrom = now, through
	}
	rate, eta := "", "?"
	if el := now.Sub(l.idxStart).Seconds(); el >= 1 && through > l.idxFrom {
		r := float64(through-l.idxFrom) / el
		rate = fmt.Sprintf("  %.0f entries/s", r)
		eta = (time.Duration(float64(target-min(through, target))/r) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files read; indexing %d of %d entries (%d%%)%s  ETA %s",
		through, target, pct(int64(through), int64(target)), rate, eta)
}

// files shows the files being read; the ETA is that of reading them, and
// the index's share says how far indexing lags behind.
func (l *importLine) files(st service.ImportStatus) {
	el := l.now().Sub(l.start).Seconds()
	b, total := st.Bytes, st.TotalBytes
	mbs := float64(b) / 1e6 / max(el, 1e-3)
	eta := "?"
	if b > 0 && total > b {
		eta = (time.Duration(float64(total-b)/float64(b)*el) * time.Second).Round(time.Second).String()
	} else if total <= b {
		eta = "0s"
	}
	indexed := ""
	if st.Target > 0 {
		indexed = fmt.Sprintf("  indexed %d%%", pct(int64(st.Through), int64(st.Target)))
	}
	fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files %d/%d  entries %d  %.1f MB/s  %d%%  files ETA %s%s",
		st.FilesDone, st.Files, st.Entries, mbs, pct(b, total), eta, indexed)
}

// isTerminal reports whether w is a terminal (progress lines go there), or
// a ttySafe writing to one.
var isTerminal = func(w io.Writer) bool {
	if _, ok := w.(*ttySafe); ok {
		return true
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printImport prints an import's summary. Files that could not be read at
// all (not a journal, unreadable, an archive cut short) make it fail after
// the summary, so that 'import backup.tar.zst && rm backup.tar.zst' keeps a
// backup that did not import; skipped lines alone do not.
func printImport(g *globals, sum service.ImportSummary) error {
	unread := 0
	for _, p := range sum.Problems {
		if p.Unread {
			unread++
		}
	}
	if importJSON {
		if err := json.NewEncoder(g.stdout).Encode(sum); err != nil {
			return err
		}
	} else {
		for _, p := range sum.Problems {
			fmt.Fprintf(g.stderr, "skipped %s\n", p)
		}
		for _, w := range sum.Waiting {
			fmt.Fprintf(g.stderr, "waiting %s: its last %d bytes are a line without its newline (being written, or cut short); it is read once the line ends\n", w.File, w.Bytes)
		}
		fmt.Fprintln(g.stdout, importSummaryLine(sum, unread))
	}
	if unread > 0 {
		what := "file (or archive member) was"
		if unread > 1 {
			what = "files (or archive members) were"
		}
		return fmt.Errorf("%d %s not read: see 'skipped' above; what could be read was imported", unread, what)
	}
	return nil
}

// importSummaryLine is an import's summary for people: the files read (and those
// not), the sessions they hold, the entries added and those already
// stored, the bytes, the lines skipped, the time.
func importSummaryLine(sum service.ImportSummary, unread int) string {
	files := plural(sum.Files-unread, "file")
	if unread > 0 {
		files += fmt.Sprintf(" (%d not read)", unread)
	}
	entries := fmt.Sprintf("%d new entries", sum.Entries)
	if sum.Entries == 1 {
		entries = "1 new entry"
	}
	return fmt.Sprintf("imported %s: %s, %s (%d already stored), %s, %s skipped, %.2fs",
		files, plural(sum.Sessions, "session"), entries, sum.Stored, size(sum.Bytes), plural(sum.Skipped, "line"), sum.Seconds)
}

func pct(a, b int64) int64 {
	if b <= 0 {
		return 100
	}
	return a * 100 / b
}

// importShowing runs an import and prints its summary. On a terminal, run
// is given the function that draws the progress line (whether this process
// reads the files or a server does); elsewhere it is given nil.
func importShowing(ctx context.Context, g *globals, run func(show func(service.ImportStatus)) (service.ImportSummary, error)) error {
	var show func(service.ImportStatus)
	if isTerminal(g.stderr) {
		show = newImportLine(g).show
	}
	sum, err := run(show)
	if show != nil {
		fmt.Fprintln(g.stderr) // end the progress line
	}
	if err != nil && ctx.Err() != nil {
		// Ctrl-C: say what that left, not "context canceled".
		return errors.New("interrupted: what was read so far is stored; run the same import again to read the rest (nothing stored is added twice)")
	}
	if err != nil {
		return err
	}
	return printImport(g, sum)
}
