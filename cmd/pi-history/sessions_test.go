package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSessionsTablePrintsOneLineASession: a session named with a pasted
// paragraph (newlines, tabs, hundreds of characters) still takes one line
// of the sessions table, its name cut to sessionNameWidth characters, and
// the other rows keep their width; a session without a name shows "-".
// --json keeps the name whole. Run with the data directory opened here
// and through a running server.
func TestSessionsTablePrintsOneLineASession(t *testing.T) {
	long := "fix the flaky test\nthen\tdeploy " + strings.Repeat("and then some more ", 20)
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		e.journal("--p--", "named", `{"type":"session","version":3,"id":"named","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
			srvLine("a1", "", "hello"),
			fmt.Sprintf(`{"type":"session_info","id":"i1","parentId":"a1","timestamp":"2026-01-01T10:00:02.000Z","name":%q}`, long))
		e.journal("--q--", "plain", `{"type":"session","version":3,"id":"plain","timestamp":"2026-01-01T11:00:00.000Z","cwd":"/q"}`,
			srvLine("b1", "", "hi"))
		e.importAll(serve)
		out, stderr, code := e.cli("sessions")
		if code != 0 {
			t.Fatalf("serve=%v: sessions: exit %d: %s", serve, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 3 || strings.Contains(out, "\t") {
			t.Fatalf("serve=%v: want a header and one line per session, no tabs; got:\n%s", serve, out)
		}
		named, plain := lines[1], lines[2]
		if !strings.HasPrefix(named, "named ") {
			named, plain = plain, named
		}
		cut := "fix the flaky test then deploy and then some mo"
		if !strings.Contains(named, cut+"…") || utf8.RuneCountInString(cut+"…") != sessionNameWidth || !strings.HasSuffix(named, "/p") {
			t.Errorf("serve=%v: the named session's row does not show its name cut to %d characters and its project:\n%s", serve, sessionNameWidth, named)
		}
		if !strings.HasPrefix(plain, "plain ") || !strings.Contains(plain, " hi  ") || !strings.HasSuffix(plain, "/q") {
			t.Errorf("serve=%v: the unnamed session's row does not show its first message as its title:\n%s", serve, plain)
		}
		if a, b := utf8.RuneCountInString(named), utf8.RuneCountInString(plain); a != b {
			t.Errorf("serve=%v: the rows differ in width (%d and %d characters): the name cell was not cut to one width\n%s\n%s", serve, a, b, named, plain)
		}
		js, _, _ := e.cli("sessions", "--json")
		if !strings.Contains(js, fmt.Sprintf("%q", long)[1:20]) || !strings.Contains(js, "and then some more and then some more \"") {
			t.Errorf("serve=%v: --json does not keep the whole name:\n%s", serve, js)
		}
	}
}

// TestSessionsMatchListsTheBestFirst: sessions --match lists the sessions
// whose words match, best first, each with the stretch that matched;
// --json carries score and match; a query that cannot be one fails with
// its reason. Run with the data directory opened here and through a
// running server.
func TestSessionsMatchListsTheBestFirst(t *testing.T) {
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		e.journal("--p--", "cart", `{"type":"session","version":3,"id":"cart","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
			srvLine("a1", "", "Fix the flaky checkout test"))
		e.journal("--q--", "docs", `{"type":"session","version":3,"id":"docs","timestamp":"2026-01-01T11:00:00.000Z","cwd":"/q"}`,
			srvLine("b1", "", "Write the release notes"), srvLine("b2", "b1", "and mention the checkout change"))
		e.importAll(serve)
		for _, c := range []struct {
			name string
			args []string
			want []string // lines' prefixes, in order
			code int
		}{
			{"title first", []string{"sessions", "--match", "checkout"},
				[]string{"SESSION", "cart ", "  title: Fix the flaky checkout test", "docs ", "  text: "}, 0},
			{"limit", []string{"sessions", "--match", "checkout", "--limit", "1"}, []string{"SESSION", "cart ", "  title: "}, 0},
			{"no match", []string{"sessions", "--match", "kubernetes"}, []string{"no session matches"}, 0},
			{"bad query", []string{"sessions", "--match", `title:"x`}, nil, 1},
			{"empty query", []string{"sessions", "--match", ""}, nil, 1},
			{"limit without match", []string{"sessions", "--limit", "3"}, nil, 2},
		} {
			out, stderr, code := e.cli(c.args...)
			if code != c.code {
				t.Errorf("serve=%v %s: exit %d, want %d; stderr %q", serve, c.name, code, c.code, stderr)
				continue
			}
			if code != 0 {
				if stderr == "" {
					t.Errorf("serve=%v %s: failed without saying why", serve, c.name)
				}
				continue
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(c.want) {
				t.Errorf("serve=%v %s: got\n%s\nwant lines starting %q", serve, c.name, out, c.want)
				continue
			}
			for i, w := range c.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("serve=%v %s: line %d is %q, want it to start %q", serve, c.name, i, lines[i], w)
				}
			}
		}
		js, _, _ := e.cli("sessions", "--match", "release", "--json")
		if !strings.Contains(js, `"id":"docs"`) || !strings.Contains(js, `"score":`) || !strings.Contains(js, `"match":"Write the release notes"`) {
			t.Errorf("serve=%v: --json does not carry the match:\n%s", serve, js)
		}
	}
}
