package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/service"
)

// TestImportFindsArchivesInDirectories: an archive written by 'export --all'
// and dropped into a directory is imported with the directory, locally and
// through a running server, once.
func TestImportFindsArchivesInDirectories(t *testing.T) {
	src := newTestEnv(t)
	src.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	src.journal("--home-dev-cart--", "s2", exportJournal("s2")...)
	src.mustCLI("import")
	backups := filepath.Join(t.TempDir(), "backups")
	os.MkdirAll(filepath.Join(backups, "2026"), 0o755)
	src.mustCLI("export", "--all", "-o", filepath.Join(backups, "2026", "laptop.tar.zst"))
	os.WriteFile(filepath.Join(backups, "README.txt"), []byte("not a journal"), 0o644)

	importSum := func(e *testEnv) service.ImportSummary {
		t.Helper()
		out := e.mustCLI("import", "--json", backups)
		var sum service.ImportSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("import --json: %v: %s", err, out)
		}
		return sum
	}
	for _, serve := range []bool{false, true} {
		dst := newTestEnv(t)
		if serve {
			dst.serve()
		}
		sum := importSum(dst)
		if sum.Files != 1 || sum.Sessions != 2 || sum.Entries != 10 || len(sum.Problems) != 0 {
			t.Errorf("serve=%v: import of a directory holding an archive: %+v", serve, sum)
		}
		if again := importSum(dst); again.Entries != 0 || again.Files != 1 {
			t.Errorf("serve=%v: importing the archive again added %d entries", serve, again.Entries)
		}
	}
}

// TestImportShowsProgressThroughTheServer: on a terminal, an import that a
// running server does draws the same progress line as one done here, from
// the server's progress stream, and prints the same summary.
func TestImportShowsProgressThroughTheServer(t *testing.T) {
	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Writer) bool { return true }
	src := filepath.Join(t.TempDir(), "old-sessions")
	for i, sid := range []string{"s1", "s2", "s3"} {
		p := filepath.Join(src, fmt.Sprintf("--p%d--", i), sid+".jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(strings.Join(exportJournal(sid), "\n")+"\n"), 0o644)
	}
	summary := regexp.MustCompile(`, [0-9.]+s\n$`)
	var outs []string
	for _, serve := range []bool{false, true} {
		e := newTestEnv(t)
		if serve {
			e.serve()
		}
		stdout, stderr, code := e.cli("import", src)
		if code != 0 || !strings.Contains(stderr, "import: files 3/3  entries 15") {
			t.Errorf("serve=%v: exit %d, progress: %q", serve, code, stderr)
		}
		outs = append(outs, summary.ReplaceAllString(stdout, ", Ts\n"))
	}
	if outs[0] != outs[1] || !strings.HasPrefix(outs[0], "imported 3 files: 3 sessions, 15 new entries") {
		t.Errorf("summaries differ or are wrong:\nlocal:  %q\nremote: %q", outs[0], outs[1])
	}
}

// TestImportSummarySaysWhatIsStoredAndWhatWasNotRead: a re-import counts
// the entries already stored (not 0), counts take their singular, and a
// file that was not read is not counted as imported.
func TestImportSummarySaysWhatIsStoredAndWhatWasNotRead(t *testing.T) {
	e := newTestEnv(t)
	j := e.journal("--p--", "s1", exportJournal("s1")...)
	first := e.mustCLI("import", j)
	if !strings.HasPrefix(first, "imported 1 file: 1 session, 5 new entries (0 already stored), ") || !strings.Contains(first, ", 0 lines skipped, ") {
		t.Errorf("first import: %q", first)
	}
	again := e.mustCLI("import", j)
	if !strings.HasPrefix(again, "imported 1 file: 1 session, 0 new entries (5 already stored), ") {
		t.Errorf("import again: %q", again)
	}
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	os.WriteFile(junk, []byte("\x00\x01 not a journal\n"), 0o644)
	out, stderr, code := e.cli("import", junk)
	if code == 0 || !strings.HasPrefix(out, "imported 0 files (1 not read): 0 sessions, 0 new entries (0 already stored), ") || !strings.Contains(stderr, "skipped "+junk) {
		t.Errorf("import of a file that is not a journal: exit %d, %q, %q", code, out, stderr)
	}
}
