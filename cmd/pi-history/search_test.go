package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/store"
)

// searchJournal: one session whose first branch (b1) was abandoned, a text
// with a terminal's escape sequences in it, and 60 entries of "bulk".
func searchJournal(e *testEnv) {
	lines := []string{`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "alpha Foo one"),
		srvLine("b1", "a1", "AbandonedOnly marker"),
		srvLine("a2", "a1", "alpha foo two"),
		jsonLine("a3", "a2", "tool colours \x1b[31mred\x1b[0m, a clipboard write \x1b]52;c;ZXZpbA==\x07 and a C1 CSI \u009b2J end"),
	}
	parent := "a3"
	for i := 1; i <= 60; i++ {
		id := fmt.Sprintf("c%03d", i)
		lines = append(lines, srvLine(id, parent, fmt.Sprintf("bulk %d", i)))
		parent = id
	}
	e.journal("--p--", "s1", lines...)
}

// jsonLine is srvLine for any text: %q does not always write JSON (\x1b).
func jsonLine(id, parent, text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":%s}}`, id, parent, b)
}

// TestSearchCommand runs 'pi-history search' as a user does, with the data
// directory opened by the command and through a running server: what it
// finds, its exit status (0 found, 1 nothing found, 2 an error, as grep),
// its scopes, paging and JSON, and what it refuses.
func TestSearchCommand(t *testing.T) {
	type want struct {
		code    int
		has     []string // in stdout
		hasNot  []string // not in stdout
		lines   int      // hit lines in stdout (header lines of text output, or JSON lines); -1: any
		errHas  string   // in stderr
		jsonOut bool
	}
	cases := []struct {
		name string
		args []string
		want want
	}{
		{"finds every match in all scope", []string{"alpha"}, want{code: 0, has: []string{"s1/a1 ", "s1/a2 ", "«alpha»"}, lines: 2}},
		{"is case-sensitive", []string{"Foo"}, want{code: 0, has: []string{"s1/a1 "}, hasNot: []string{"s1/a2 "}, lines: 1}},
		{"nothing found is status 1 and silent", []string{"not in any entry"}, want{code: 1, lines: 0}},
		{"branch scope leaves out an abandoned branch", []string{"--session", "s1", "AbandonedOnly"}, want{code: 1, lines: 0, errHas: "but 1 hit on its other branches"}},
		{"session scope finds it, marked off the branch", []string{"--session", "s1", "--scope", "session", "AbandonedOnly"},
			want{code: 0, has: []string{"s1/b1 ", "(off the current branch)"}, lines: 1}},
		{"a limit pages", []string{"--limit", "5", "bulk"}, want{code: 0, has: []string{"s1/c001 ", "s1/c005 ", "(more hits"}, hasNot: []string{"s1/c006 "}, lines: 5}},
		{"all prints every hit", []string{"--all", "bulk"}, want{code: 0, has: []string{"s1/c001 ", "s1/c060 "}, hasNot: []string{"(more hits"}, lines: 60}},
		{"newest first", []string{"--newest-first", "--limit", "1", "bulk"}, want{code: 0, has: []string{"s1/c060 "}, lines: 1}},
		{"a unique prefix of a session id", []string{"--session", "s", "--scope", "session", "AbandonedOnly"}, want{code: 0, has: []string{"s1/b1 "}, lines: 1}},
		{"since an age that reaches the entries", []string{"--since", "100000h", "alpha"}, want{code: 0, lines: 2}},
		{"since an age that does not", []string{"--since", "1d", "alpha"}, want{code: 1, lines: 0}},
		{"json: one object per hit", []string{"--json", "--all", "bulk 1"}, want{code: 0, lines: 11, jsonOut: true}},
		{"a needle that starts with -", []string{"--", "-x"}, want{code: 1, lines: 0}},
		{"empty needle", []string{""}, want{code: 2, lines: 0, errHas: "needle"}},
		{"needle over 4 KB", []string{strings.Repeat("a", 4097)}, want{code: 2, lines: 0, errHas: "needle"}},
		{"needle that is not UTF-8", []string{"a\xffb"}, want{code: 2, lines: 0, errHas: "not valid UTF-8"}},
		{"unknown session", []string{"--session", "nope", "alpha"}, want{code: 2, lines: 0, errHas: `no session "nope"`}},
		{"leaf not in the session", []string{"--session", "s1", "--leaf", "zz", "alpha"}, want{code: 2, lines: 0, errHas: `"zz" is not in session`}},
		{"window the branch does not have", []string{"--session", "s1", "--window", "9", "alpha"}, want{code: 2, lines: 0, errHas: "window 9 does not exist"}},
		{"window no branch has", []string{"--session", "s1", "--scope", "session", "--window", "9", "alpha"}, want{code: 2, lines: 0, errHas: "window 9 does not exist"}},
		{"limit below 1", []string{"--limit", "0", "alpha"}, want{code: 2, lines: 0, errHas: "--limit"}},
		{"limit above the most a page holds", []string{"--limit", "5000", "alpha"}, want{code: 2, lines: 0, errHas: "--limit 5000 is out of range 1..1000; use --all"}},
		{"a role in the wrong case", []string{"--role", "toolresult", "alpha"}, want{code: 2, lines: 0, errHas: `did you mean "toolResult"`}},
		{"a type that has no searchable text", []string{"--type", "model_change", "alpha"}, want{code: 2, lines: 0, errHas: `type "model_change" never has searchable text`}},
		{"json: a cut-off list says so on stderr", []string{"--json", "--limit", "5", "--count", "bulk"}, want{code: 0, lines: 5, jsonOut: true, errHas: "60 hits in all"}},
		{"two needles", []string{"alpha", "beta"}, want{code: 2, lines: 0, errHas: "exactly one NEEDLE"}},
		{"bad time", []string{"--since", "soon", "alpha"}, want{code: 2, lines: 0, errHas: `--since "soon"`}},
		{"-i ignores case", []string{"-i", "FOO"}, want{code: 0, has: []string{"s1/a1 ", "s1/a2 ", "«Foo»", "«foo»"}, lines: 2}},
		{"--ignore-case in branch scope", []string{"--ignore-case", "--session", "s1", "ALPHA FOO"}, want{code: 0, has: []string{"«alpha Foo»", "«alpha foo»"}, lines: 2}},
		{"--regex", []string{"--regex", `^bulk 5\d$`}, want{code: 0, has: []string{"s1/c050 ", "s1/c059 ", "«bulk 51»"}, hasNot: []string{"s1/c005 "}, lines: 10}},
		{"--regex with -i", []string{"--regex", "-i", `ALPHA (foo|bar) T`}, want{code: 0, has: []string{"s1/a2 ", "«alpha foo t»"}, lines: 1}},
		{"--regex --all --count", []string{"--regex", "--all", "--count", `bulk [1-3]$`}, want{code: 0, has: []string{"3 hits in all"}, lines: 3}},
		{"a regex that does not compile", []string{"--regex", "bulk ("}, want{code: 2, lines: 0, errHas: "--regex \"bulk (\" does not compile: missing closing )"}},
		{"without --regex, regex syntax is text", []string{"bulk ("}, want{code: 1, lines: 0}},
	}
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		searchJournal(e)
		e.importAll(serve)
		for _, c := range cases {
			t.Run(fmt.Sprintf("serve=%v/%s", serve, c.name), func(t *testing.T) {
				out, errOut, code := e.cli(append([]string{"search"}, c.args...)...)
				w := c.want
				if code != w.code {
					t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, w.code, out, errOut)
				}
				if !strings.Contains(errOut, w.errHas) || w.errHas == "" && errOut != "" {
					t.Errorf("stderr %q, want it to say %q", errOut, w.errHas)
				}
				for _, s := range w.has {
					if !strings.Contains(out, s) {
						t.Errorf("stdout lacks %q:\n%s", s, out)
					}
				}
				for _, s := range w.hasNot {
					if strings.Contains(out, s) {
						t.Errorf("stdout has %q:\n%s", s, out)
					}
				}
				n := 0
				for _, l := range strings.Split(out, "\n") {
					if w.jsonOut {
						if l == "" {
							continue
						}
						var h map[string]any
						if err := json.Unmarshal([]byte(l), &h); err != nil {
							t.Fatalf("a --json line is not JSON: %v\n%s", err, l)
						}
						for _, k := range []string{"session", "entry", "type", "role", "timestamp", "window"} {
							if _, ok := h[k]; !ok {
								t.Errorf("a --json hit lacks %q: %s", k, l)
							}
						}
						n++
					} else if strings.HasPrefix(l, "s1/") {
						n++
					}
				}
				if w.lines >= 0 && n != w.lines {
					t.Errorf("%d hits printed, want %d:\n%s", n, w.lines, out)
				}
			})
		}
	}
}

// ourColours removes the SGR codes search colours its output with.
var ourColours = strings.NewReplacer("\x1b["+sgrMatch+"m", "", "\x1b["+sgrPath+"m", "", "\x1b["+sgrDim+"m", "", "\x1b[0m", "")

// ourLinks matches the hyperlinks search writes around a hit's address.
var ourLinks = regexp.MustCompile("\x1b]8;;[^\x1b]*\x1b\\\\")

// TestSearchOnATerminalShowsControlCharacters: a tool's escape sequences
// stored in a session reach a terminal as visible stand-ins, never as
// commands to it (colours, an OSC 52 clipboard write, an 8-bit CSI); to a
// pipe they pass as stored.
func TestSearchOnATerminalShowsControlCharacters(t *testing.T) {
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		searchJournal(e)
		e.importAll(serve)
		for _, tty := range []bool{true, false} {
			func() {
				defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
				isTerminal = func(io.Writer) bool { return tty }
				for _, args := range [][]string{{"search", "colours"}, {"show", "s1/a3"}, {"show", "s1"}} {
					out, errOut, code := e.cli(args...)
					if code != 0 {
						t.Fatalf("serve=%v tty=%v %v: exit %d: %s", serve, tty, args, code, errOut)
					}
					// Our own colour codes are the only escapes a
					// terminal may get; the session's are stand-ins.
					out = ourColours.Replace(ourLinks.ReplaceAllString(out, ""))
					raw := strings.ContainsAny(out, "\x1b\x07\u009b")
					shown := strings.Contains(out, "␛[31mred␛[0m") && strings.Contains(out, "␛]52;c;ZXZpbA==␇") && strings.Contains(out, "<U+009B>2J")
					if tty && (raw || !shown) {
						t.Errorf("serve=%v %v on a terminal: control characters not shown as stand-ins:\n%q", serve, args, out)
					}
					if !tty && (!raw || shown) {
						t.Errorf("serve=%v %v to a pipe: the stored bytes were changed:\n%q", serve, args, out)
					}
				}
			}()
		}
	}
}

// TestFlagMistakesAreOneLineAndHelpGoesToStdout: a value flag given last
// is an error saying it needs a value (it used to take the "--" the parser
// adds: 'export S -o' wrote a file named --), a bad flag value is one line
// with a pointer to --help, and asked-for help goes to stdout.
func TestFlagMistakesAreOneLineAndHelpGoesToStdout(t *testing.T) {
	t.Chdir(t.TempDir())
	data := t.TempDir()
	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"search", "x", "--session"}, "flag needs an argument: -session"},
		{[]string{"export", "s1", "-o"}, "flag needs an argument: -o"},
		{[]string{"search", "--window", "abc", "x"}, `invalid value "abc" for flag -window`},
		{[]string{"search", "--colour", "x"}, "flag provided but not defined: -colour"},
	}
	for _, c := range cases {
		var out, errb strings.Builder
		code := run(append([]string{c.args[0], "--data", data}, c.args[1:]...), &out, &errb)
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if code != 2 || !strings.Contains(lines[0], c.err) || len(lines) != 2 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and one line naming %q, then the --help pointer", c.args, code, errb.String(), out.String(), c.err)
		}
	}
	if _, err := os.Stat("--"); err == nil {
		t.Error("a file named -- was written")
	}
	var out, errb strings.Builder
	if code := run([]string{"help", "search"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Scopes:") || errb.Len() != 0 {
		t.Errorf("help search: exit %d, stdout %d bytes, stderr %q; want the help on stdout", code, out.Len(), errb.String())
	}
}

type fullWriter struct{}

func (fullWriter) Write(p []byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputThatCannotBeWrittenFails: output that does not arrive (a full
// disk, /dev/full) makes the command fail and say so, in every command:
// search, stats, sessions --json and show used to exit 0 with nothing
// written.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	e := newTestEnv(t)
	searchJournal(e)
	e.mustCLI("import", e.sessions)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"search", "alpha"}, 2},
		{[]string{"search", "--json", "alpha"}, 2},
		{[]string{"stats"}, 1},
		{[]string{"sessions", "--json"}, 1},
		{[]string{"show", "s1"}, 1},
	} {
		var errb strings.Builder
		code := run(append(c.args, "--data", e.data, "--sessions", e.sessions), fullWriter{}, &errb)
		if code != c.code || !strings.Contains(errb.String(), "writing the output failed: no space left on device") {
			t.Errorf("%v to a full disk: exit %d, stderr %q; want %d and the write error", c.args, code, errb.String(), c.code)
		}
	}
}

// TestReadingCommandsRefuseADataDirectoryWithNothingInIt: a mistyped --data
// used to create an empty store there and answer as if it were the real
// one (search: "no match"); the commands that only read now say there is
// nothing there, and create nothing.
func TestReadingCommandsRefuseADataDirectoryWithNothingInIt(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"search", "alpha"}, 2},
		{[]string{"sessions"}, 1},
		{[]string{"show", "s1"}, 1},
		{[]string{"export", "s1"}, 1},
		{[]string{"export", "--all", "-o", filepath.Join(t.TempDir(), "a.tar.zst")}, 1},
	} {
		var out, errb strings.Builder
		code := run(append([]string{c.args[0], "--data", typo}, c.args[1:]...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), "no pi-history data in "+typo) {
			t.Errorf("%v: exit %d, stderr %q; want %d and 'no pi-history data'", c.args, code, errb.String(), c.code)
		}
	}
	if _, err := os.Stat(typo); err == nil {
		t.Error("the mistyped data directory was created")
	}
}

// TestShowListsOneLineAnEntry: a label holding newlines, tabs and a
// carriage return stays on its entry's line of 'show SESSION'.
func TestShowListsOneLineAnEntry(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "hello"), srvLine("a2", "a1", "world"),
		`{"type":"label","id":"l1","parentId":"a2","timestamp":"2026-01-01T10:00:02.000Z","targetId":"a1","label":"multi\nline\tlabel\rcr"}`)
	e.mustCLI("import", e.sessions)
	out := e.mustCLI("show", "s") // a unique prefix, as export takes
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "[multi line label cr]") {
		t.Errorf("show s1: want one line for each of the 3 entries, the label folded onto a1's:\n%q", out)
	}
}

// TestSearchAllPagesThroughEveryHit: --all over more hits than one page
// holds (it asks a page of 1,000 at a time) prints each hit once, in
// order, and --count the total, here and through a server.
func TestSearchAllPagesThroughEveryHit(t *testing.T) {
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		lines := []string{`{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`}
		parent := ""
		for i := 0; i < 2500; i++ {
			id := fmt.Sprintf("e%05d", i)
			lines = append(lines, srvLine(id, parent, fmt.Sprintf("PagedMarker %d", i)))
			parent = id
		}
		e.journal("--p--", "big", lines...)
		e.importAll(serve)
		out := e.mustCLI("search", "--all", "--json", "PagedMarker")
		var prev string
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var h struct{ Entry string }
			if err := json.Unmarshal([]byte(l), &h); err != nil {
				t.Fatalf("serve=%v: %v: %s", serve, err, l)
			}
			if h.Entry <= prev {
				t.Fatalf("serve=%v: hit %s after %s: out of order or twice", serve, h.Entry, prev)
			}
			prev = h.Entry
			n++
		}
		if n != 2500 {
			t.Errorf("serve=%v: %d hits, want 2500", serve, n)
		}
		if out := e.mustCLI("search", "--all", "--count", "PagedMarker"); !strings.HasSuffix(out, "2500 hits in all\n") || strings.Contains(out, "(more hits") {
			t.Errorf("serve=%v: --all --count ends %q", serve, out[max(0, len(out)-60):])
		}
	}
}

// TestShowPagesWithACursor: a list longer than --limit ends with the
// command for the next page (with the leaf, so that entries arriving in
// between do not void it); following it lists the rest, here and through a
// server. A limit outside 1..1000 is refused instead of quietly changed.
func TestShowPagesWithACursor(t *testing.T) {
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		lines := []string{`{"type":"session","version":3,"id":"pg","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`}
		parent := ""
		for i := 0; i < 25; i++ {
			id := fmt.Sprintf("p%03d", i)
			lines = append(lines, srvLine(id, parent, "hello"))
			parent = id
		}
		e.journal("--p--", "pg", lines...)
		e.importAll(serve)
		// The next-page command keeps the filters, which the cursor is
		// bound to, and the page size.
		for _, flags := range [][]string{{"--limit", "10"}, {"--limit", "7", "--role", "user"}, {"--limit", "10", "--all-branches"}, {"--limit", "10", "--window", "1", "--type", "message"}} {
			out := e.mustCLI(append([]string{"show", "pg"}, flags...)...)
			var seen []string
			for page := 0; ; page++ {
				if page > 5 {
					t.Fatalf("serve=%v %v: the pages do not end", serve, flags)
				}
				next := ""
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if rest, ok := strings.CutPrefix(l, "(25 entries in all; the next page: pi-history "); ok {
						next = strings.TrimSuffix(rest, ")")
						continue
					}
					seen = append(seen, strings.Fields(l)[0])
				}
				if next == "" {
					break
				}
				args := strings.Fields(next)
				var errOut string
				var code int
				out, errOut, code = e.cli(args...)
				if code != 0 {
					t.Fatalf("serve=%v %v: the printed next page %q failed: exit %d %s", serve, flags, next, code, errOut)
				}
			}
			if len(seen) != 25 || seen[0] != "p000" || seen[24] != "p024" {
				t.Errorf("serve=%v %v: pages listed %d entries (%v), want p000..p024", serve, flags, len(seen), seen)
			}
		}
		if _, stderr, code := e.cli("show", "pg", "--limit", "0"); code != 2 || !strings.Contains(stderr, "--limit 0") {
			t.Errorf("serve=%v: --limit 0: exit %d %q; want a usage error", serve, code, stderr)
		}
	}
}

// TestSearchColoursMatchesLikeGrep: --color and NO_COLOR decide as grep
// and ripgrep do; coloured output marks each match in bold red and nothing
// else, and output without colour sets matches off with brackets that the
// snippet does not hold.
func TestSearchColoursMatchesLikeGrep(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1",
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/dev/shop"}`,
		jsonLine("m1", "", "a naïve café and «quoted» text"),
		jsonLine("m2", "m1", "plain naïve café here"),
	)
	e.mustCLI("import")
	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	for _, c := range []struct {
		name    string
		tty     bool
		noColor string
		term    string
		flag    string
		colour  bool
	}{
		{"a terminal", true, "", "xterm", "", true},
		{"a pipe", false, "", "xterm", "", false},
		{"NO_COLOR on a terminal", true, "1", "xterm", "", false},
		{"TERM=dumb", true, "", "dumb", "", false},
		{"--color never on a terminal", true, "", "xterm", "never", false},
		{"--color always to a pipe", false, "", "xterm", "always", true},
		{"--color always beats NO_COLOR", false, "1", "xterm", "always", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			isTerminal = func(io.Writer) bool { return c.tty }
			t.Setenv("NO_COLOR", c.noColor)
			t.Setenv("TERM", c.term)
			args := []string{"search", "--all"}
			if c.flag != "" {
				args = append(args, "--color", c.flag)
			}
			out := e.mustCLI(append(args, "naïve café")...)
			match := "\x1b[1;31mnaïve café\x1b[0m"
			if got := strings.Count(out, match); c.colour && got != 2 {
				t.Errorf("%d coloured matches, want 2:\n%q", got, out)
			}
			if !c.colour && strings.Contains(out, "\x1b") {
				t.Errorf("colour codes without colour:\n%q", out)
			}
			if !c.colour {
				// The first snippet holds « and », so its match is set
				// off by the next pair; the second by «».
				if !strings.Contains(out, "a ⟦naïve café⟧ and «quoted» text") || !strings.Contains(out, "plain «naïve café» here") {
					t.Errorf("matches not set off by brackets the text lacks:\n%s", out)
				}
			}
		})
	}
	if _, stderr, code := e.cli("search", "--color", "sometimes", "x"); code != 2 || !strings.Contains(stderr, "want auto, always or never") {
		t.Errorf("--color sometimes: exit %d, %q", code, stderr)
	}
}

// TestSearchOfABranchSaysWhatOtherBranchesHold: --session without --scope
// searches the current branch; when that finds nothing and other branches
// hold hits, stderr says how many and how to reach them. An explicit scope
// gets no hint.
func TestSearchOfABranchSaysWhatOtherBranchesHold(t *testing.T) {
	e := newTestEnv(t)
	searchJournal(e)
	e.mustCLI("import")
	_, stderr, code := e.cli("search", "--session", "s1", "AbandonedOnly")
	if code != 1 || !strings.Contains(stderr, "nothing on the current branch of s1, but 1 hit on its other branches: add --scope session") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := e.cli("search", "--session", "s1", "--scope", "branch", "AbandonedOnly"); code != 1 || stderr != "" {
		t.Errorf("explicit branch scope: exit %d, stderr %q; want 1 and no hint", code, stderr)
	}
	if _, stderr, code := e.cli("search", "--session", "s1", "NowhereAtAll"); code != 1 || stderr != "" {
		t.Errorf("a needle no branch holds: exit %d, stderr %q; want 1 and no hint", code, stderr)
	}
}

// TestShowSaysTheSessionHasOtherBranches: showing a session with more than
// one branch ends (on stderr) by saying so and how to see the others.
func TestShowSaysTheSessionHasOtherBranches(t *testing.T) {
	e := newTestEnv(t)
	searchJournal(e)
	e.mustCLI("import")
	_, stderr, code := e.cli("show", "s1")
	if code != 0 || !strings.Contains(stderr, "the current branch of 2: --all-branches lists every entry") || !strings.Contains(stderr, "b1") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, stderr, _ := e.cli("show", "--all-branches", "s1"); stderr != "" {
		t.Errorf("show --all-branches: stderr %q; want nothing", stderr)
	}
}

// TestACommandWaitsForAnotherHoldingTheDataDirectory: with no server, a
// command started while another holds the data directory (a search, an
// export, an import) waits for it, says so when it takes a while, and runs
// once it is free; one that waits past lockWait fails with the holder named.
func TestACommandWaitsForAnotherHoldingTheDataDirectory(t *testing.T) {
	e := newTestEnv(t)
	e.journal("p", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"find the waiting needle"}}`)
	e.importAll(false)
	defer func(w, tell, poll time.Duration) { lockWait, lockTell, lockPoll = w, tell, poll }(lockWait, lockTell, lockPoll)
	lockWait, lockTell, lockPoll = 5*time.Second, 50*time.Millisecond, 5*time.Millisecond

	for _, c := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"search", "--color", "never", "waiting needle"}, "«waiting needle»"},
		{[]string{"export", "--format", "md", "s1"}, "find the waiting needle"},
		{[]string{"import", e.sessions}, ""},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			lock, err := datadir.Acquire(e.data) // another one-shot command
			if err != nil {
				t.Fatal(err)
			}
			released := make(chan struct{})
			go func() {
				time.Sleep(300 * time.Millisecond)
				lock.Release()
				close(released)
			}()
			out, errOut, code := e.cli(c.args...)
			<-released
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("%s while another command held the data directory: exit %d\nstdout: %s\nstderr: %s", c.args[0], code, out, errOut)
			}
			if !strings.Contains(errOut, "waiting for process") {
				t.Errorf("%s waited 300 ms and said nothing of it: %q", c.args[0], errOut)
			}
		})
	}

	lockWait = 100 * time.Millisecond
	lock, err := datadir.Acquire(e.data)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, errOut, code := e.cli("search", "--color", "never", "waiting needle")
	if code != 2 || !strings.Contains(errOut, "waited 100ms for process") || !strings.Contains(errOut, "run the command again") {
		t.Fatalf("search that waited past lockWait: exit %d, stderr %q; want exit 2 saying how long it waited, for which process, and what to do", code, errOut)
	}
}

// TestCommandsThatReadKeepASmallBlockCache: a command that reads opens the
// store with at most oneShotCacheBytes of block cache (it reads most
// blocks once), one that writes with the store's default.
func TestCommandsThatReadKeepASmallBlockCache(t *testing.T) {
	e := newTestEnv(t)
	e.journal("p", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}`)
	e.importAll(false)
	g := &globals{data: e.data, log: slog.New(slog.DiscardHandler), stderr: io.Discard}
	for _, c := range []struct {
		how  openHow
		want int64
	}{
		{openHow{reading: true}, oneShotCacheBytes},
		{openHow{}, store.DefaultCacheBytes},
	} {
		svc, err := g.openServiceWith(c.how)
		if err != nil {
			t.Fatal(err)
		}
		got := svc.Store.CacheBytes()
		svc.Close()
		if got != c.want {
			t.Errorf("opened %+v: block cache %d MiB, want %d MiB", c.how, got>>20, c.want>>20)
		}
	}
}
