package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/service"
)

// TestMaintenanceKeepsWhatIsStored runs compact and reindex on the data
// directory opened here and then through a running server: the same kind
// of report on stdout, exit 0, and the same search answers before and
// after each.
func TestMaintenanceKeepsWhatIsStored(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	e.journal("--home-dev-shop--", "s2", exportJournal("s2")...)
	e.mustCLI("import")
	// Through a server each hit also carries its web UI address.
	noURL := regexp.MustCompile(`,"url":"[^"]*"`)
	search := func() string { return noURL.ReplaceAllString(e.mustCLI("search", "--all", "--json", "e"), "") }
	before := search()
	compacted := regexp.MustCompile(`^compacted in [0-9.]+s: store [0-9.]+ (bytes|KB|MB) → [0-9.]+ (bytes|KB|MB), index [0-9.]+ (bytes|KB|MB) → [0-9.]+ (bytes|KB|MB)\n$`)
	reindexed := regexp.MustCompile(`^reindexed 10 entries in [0-9.]+s\n$`)
	check := func(where string) {
		t.Helper()
		if out := e.mustCLI("compact"); !compacted.MatchString(out) {
			t.Errorf("%s: compact printed %q", where, out)
		}
		if after := search(); after != before {
			t.Errorf("%s: search answers differ after compacting:\n%s\nvs\n%s", where, before, after)
		}
		if out := e.mustCLI("reindex"); !reindexed.MatchString(out) {
			t.Errorf("%s: reindex printed %q", where, out)
		}
		if after := search(); after != before {
			t.Errorf("%s: search answers differ after reindexing:\n%s\nvs\n%s", where, before, after)
		}
	}
	check("local")
	e.serve()
	check("through the server")
	for _, cmd := range []string{"compact", "reindex"} {
		if _, stderr, code := e.cli(cmd); code != 0 || !strings.Contains(stderr, "running server") {
			t.Errorf("%s while serving did not go through the server: exit %d: %s", cmd, code, stderr)
		}
	}
	if _, stderr, code := e.cli("reindex", "now"); code != 2 || !strings.Contains(stderr, "takes no arguments") {
		t.Errorf("reindex with an argument: exit %d: %s", code, stderr)
	}
}

func TestSizesReadForPeople(t *testing.T) {
	for b, want := range map[int64]string{0: "0 bytes", 999: "999 bytes", 1000: "1.0 KB", 43210: "43.2 KB",
		999_949: "999.9 KB", 999_950: "1.0 MB", 999_999: "1.0 MB", 1_500_000: "1.5 MB", 999_949_999: "999.9 MB",
		999_999_999: "1.00 GB", 1_497_000_000: "1.50 GB"} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestCountsTakeTheirNounsPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		if got := plural(n, "file"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
	var b strings.Builder
	printStats(&b, service.Stats{Files: 1, IndexedThrough: 79, LastSeq: 79, IndexFormat: "trigram postings v1"})
	if s := b.String(); !strings.Contains(s, "in 1 file ") || !strings.Contains(s, "up to date (through seq 79 of 79; trigram postings v1)") {
		t.Errorf("stats:\n%s", s)
	}
}
