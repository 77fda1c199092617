package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/datadir"
)

// modes lists every path under dir with its mode.
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := os.Lstat(p); err == nil {
			out[p] = info.Mode()
		}
		return nil
	})
	return out
}

func diffModes(before, after map[string]fs.FileMode) []string {
	var d []string
	for p, m := range after {
		if b, ok := before[p]; !ok {
			d = append(d, "created "+p)
		} else if b != m {
			d = append(d, "changed "+p+" "+b.String()+" -> "+m.String())
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			d = append(d, "removed "+p)
		}
	}
	sort.Strings(d)
	return d
}

// TestEveryCommandLeavesADirectoryOfUserFilesAlone points --data at a
// directory of someone's files (a home, a project): every command refuses
// it with an error naming the flag, and no mode changes and nothing is
// created in it.
func TestEveryCommandLeavesADirectoryOfUserFilesAlone(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	home := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(filepath.Join(home, "bin"), 0o755)
	os.Chmod(home, 0o755)
	for name, mode := range map[string]fs.FileMode{"notes.txt": 0o644, "run.sh": 0o755, "bin/tool": 0o755} {
		p := filepath.Join(home, name)
		os.WriteFile(p, []byte("x\n"), mode)
		os.Chmod(p, mode)
	}
	e.data = home
	before := modes(t, home)
	for _, args := range [][]string{
		{"stats"}, {"import"}, {"sessions"}, {"search", "x"}, {"show", "s1"}, {"export", "s1"},
		{"compact"}, {"reindex"}, {"token"},
	} {
		_, stderr, code := e.cli(args...)
		if code == 0 || !strings.Contains(stderr, "not a pi-history data directory") || !strings.Contains(stderr, "--data") {
			t.Errorf("%s on a directory of user files: exit %d, %q; want an error naming --data", args[0], code, stderr)
		}
		if d := diffModes(before, modes(t, home)); len(d) > 0 {
			t.Fatalf("%s changed the directory: %s", args[0], strings.Join(d, "; "))
		}
	}
}

// TestAMissingDataDirectoryIsNoHistoryForEveryReader: the commands that
// only read say there is no history yet and create nothing; import
// creates the directory.
func TestAMissingDataDirectoryIsNoHistoryForEveryReader(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	for _, args := range [][]string{
		{"stats"}, {"stats", "--json"}, {"sessions"}, {"search", "x"}, {"show", "s1"}, {"export", "s1"}, {"compact"}, {"reindex"},
	} {
		_, stderr, code := e.cli(args...)
		if code == 0 || !strings.Contains(stderr, "no pi-history data") {
			t.Errorf("%s on a missing data directory: exit %d, %q; want an error, no history yet", strings.Join(args, " "), code, stderr)
		}
		if _, err := os.Stat(e.data); err == nil {
			t.Fatalf("%s created the missing data directory", strings.Join(args, " "))
		}
	}
	e.mustCLI("import")
	if _, err := os.Stat(filepath.Join(e.data, datadir.Marker)); err != nil {
		t.Errorf("import made no marked data directory: %v", err)
	}
	if out := e.mustCLI("stats"); !strings.Contains(out, "sessions:    1\n") {
		t.Errorf("stats after import: %q", out)
	}
}

// TestAKilledReindexLeavesNothingBehind: what a reindex killed before its
// swap left (index.rebuild, index.old) is cleared at the next open, and an
// index moved aside but not yet replaced is moved back.
func TestAKilledReindexLeavesNothingBehind(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	e.mustCLI("import")
	want := e.mustCLI("search", "--all", "--json", "ErrCartEmpty")
	half := filepath.Join(e.data, "index.rebuild")
	os.MkdirAll(half, 0o700)
	os.WriteFile(filepath.Join(half, "index_meta.json"), []byte("{}"), 0o600)
	e.mustCLI("stats")
	if _, err := os.Stat(half); err == nil {
		t.Error("index.rebuild is still there after the next open")
	}
	// Killed between the swap's renames: the index is index.old.
	if err := os.Rename(filepath.Join(e.data, "index"), filepath.Join(e.data, "index.old")); err != nil {
		t.Fatal(err)
	}
	if got := e.mustCLI("search", "--all", "--json", "ErrCartEmpty"); got != want {
		t.Errorf("search after the index was moved back:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(e.data, "index.old")); err == nil {
		t.Error("index.old is still there")
	}
}

// TestReadOnlyDataDirectoryIsSearchable mounts the data directory read-only
// (root, where bind mounts are allowed) or takes its write permission
// (anyone else): the read-only commands answer as before.
func TestReadOnlyDataDirectoryIsSearchable(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	e.mustCLI("import")
	wantSearch := e.mustCLI("search", "--all", "--json", "ErrCartEmpty")
	wantSessions := e.mustCLI("sessions", "--json")
	ro := readOnly(t, e.data)
	before := modes(t, ro)
	e.data = ro
	if got := e.mustCLI("search", "--all", "--json", "ErrCartEmpty"); got != wantSearch {
		t.Errorf("search of a read-only data directory:\n%s\nwant\n%s", got, wantSearch)
	}
	if got := e.mustCLI("sessions", "--json"); got != wantSessions {
		t.Errorf("sessions of a read-only data directory:\n%s\nwant\n%s", got, wantSessions)
	}
	if out := e.mustCLI("stats"); !strings.Contains(out, "sessions:    1\n") {
		t.Errorf("stats of a read-only data directory: %q", out)
	}
	e.mustCLI("show", "s1")
	e.mustCLI("export", "s1")
	if d := diffModes(before, modes(t, ro)); len(d) > 0 {
		t.Errorf("reading changed the directory: %s", strings.Join(d, "; "))
	}
}

// readOnly returns dir as this process cannot write it.
func readOnly(t *testing.T, dir string) string {
	t.Helper()
	if os.Getuid() != 0 {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o500)
				t.Cleanup(func() { os.Chmod(p, 0o700) })
			}
			return nil
		})
		return dir
	}
	mnt := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(mnt, 0o700)
	if out, err := exec.Command("mount", "--bind", dir, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount the data directory (%v: %s); a read-only file system needs root and mount", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only (%v: %s)", err, out)
	}
	return mnt
}
