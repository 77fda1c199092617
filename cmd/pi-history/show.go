package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/search"
)

var showFlags struct {
	leaf, role, typ     string
	cursor              string
	window, context     int
	offset, limit       int
	raw, json, branches bool
}

var (
	sessionsJSON  bool
	sessionsMatch *string // --match, when given
	sessionsLimit int
)

func init() {
	register(&command{
		name:    "show",
		usage:   "[flags] SESSION[/ENTRY]",
		summary: "list a session's branch, or read one entry",
		help: `With SESSION: lists the entries of its current branch (or --leaf's branch,
or every entry with --all-branches), one line each, oldest first.
With SESSION/ENTRY: prints that entry's searchable text, with --context
neighbours on its branch; --raw prints the journal line exactly as written,
in 2,000-character pieces (--offset for the next piece). SESSION is an id
or a unique prefix of one.

Examples:
  pi-history show 01a2286a-1d6c-766a-a9a4-b20e40c3ce44
  pi-history show 01a2286a --window 2
  pi-history show 01a2286a-1d6c-766a-a9a4-b20e40c3ce44/987f98c7 --context 2`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.StringVar(&showFlags.leaf, "leaf", "", "the branch ending at this entry (default: the current leaf)")
			fs.IntVar(&showFlags.window, "window", 0, "only this context window")
			fs.StringVar(&showFlags.role, "role", "", "only these roles, comma-separated")
			fs.StringVar(&showFlags.typ, "type", "", "only these entry types, comma-separated")
			fs.BoolVar(&showFlags.branches, "all-branches", false, "every entry of the session in file order")
			fs.IntVar(&showFlags.limit, "limit", 1000, "entries to list (1 to 1000; --cursor goes on)")
			fs.StringVar(&showFlags.cursor, "cursor", "", "the next page of a list, as the last page said")
			fs.IntVar(&showFlags.context, "context", 0, "with ENTRY: neighbours to show on each side")
			fs.IntVar(&showFlags.offset, "offset", 0, "with ENTRY: character offset to start from")
			fs.BoolVar(&showFlags.raw, "raw", false, "with ENTRY: the original JSON line")
			fs.BoolVar(&showFlags.json, "json", false, "print JSON")
		},
		run: runShow,
	})
	register(&command{
		name:    "sessions",
		usage:   "[--match WORDS [--limit N]] [--json]",
		summary: "list stored sessions, newest activity first, or those whose words match, best first",
		help: `With --match, the sessions whose title, name, project or user messages
hold the words, best first, with the stretch that matched. WORDS uses
Bleve's query-string syntax: words (matched by their English stems),
"a phrase", +required, -excluded, field:word (title, name, text, cwd, id).
This is ranked word search over sessions; 'search' finds literal text in
every entry.

  pi-history sessions --match 'flaky checkout test'
  pi-history sessions --match '+deploy -staging' --limit 5`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.BoolVar(&sessionsJSON, "json", false, "print one JSON object per session")
			sessionsMatch = nil
			fs.Func("match", "only the sessions whose words match `WORDS`, best first", func(v string) error {
				sessionsMatch = &v
				return nil
			})
			fs.IntVar(&sessionsLimit, "limit", 0, "with --match: the most sessions to list (default 50, at most 1000)")
		},
		run: runSessions,
	})
}

func runShow(g *globals, args []string) error {
	if len(args) != 1 {
		return usagef("give SESSION or SESSION/ENTRY")
	}
	sid, eid, _ := strings.Cut(args[0], "/")
	b, err := g.backend(true)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx := context.Background()
	if sid, err = sessionArg(ctx, b, sid); err != nil {
		return err
	}
	if eid == "" {
		if showFlags.limit < 1 || showFlags.limit > search.MaxLimit {
			return usagef("--limit %d: list 1 to %d entries a page; --cursor goes on", showFlags.limit, search.MaxLimit)
		}
		resp, err := b.List(ctx, &search.ListRequest{Session: sid, Leaf: showFlags.leaf, Window: showFlags.window,
			Roles: splitList(showFlags.role), Types: splitList(showFlags.typ), AllBranches: showFlags.branches, Limit: showFlags.limit,
			Cursor: showFlags.cursor})
		if err != nil {
			return err
		}
		if showFlags.json {
			return json.NewEncoder(g.stdout).Encode(resp)
		}
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		for _, it := range resp.Items {
			label := ""
			if it.Label != "" {
				label = " [" + search.Clip(it.Label, 60) + "]" // a label may hold newlines and tabs
			}
			fmt.Fprintf(tw, "%s\tw%d\t%s\t%s%s\n", search.Clip(it.Entry, 80), it.Window, it.Timestamp, it.Preview, label)
		}
		tw.Flush()
		if resp.Cursor != "" {
			// The leaf pins the branch: the session's current leaf moves as
			// entries arrive, and a cursor of the old one would be refused.
			fmt.Fprintf(g.stdout, "(%d entries in all; the next page: pi-history %s)\n", resp.Total, nextShowPage(sid, resp))
		}
		if !showFlags.branches && showFlags.leaf == "" && resp.Cursor == "" {
			// The last page of the current branch: say whether the
			// session holds others, as a tree view would show them.
			if s, err := b.Session(ctx, sid); err == nil && len(s.Leaves) > 1 {
				fmt.Fprintf(g.stderr, "(the current branch of %d: --all-branches lists every entry, --leaf LEAF one branch; leaves: %s)\n",
					len(s.Leaves), strings.Join(clipAll(s.Leaves, 8), " "))
			}
		}
		return nil
	}
	resp, err := b.Read(ctx, &search.ReadRequest{Session: sid, Entry: eid, Context: showFlags.context, Offset: showFlags.offset, Raw: showFlags.raw})
	if err != nil {
		return err
	}
	if showFlags.json {
		return json.NewEncoder(g.stdout).Encode(resp)
	}
	for _, it := range resp.Before {
		fmt.Fprintf(g.stdout, "  %s  %s\n", it.Entry, it.Preview)
	}
	fmt.Fprintf(g.stdout, "▶ %s  %s  window %d  %s\n", resp.Item.Entry, resp.Item.Timestamp, resp.Item.Window, resp.Ref)
	fmt.Fprintln(g.stdout, resp.Text)
	if resp.NextOffset > 0 {
		fmt.Fprintf(g.stdout, "(continues: --offset %d of %d characters)\n", resp.NextOffset, resp.TotalChars)
	}
	for _, it := range resp.After {
		fmt.Fprintf(g.stdout, "  %s  %s\n", it.Entry, it.Preview)
	}
	return nil
}

// clipAll returns the first n of ids, with "…" for the rest.
func clipAll(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	return append(ids[:n:n], fmt.Sprintf("… (%d more)", len(ids)-n))
}

// sessionNameWidth is the most characters of a session's name the
// sessions table shows.
const sessionNameWidth = 48

// oneCell is s as one cell of a table: on one line, without tabs, at most
// n characters.
func oneCell(s string, n int) string {
	if s == "" {
		return "-"
	}
	return search.Clip(s, n)
}

func runSessions(g *globals, args []string) error {
	if len(args) > 0 {
		return usagef("sessions takes no arguments")
	}
	// A word search builds or catches up the session word index on disk.
	b, err := g.backend(sessionsMatch == nil)
	if err != nil {
		return err
	}
	defer b.Close()
	var ss []search.SessionSummary
	switch {
	case sessionsMatch != nil:
		if sessionsLimit == 0 {
			sessionsLimit = index.DefaultMatchLimit
		}
		ss, err = b.MatchSessions(context.Background(), *sessionsMatch, sessionsLimit)
	case sessionsLimit != 0:
		return usagef("--limit bounds a word search: give it with --match")
	default:
		ss, err = b.Sessions(context.Background())
	}
	if err != nil {
		return err
	}
	if sessionsJSON {
		enc := json.NewEncoder(g.stdout)
		for _, s := range ss {
			enc.Encode(s)
		}
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLAST ACTIVITY\tENTRIES\tWINDOWS\tTITLE\tPROJECT")
	if sessionsMatch != nil {
		return printMatches(g, ss)
	}
	for _, s := range ss {
		// A title is the session's name (whatever was given to
		// /name, a pasted paragraph too) or the start of its first
		// message: one line, cut, so that one title cannot push every
		// other row's project off the screen (--json has it whole).
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", oneCell(s.ID, 80), s.LastActivity, s.Entries, s.Windows,
			oneCell(s.Title, sessionNameWidth), oneCell(s.Cwd, 400))
	}
	return tw.Flush()
}

// printMatches prints a word search's sessions as the table does, each
// followed by an indented line with the stretch that matched.
func printMatches(g *globals, ss []search.SessionSummary) error {
	if len(ss) == 0 {
		fmt.Fprintln(g.stdout, "no session matches")
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLAST ACTIVITY\tENTRIES\tSCORE\tTITLE\tPROJECT")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%s\t%s\n", oneCell(s.ID, 80), s.LastActivity, s.Entries, s.Score,
			oneCell(s.Title, sessionNameWidth), oneCell(s.Cwd, 400))
		fmt.Fprintf(tw, "  %s: %s\n", s.MatchField, oneCell(s.Match, 240))
	}
	return tw.Flush()
}

// nextShowPage is the command that lists the page after resp: the same
// filters (a cursor is bound to them), the branch pinned by its leaf unless
// the list is of every branch, and the cursor.
func nextShowPage(sid string, resp *search.ListResponse) string {
	f := &showFlags
	args := []string{"show", sid}
	if f.branches {
		args = append(args, "--all-branches")
	} else {
		args = append(args, "--leaf", resp.Leaf)
	}
	if f.window > 0 {
		args = append(args, "--window", strconv.Itoa(f.window))
	}
	if f.role != "" {
		args = append(args, "--role", f.role)
	}
	if f.typ != "" {
		args = append(args, "--type", f.typ)
	}
	if f.limit != 1000 {
		args = append(args, "--limit", strconv.Itoa(f.limit))
	}
	args = append(args, "--cursor", resp.Cursor)
	for i, a := range args {
		args[i] = shellWord(a)
	}
	return strings.Join(args, " ")
}

// shellWord quotes a for a POSIX shell when it holds anything but plain
// characters.
func shellWord(a string) string {
	for _, c := range a {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.,/:=@+", c)) {
			return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return a
}
