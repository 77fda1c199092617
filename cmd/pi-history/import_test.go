package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
