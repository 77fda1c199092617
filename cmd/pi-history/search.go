package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/internal/procmem"
	"github.com/pi-history/pi-history/search"
)

type searchFlags struct {
	scope, session, leaf, role, typ, since, until string
	window, limit                                 int
	newest, all, json, count                      bool
	ignoreCase, regex                             bool
}

var sf searchFlags

func init() {
	register(&command{
		name:    "search",
		usage:   "[flags] NEEDLE",
		summary: "find literal text in stored sessions (like grep -F), or with -i / --regex ignoring case or by regex",
		help: `Finds entries whose searchable text contains NEEDLE exactly: case-sensitive,
no normalisation, spaces and any Unicode allowed. With -i (--ignore-case)
letters match in either case (Unicode simple case folding, as Go's
strings.EqualFold: é matches É, k matches the Kelvin sign; no expansions
such as ß to SS). With --regex NEEDLE is a regular expression in RE2 syntax
(Go's regexp: no backreferences or lookaround), matched against each
entry's text on its own; with both, the expression ignores case. Searchable text is user and
assistant text, tool calls (name and string arguments), tool results (except
the history tool's), user shell commands (but those run with !!, which Pi
keeps out of the model's context), custom messages, summaries, notebooks
and the text a context edit (Pi 1.6) gives the model in place of an entry;
never the system prompt. Exit status, as with grep: 0 when something matched, 1 when
nothing did, 2 on an error (a bad flag, an unknown session, a window the
branch does not have). Printed to a terminal, control characters from the
sessions (a tool's colour codes, say) show as visible stand-ins (ESC as ␛);
to a pipe they pass as stored.

Matches are coloured bold red on a terminal (--color auto|always|never;
NO_COLOR set to anything, or TERM=dumb, turns auto off). Without colour a
match is set off by brackets its snippet does not hold: «match», or ⟦match⟧
when the text has « or ».

Scopes:
  all      every session (default without --session)
  branch   the current branch of --session (or the branch ending at --leaf);
           the default with --session (a search that finds nothing there
           says how many hits the session's other branches hold)
  session  every branch of --session; hits say which leaves reach them
  lineage  --session with the sessions it was forked from or spawned by (up
           the chain) and those forked from it or spawned by it (at any
           depth, from agent lineage records); not its siblings

Examples:
  pi-history search ErrCartEmpty
  pi-history search --session 01a2286a-... --scope session 'keep the public API'
  pi-history search --json --all -- --force     (a needle starting with -)
  pi-history search --role user --since 2026-11-01 'deploy'
  pi-history search --color always ErrCartEmpty | less -R
  pi-history search -i 'errcartempty'
  pi-history search --regex 'func \w+Handler\('`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.BoolVar(&sf.ignoreCase, "ignore-case", false, "match letters of either case (Unicode simple folding)")
			fs.BoolVar(&sf.ignoreCase, "i", false, "short for --ignore-case")
			fs.BoolVar(&sf.regex, "regex", false, "NEEDLE is a regular expression (RE2 syntax)")
			fs.StringVar(&sf.scope, "scope", "", "branch, session, lineage or all (default: all, or branch with --session)")
			fs.StringVar(&sf.session, "session", "", "session id (or a unique prefix of it) for branch, session and lineage scopes")
			fs.StringVar(&sf.leaf, "leaf", "", "branch scope: the leaf entry id (default: the current leaf)")
			fs.IntVar(&sf.window, "window", 0, "only this context window (1 = before the first compaction)")
			fs.StringVar(&sf.role, "role", "", "only these message roles, comma-separated (user, assistant, toolResult, bashExecution, custom)")
			fs.StringVar(&sf.typ, "type", "", "only these entry types, comma-separated (message, compaction, branch_summary, custom_message, custom)")
			fs.StringVar(&sf.since, "since", "", "only entries at or after this time (RFC 3339, YYYY-MM-DD, or an age: 36h, 7d, 2w)")
			fs.StringVar(&sf.until, "until", "", "only entries before this time (RFC 3339, YYYY-MM-DD, or an age)")
			fs.BoolVar(&sf.newest, "newest-first", false, "newest hits first (default: oldest first)")
			fs.IntVar(&sf.limit, "limit", 20, fmt.Sprintf("hits to print, 1 to %d (--all for every hit)", search.MaxLimit))
			fs.BoolVar(&sf.all, "all", false, "print every hit")
			fs.BoolVar(&sf.count, "count", false, "also print the exact number of hits")
			fs.BoolVar(&sf.json, "json", false, "print one JSON object per hit (what --count and a cut-off list would add goes to stderr)")
		},
		run:       runSearch,
		errStatus: 2,
	})
}

func parseTimeFlag(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	// As export reads times: RFC 3339, a date, or an age counted back from
	// now (36h, 7d, 2w).
	t, err := export.ParseTime(v, time.Now())
	if err != nil {
		return time.Time{}, usagef("--%s %q: want RFC 3339 (2026-11-29T10:00:00Z), a date (2026-11-29) or an age (36h, 7d, 2w)", name, v)
	}
	return t, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runSearch(g *globals, args []string) error {
	if len(args) != 1 {
		return usagef("give exactly one NEEDLE (quote it if it has spaces; put -- before one that starts with -)")
	}
	since, err := parseTimeFlag("since", sf.since)
	if err != nil {
		return err
	}
	until, err := parseTimeFlag("until", sf.until)
	if err != nil {
		return err
	}
	req := &search.Request{Needle: args[0], IgnoreCase: sf.ignoreCase, Regex: sf.regex, Scope: search.Scope(sf.scope), Session: sf.session, Leaf: sf.leaf, Window: sf.window,
		Roles: splitList(sf.role), Types: splitList(sf.typ), Since: since, Until: until, NewestFirst: sf.newest,
		Limit: min(sf.limit, search.MaxLimit), All: sf.all, Count: sf.count}
	if !utf8.ValidString(args[0]) {
		// Checked here too: sent to a server as JSON, it would arrive with
		// U+FFFD in place of the bad bytes and match that.
		return usagef("the needle is not valid UTF-8; stored text is decoded as UTF-8, so give it in UTF-8")
	}
	if sf.regex {
		// Refused here as the engine would refuse it, before a data
		// directory is opened or a server asked.
		expr := args[0]
		if sf.ignoreCase {
			expr = "(?i)" + expr
		}
		if _, err := regexp.Compile(expr); err != nil {
			return usagef("--regex %q does not compile: %v (RE2 syntax: escape . * + ? ( ) [ ] { } | ^ $ \\ with \\ to match them literally)", args[0], strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	if (sf.limit <= 0 || sf.limit > search.MaxLimit) && !sf.all {
		return usagef("--limit %d is out of range 1..%d; use --all for every hit", sf.limit, search.MaxLimit)
	}
	paint, err := g.painter()
	if err != nil {
		return err
	}
	// Before the store and index open: their opening allocates most of
	// what a first page's run does.
	procmem.TuneOneShot()
	b, err := g.backend(true)
	if err != nil {
		return err
	}
	defer b.Close()
	if req.Session, err = sessionArg(context.Background(), b, req.Session); err != nil {
		return err
	}
	if sf.all {
		// The current branch is pinned to its leaf of now: each page
		// would otherwise work it out again, and a leaf moved to another
		// branch midway (Pi's /tree) would mix two branches' hits.
		if (req.Scope == search.ScopeBranch || req.Scope == "") && req.Leaf == "" && req.Session != "" {
			s, err := b.Session(context.Background(), req.Session)
			if err != nil {
				return err
			}
			req.Leaf = s.Leaf
		}
	}
	if g.out != nil {
		g.out.buffer() // flushed after each page
	}
	hits, total, err := printPages(g, b, req, paint)
	if err != nil {
		return err
	}
	if sf.count && total != nil {
		if sf.json {
			fmt.Fprintf(g.stderr, "%d hits in all\n", *total)
		} else {
			fmt.Fprintf(g.stdout, "%d hits in all\n", *total)
		}
	}
	if hits == 0 {
		branchHint(g, b, req)
		return exitError{1}
	}
	return nil
}

// printPages searches req and prints its hits, with All every hit a page
// at a time (one answer holding every hit of a common needle would sit
// whole in memory, here or in the server, and nothing would print until
// the last was found; cursors stay right while entries arrive): pages of
// MaxLimit hits from a server, larger from a data directory opened here.
// Each page prints while the next is searched for: on two cores the
// printing of a common needle's every hit hides behind the search. It
// returns how many hits it printed, and the total when a page counted
// them.
func printPages(g *globals, b backend, req *search.Request, paint painter) (hits int, total *int, err error) {
	pages := make(chan *search.Response, 1)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for resp := range pages {
			printHits(paint, resp, sf.json)
			if g.out != nil {
				g.out.flush()
			}
			if sf.json && resp.Cursor != "" {
				// stdout holds hits only; a script still learns the list is cut.
				fmt.Fprintf(g.stderr, "pi-history search: more hits than the %d printed: use --limit or --all\n", len(resp.Hits))
			}
		}
	}()
	defer func() { close(pages); <-printed }()
	if l, ok := b.(*localBackend); ok && req.All {
		// Opened here: pages of many hits, each with the snippets
		// MaxLimit pages would have had (see search.Engine.ListAll).
		err := l.ListAll(context.Background(), req, func(resp *search.Response) error {
			if resp.Total != nil {
				total = resp.Total
			}
			hits += len(resp.Hits)
			page := *resp // the engine reads on from resp's cursor
			page.Cursor = ""
			pages <- &page
			return nil
		})
		return hits, total, err
	}
	all := req.All
	if all {
		req.All, req.Limit = false, search.MaxLimit
	}
	for {
		resp, err := b.Search(context.Background(), req)
		if err != nil {
			return hits, total, err
		}
		if resp.Total != nil {
			total = resp.Total
		}
		next := ""
		if all {
			next, resp.Cursor = resp.Cursor, ""
		}
		hits += len(resp.Hits)
		pages <- resp
		if next == "" {
			return hits, total, nil
		}
		req.Cursor, req.Count = next, false
	}
}

// branchHint tells, after a search of a session's branch that found
// nothing, how many hits its other branches hold: without --scope a search
// with --session covers only the current branch, which is easy to forget.
func branchHint(g *globals, b backend, req *search.Request) {
	if req.Session == "" || (req.Scope != "" && req.Scope != search.ScopeBranch) || sf.scope != "" {
		return
	}
	all := *req
	all.Scope, all.Leaf, all.Cursor, all.Limit, all.Count, all.All = search.ScopeSession, "", "", 1, true, false
	resp, err := b.Search(context.Background(), &all)
	if err != nil || resp.Total == nil || *resp.Total == 0 {
		return
	}
	fmt.Fprintf(g.stderr, "pi-history search: nothing on the current branch of %s, but %s on its other branches: add --scope session\n",
		req.Session, plural(*resp.Total, "hit"))
}

// printHits writes a page of hits: one JSON object a hit, or for people a
// line naming the hit and its snippets, matches coloured (or set off by
// brackets the snippet does not hold).
func printHits(p painter, resp *search.Response, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(p.text)
		for _, h := range resp.Hits {
			enc.Encode(h)
		}
		return
	}
	// A page's hits come from a few sessions: each one's description is
	// worked out once. Each line is put together in buf and written at
	// once: --all prints hundreds of thousands of them.
	abouts := map[[2]string]string{}
	var buf []byte
	for _, h := range resp.Hits {
		role := h.Type
		if h.Role != "" {
			role = h.Role
		}
		buf = append(append(append(buf[:0], h.Session...), '/'), h.Entry...)
		p.paintBytes(sgrPath, buf)
		p.plain("  ")
		buf = append(append(buf[:0], h.Timestamp...), "  window "...)
		buf = append(append(strconv.AppendInt(buf, int64(h.Window), 10), "  "...), role...)
		if !h.OnCurrentBranch {
			buf = append(buf, " (off the current branch)"...)
		}
		p.paintBytes(sgrDim, buf)
		about, ok := abouts[[2]string{h.Title, h.Cwd}]
		if !ok {
			about = hitAbout(h)
			abouts[[2]string{h.Title, h.Cwd}] = about
		}
		buf = buf[:0]
		if about != "" {
			buf = append(append(buf, "  "...), about...)
		}
		if h.URL != "" {
			// A server answered: the entry's page in its web UI, a
			// hyperlink on a colour terminal, the address otherwise.
			p.plainBytes(append(buf, "  "...))
			p.link(h.URL)
			buf = buf[:0]
		}
		p.plainBytes(append(buf, '\n'))
		for _, s := range h.Snippets {
			buf = appendFlat(append(buf[:0], "    …"...), s.Text[:s.MatchStart])
			match := s.Text[s.MatchStart:s.MatchEnd]
			if p.on {
				p.plainBytes(buf)
				p.paintBytes(sgrMatch, appendFlat(buf[:0], match))
				buf = buf[:0]
			} else {
				open, shut := markers(s.Text)
				buf = append(appendFlat(append(buf, open...), match), shut...)
			}
			p.plainBytes(append(appendFlat(buf, s.Text[s.MatchEnd:]), "…\n"...))
		}
	}
	if resp.Cursor != "" {
		p.plain("(more hits: use --limit or --all)\n")
	}
}

// appendFlat appends t to b with each line break shown as ⏎, so that a
// snippet stays on one line.
func appendFlat(b []byte, t string) []byte {
	for {
		i := strings.IndexByte(t, '\n')
		if i < 0 {
			return append(b, t...)
		}
		b = append(append(b, t[:i]...), "⏎"...)
		t = t[i+1:]
	}
}

// hitAbout names a hit's session for people: its title and project, on one
// line ("" when it has neither).
func hitAbout(h search.Hit) string {
	parts := []string{}
	if h.Title != "" {
		parts = append(parts, oneCell(h.Title, sessionNameWidth))
	}
	if h.Cwd != "" {
		parts = append(parts, "in "+oneCell(h.Cwd, 200))
	}
	return strings.Join(parts, " ")
}
