package main

import (
	"context"
	"encoding/json"
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
when none are given. Archives are read as they are, nothing is unpacked.
Files already imported are resumed where they stopped: importing the same
files again adds nothing, and an archive of sessions already stored adds
only what is new. Unreadable lines are skipped and reported with their file
and line number.

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
	svc, remote, err := g.openOrRemote(true)
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
		return importShowing(g, func(show func(service.ImportStatus)) (service.ImportSummary, error) {
			if show == nil {
				return remote.Import(ctx, abs)
			}
			return remote.ImportWithProgress(ctx, abs, show)
		})
	}
	defer svc.Close()
	return importShowing(g, func(show func(service.ImportStatus)) (service.ImportSummary, error) {
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
	start time.Time
}

func newImportLine(g *globals) *importLine { return &importLine{g: g, start: time.Now()} }

func (l *importLine) show(st service.ImportStatus) {
	switch {
	case st.Compacting:
		fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files read and indexed; compacting the store and the index")
	case st.Indexing:
		fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files read; indexing %d of %d entries (%d%%)", st.Through, st.Target, pct(int64(st.Through), int64(st.Target)))
	default:
		l.files(st.FilesDone, st.Files, st.Bytes, st.TotalBytes, st.Entries)
	}
}

func (l *importLine) files(done, files int, b, total int64, entries int) {
	el := time.Since(l.start).Seconds()
	mbs := float64(b) / 1e6 / max(el, 1e-3)
	eta := "?"
	if b > 0 && total > b {
		eta = (time.Duration(float64(total-b)/float64(b)*el) * time.Second).Round(time.Second).String()
	} else if total <= b {
		eta = "0s"
	}
	fmt.Fprintf(l.g.stderr, "\r\033[Kimport: files %d/%d  entries %d  %.1f MB/s  %d%%  ETA %s",
		done, files, entries, mbs, pct(b, total), eta)
}

// isTerminal reports whether w is a terminal (progress lines go there).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func printImport(g *globals, sum service.ImportSummary) error {
	if importJSON {
		enc := json.NewEncoder(g.stdout)
		return enc.Encode(sum)
	}
	for _, p := range sum.Problems {
		fmt.Fprintf(g.stderr, "skipped %s\n", p)
	}
	fmt.Fprintf(g.stdout, "imported %d files: %d sessions, %d new entries (%d already stored), %.1f MB, %d lines skipped, %.2fs\n",
		sum.Files, sum.Sessions, sum.Entries, sum.Dups, float64(sum.Bytes)/1e6, sum.Skipped, sum.Seconds)
	return nil
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
func importShowing(g *globals, run func(show func(service.ImportStatus)) (service.ImportSummary, error)) error {
	var show func(service.ImportStatus)
	if isTerminal(g.stderr) {
		show = newImportLine(g).show
	}
	sum, err := run(show)
	if show != nil {
		fmt.Fprintln(g.stderr) // end the progress line
	}
	if err != nil {
		return err
	}
	return printImport(g, sum)
}
