// Package testutil holds helpers shared by tests: where the shared fixtures
// are, and small journal writers.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns ../shared beside the repository, or skips the test when
// it is absent (the project builds and tests without it).
func SharedDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(RepoRoot(), "..", "shared")
	if env := os.Getenv("PI_HISTORY_SHARED"); env != "" {
		d = env
	}
	if _, err := os.Stat(filepath.Join(d, "fixtures", "pi", "FIXTURES.json")); err != nil {
		t.Skipf("shared fixtures not found at %s; skipping", d)
	}
	return d
}

// WriteFile writes content to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
