package main

import (
	"runtime"
	"runtime/debug"
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

func TestVersionSaysWhichBuildOrThatItCannot(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "pi-history (built without version information: build it in a git checkout with 'go build -buildvcs=true ./cmd/pi-history', or install a release with 'go install')"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "pi-history (built without version information: build it in a git checkout with 'go build -buildvcs=true ./cmd/pi-history', or install a release with 'go install')"},
		{"a checkout's build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-06T18:00:00Z", "vcs.modified", "false")},
			"pi-history (devel) commit 0123456789ab of 2026-12-06T18:00:00Z"},
		{"a modified checkout's build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-06T18:00:00Z", "vcs.modified", "true")},
			"pi-history (devel) commit 0123456789ab of 2026-12-06T18:00:00Z (modified)"},
		{"a pseudo-version naming the commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206180000-0123456789ab+dirty"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123")}, "pi-history v0.0.0-20261206180000-0123456789ab+dirty"},
		{"a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "pi-history v1.4.0"},
	} {
		if got := describeBuild(c.bi); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
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
