package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/rollover"
)

var ledgerFlags struct {
	kind, session string
	limit         int
	json          bool
}

// ledgerKinds are the row kinds the ledger holds.
var ledgerKinds = []string{rollover.RowGate, rollover.RowRollover, rollover.RowRolloverCancelled, rollover.RowRolloverFailed,
	rollover.RowRolloverDeclined, rollover.RowMaintenance, rollover.RowNotes, rollover.RowWindowCache}

func init() {
	register(&command{
		name:    "ledger",
		usage:   "[--kind KIND] [--session ID] [--limit N] [--json]",
		summary: "show the rollover ledger: gate verdicts, rollovers, notebook writes",
		help: `The ledger (<data>/` + rollover.LedgerFile + `) records, one row per event,
what the context-window machinery did: gate verdicts, rollovers that
reached a branch or were cancelled, declined or failed, fallback stages,
notebook writes and reviews, provider cache figures per window. Rows hold
counts, ids and categories only, never text: use them to find the
sessions worth reading, then 'pi-history show'.

Prints a table, oldest row first: time (local), kind, session, window and
the row's other fields. --json prints the rows as JSON lines, as the file
holds them. While 'pi-history serve' runs, the rows come from its API;
otherwise the file is read directly (nothing is written).

Kinds: ` + strings.Join(ledgerKinds[:4], ", ") + `,
` + strings.Join(ledgerKinds[4:], ", ") + `.

Examples:
  pi-history ledger --limit 20
  pi-history ledger --kind rollover --session 01a2286a-1d6c-766a-a9a4-b20e40c3ce44
  pi-history ledger --kind gate --json | jq -c 'select(.ok == false) | {session, blocker}'`,
		flags: func(fs *flag.FlagSet, g *globals) {
			f := &ledgerFlags
			fs.StringVar(&f.kind, "kind", "", "only rows of this `KIND`")
			fs.StringVar(&f.session, "session", "", "only rows of this session `ID`")
			fs.IntVar(&f.limit, "limit", 0, "only the newest `N` rows (0: all)")
			fs.BoolVar(&f.json, "json", false, "print the rows as JSON lines")
		},
		run: runLedger,
	})
}

func runLedger(g *globals, args []string) error {
	f := &ledgerFlags
	if len(args) > 0 {
		return usagef("ledger takes no arguments (filter with --kind and --session)")
	}
	if f.limit < 0 {
		return usagef("--limit %d: give a number of rows, or 0 for all", f.limit)
	}
	if f.kind != "" && !slices.Contains(ledgerKinds, f.kind) {
		return usagef("--kind %q: want one of %s", f.kind, strings.Join(ledgerKinds, ", "))
	}
	filter := rollover.LedgerFilter{Kind: f.kind, Session: f.session, Limit: f.limit}
	dir, err := g.dataDir()
	if err != nil {
		return err
	}
	var resp *client.LedgerResponse
	disabled := false
	if c, _, derr := client.Discover(dir); derr == nil && serverAnswers(c) {
		g.log.Debug("reading the ledger through the running server", "url", c.BaseURL())
		if resp, err = c.Ledger(context.Background(), filter); err != nil {
			return err
		}
	} else {
		l := rollover.OpenLedger(dir)
		rows, skipped, err := l.Read(filter)
		if err != nil {
			return err
		}
		resp = &client.LedgerResponse{Rows: rows, Skipped: skipped, Path: l.Path()}
		disabled = !l.Enabled()
	}
	if resp.Skipped > 0 {
		fmt.Fprintf(g.stderr, "ledger: %d unreadable line(s) in %s skipped\n", resp.Skipped, resp.Path)
	}
	if f.json {
		enc := json.NewEncoder(g.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range resp.Rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(resp.Rows) == 0 {
		msg := fmt.Sprintf("no ledger rows match (%s)", resp.Path)
		if disabled {
			msg += "; the ledger is off while " + rollover.LedgerDisabledEnv + "=1"
		}
		fmt.Fprintln(g.stderr, msg)
		return nil
	}
	return printLedger(g.stdout, resp.Rows)
}

// serverAnswers reports whether the recorded server is alive.
func serverAnswers(c *client.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Health(ctx) == nil
}

// printLedger writes rows as a table.
func printLedger(w io.Writer, rows []rollover.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tSESSION\tWINDOW\tDETAILS")
	for _, r := range rows {
		ts := r.Time
		if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
			ts = t.UTC().Format("2006-01-02T15:04:05Z") // UTC, as every other command prints times
		}
		win := "-"
		if r.Window > 0 {
			win = fmt.Sprint(r.Window)
		}
		sess := r.Session
		if sess == "" {
			sess = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ts, r.Kind, sess, win, rowDetails(r))
	}
	return tw.Flush()
}

// rowDetails renders a row's fields other than time, kind, session and
// window as name=value, in the order the file holds them.
func rowDetails(r rollover.Row) string {
	b, err := json.Marshal(r)
	if err != nil {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var parts []string
	if _, err := dec.Token(); err != nil { // {
		return ""
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			break
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		switch k := kt.(string); k {
		case "ts", "kind", "session", "window":
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return strings.Join(parts, " ")
}
