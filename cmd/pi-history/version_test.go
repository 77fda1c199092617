package main

import (
	"runtime"
	"strings"
	"testing"
)

func TestUnknownCommandIsOneLineWithASuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serch", "x"}, `unknown command "serch"; did you mean "search"?`},
		{[]string{"exp"}, `unknown command "exp"; did you mean "export"?`},
		{[]string{"SESSIONS"}, `unknown command "SESSIONS" (see`},
		{[]string{"help", "imprt"}, `unknown command "imprt"; did you mean "import"?`},
		{[]string{"--verbose"}, `unknown command "--verbose" (see`},
	} {
		var out, errb strings.Builder
		code := run(c.args, &out, &errb)
		if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line holding %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

func TestVersionNamesTheBuild(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb strings.Builder
		code := run(args, &out, &errb)
		if code != 0 || errb.Len() != 0 || !strings.HasPrefix(out.String(), "pi-history ") ||
			!strings.Contains(out.String(), runtime.Version()) || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line naming pi-history and %s", args, code, out.String(), errb.String(), runtime.Version())
		}
	}
	var out, errb strings.Builder
	if code := run([]string{"version", "now"}, &out, &errb); code != 2 {
		t.Errorf("version with an argument: exit %d; want 2", code)
	}
}

// TestFlagsBeforeTheCommandGoAfterIt: "pi-history --data D search x" is
// read as "pi-history search --data D x"; it used to be an unknown
// command "--data".
func TestFlagsBeforeTheCommandGoAfterIt(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--data", "/d", "search", "x"}, []string{"search", "--data", "/d", "x"}},
		{[]string{"--data=/d", "-v", "sessions"}, []string{"sessions", "--data=/d", "-v"}},
		{[]string{"search", "--data", "/d", "x"}, []string{"search", "--data", "/d", "x"}},
		{[]string{"--data", "/d", "--", "search"}, []string{"--data", "/d", "--", "search"}},
		{[]string{"--verbose"}, []string{"--verbose"}},
		{[]string{"--version"}, []string{"--version"}},
	} {
		if got := commandFirst(c.in); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("commandFirst(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// And the command runs: a data directory that holds nothing says so.
	var out, errb strings.Builder
	code := run([]string{"--data", t.TempDir(), "sessions"}, &out, &errb)
	if code == 0 || strings.Contains(errb.String(), "unknown command") || !strings.Contains(errb.String(), "no pi-history data") {
		t.Errorf("--data before sessions: exit %d, stderr %q", code, errb.String())
	}
}
