package datadir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// snapshot lists every path under dir with its mode, to show that nothing
// was created or changed.
func snapshot(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		out[p] = info.Mode()
		return nil
	})
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]fs.FileMode) {
	t.Helper()
	var diffs []string
	for p, m := range after {
		if b, ok := before[p]; !ok {
			diffs = append(diffs, "created "+p)
		} else if b != m {
			diffs = append(diffs, "changed "+p+": "+b.String()+" -> "+m.String())
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			diffs = append(diffs, "removed "+p)
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

// userDir makes a directory that looks like a home or project directory:
// a readable note, an executable script, a subdirectory.
func userDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "home")
	for _, d := range []string{dir, filepath.Join(dir, "src")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	for name, mode := range map[string]fs.FileMode{"notes.txt": 0o644, "run.sh": 0o755, "src/main.go": 0o644} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	return dir
}

func TestAcquireChangesNothingInADirectoryPiHistoryDidNotMake(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode Mode
	}{
		{"import or serve", Mode{Create: true}},
		{"maintenance", Mode{}},
		{"read only", Mode{Shared: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := userDir(t)
			before := snapshot(t, dir)
			l, err := AcquireWith(dir, tc.mode)
			if err == nil {
				l.Release()
				t.Fatal("AcquireWith took a directory of user files as a data directory")
			}
			if !errors.Is(err, ErrForeign) {
				t.Errorf("error %v; want ErrForeign", err)
			}
			sameSnapshot(t, before, snapshot(t, dir))
		})
	}
}

func TestForeignDirectoryErrorNamesTheFlagAndWhatWasFound(t *testing.T) {
	dir := userDir(t)
	err := Prepare(dir, true)
	var fe *ForeignError
	if !errors.As(err, &fe) {
		t.Fatalf("Prepare: %v; want a *ForeignError", err)
	}
	msg := err.Error()
	for _, want := range []string{dir, "--data", "PI_HISTORY_DATA", "notes.txt", "changed nothing", Marker} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func TestMissingDataDirectoryIsCreatedOnlyWhenAsked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	if _, err := AcquireWith(dir, Mode{}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("AcquireWith without Create on a missing directory: %v; want ErrNoHistory", err)
	}
	if _, err := AcquireWith(dir, Mode{Shared: true}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("AcquireWith(Shared) on a missing directory: %v; want ErrNoHistory", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory exists after AcquireWith without Create (%v)", err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("created directory: %v, mode %v; want 0700", err, info.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
		t.Errorf("no marker in a directory pi-history created: %v", err)
	}
}

func TestAdoptsWhatAnEarlierVersionOrThePiExtensionLeft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string // path -> content; a trailing / makes a directory
	}{
		{"empty", nil},
		{"the extension's serve.log", map[string]string{"serve.log": "started\n"}},
		{"the rollover configuration, written before the first serve", map[string]string{"note-context.json": `{"minReclaimTokens": 1000}`}},
		{"a data directory made before the marker", map[string]string{
			"store/": "", "store/CURRENT": "MANIFEST-000001\n", "index/": "", "index/index_meta.json": "{}",
			"owner.lock": "1\n", "api-token": "t\n", "server.json": "{}", "ledger.jsonl": "", ".server-1.json": "",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			os.Mkdir(dir, 0o755)
			os.Chmod(dir, 0o755)
			writeTree(t, dir, tc.files)
			l, err := Acquire(dir)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			l.Release()
			if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
				t.Errorf("adopted directory has no marker: %v", err)
			}
			if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
				t.Errorf("adopted directory's mode %v; want 0700", info.Mode().Perm())
			}
			for name := range tc.files {
				if strings.ContainsRune(name, '/') || strings.HasPrefix(name, ".") {
					continue // inside a private directory; a crash's leftover
				}
				if info, err := os.Lstat(filepath.Join(dir, name)); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s left readable by others (%v)", name, info.Mode().Perm())
				}
			}
		})
	}
}

func TestRefusesDirectoriesThatOnlyBorrowPiHistorysNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"a website's index directory", map[string]string{"index/": "", "index/page.html": "<p>"}},
		{"a store directory of something else", map[string]string{"store/": "", "store/items.csv": "a,b"}},
		{"our names beside a user file", map[string]string{"serve.log": "", "notes.txt": "x"}},
		{"a directory named like a file of ours", map[string]string{"api-token/": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			os.Mkdir(dir, 0o755)
			os.Chmod(dir, 0o755)
			writeTree(t, dir, tc.files)
			before := snapshot(t, dir)
			if err := Prepare(dir, true); !errors.Is(err, ErrForeign) {
				t.Errorf("Prepare: %v; want ErrForeign", err)
			}
			sameSnapshot(t, before, snapshot(t, dir))
		})
	}
}

func TestMakesOnlyItsOwnFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := Prepare(dir, true); err != nil {
		t.Fatal(err)
	}
	// Someone puts a file of theirs in the data directory afterwards, and
	// an older version left the token readable.
	writeTree(t, dir, map[string]string{"readme.txt": "mine", "api-token": "t\n"})
	os.Chmod(filepath.Join(dir, "readme.txt"), 0o644)
	os.Chmod(filepath.Join(dir, "api-token"), 0o644)
	if err := Prepare(dir, true); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(dir, "readme.txt")); info.Mode().Perm() != 0o644 {
		t.Errorf("a file pi-history did not make went from 0644 to %v", info.Mode().Perm())
	}
	if info, _ := os.Stat(filepath.Join(dir, "api-token")); info.Mode().Perm() != 0o600 {
		t.Errorf("api-token's mode %v; want 0600", info.Mode().Perm())
	}
}

func TestSharedAcquireWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := Prepare(dir, true); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	l, err := AcquireWith(dir, Mode{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, before, snapshot(t, dir))
	// A writer is refused while a reader holds the directory, once the
	// lock file exists.
	l.Release()
	w, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Release()
	r, err := AcquireWith(dir, Mode{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("a writer while a reader holds the lock: %v; want ErrLocked", err)
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names) // directories before what they hold
	for _, n := range names {
		p := filepath.Join(dir, n)
		if n[len(n)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
	}
}

// TestCreatesMissingParentsPrivately: a data directory several levels
// below what exists is made with every missing level private (0700), and
// marked.
func TestCreatesMissingParentsPrivately(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "data")
	if err := Prepare(dir, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), dir} {
		info, err := os.Stat(d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
		} else if info.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v; want 0700", d, info.Mode().Perm())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
		t.Errorf("no marker: %v", err)
	}
}
