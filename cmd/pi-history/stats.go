package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/pi-history/pi-history/service"
)

var statsJSON bool

func init() {
	register(&command{
		name:    "stats",
		usage:   "[--json]",
		summary: "count sessions, entries and bytes; show index health",
		help: `Prints what the store holds and whether the index has caught up with it
(indexed-through vs the last stored entry).

Example:
  pi-history stats --json`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.BoolVar(&statsJSON, "json", false, "print one JSON object")
		},
		run: func(g *globals, args []string) error {
			if len(args) > 0 {
				return usagef("stats takes no arguments")
			}
			svc, remote, err := g.existingOrRemote(context.Background(), true)
			if err != nil {
				return err
			}
			var st service.Stats
			if remote != nil {
				st, err = remote.Stats(context.Background())
			} else {
				defer svc.Close()
				st, err = svc.Stats()
			}
			if err != nil {
				return err
			}
			if statsJSON {
				return json.NewEncoder(g.stdout).Encode(st)
			}
			printStats(g.stdout, st)
			return nil
		},
	})
}

// printStats writes st for a person to read.
func printStats(w io.Writer, st service.Stats) {
	health := fmt.Sprintf("up to date (through seq %d of %d; %s)", st.IndexedThrough, st.LastSeq, st.IndexFormat)
	if st.IndexLag > 0 {
		health = fmt.Sprintf("%d entries behind (catching up; through seq %d of %d)", st.IndexLag, st.IndexedThrough, st.LastSeq)
	}
	fmt.Fprintf(w, "data:        %s\nsessions:    %d\nentries:     %d (%d searchable)\njournal:     %s in %s (%d lines skipped)\nstore:       %s\nindex:       %s, %s\n",
		st.DataDir, st.Sessions, st.Entries, st.Searchable, size(st.Bytes), plural(st.Files, "file"), st.SkippedLines,
		size(st.StoreBytes), size(st.IndexBytes), health)
	if st.SkippedPaths != nil {
		// Only a server's live watcher knows what it leaves out.
		fmt.Fprintf(w, "watcher:     %s left out (not journals, unreadable, links leading outside, lines skipped)", plural(*st.SkippedPaths, "path"))
		if *st.SkippedPaths > 0 {
			fmt.Fprint(w, "; GET /v1/ingest/status lists them with the reasons")
		}
		fmt.Fprintln(w)
	}
}
