// Package testutil holds helpers shared by tests: where the shared fixtures
// are, and small journal writers.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BuildBinary builds the pi-history command into a temporary directory and
// returns its path.
func BuildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pi-history")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pi-history")
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pi-history: %v\n%s", err, out)
	}
	return bin
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

// NeedTool skips the test when a tool it needs is missing (why says what
// and how to get it), except when PI_HISTORY_REQUIRE_TOOLS=1 (set by CI),
// where a missing tool fails the test instead of hiding it.
func NeedTool(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("PI_HISTORY_REQUIRE_TOOLS") == "1" {
		t.Fatalf("required tool missing: %s (run scripts/setup)", why)
	}
	t.Skipf("skipping: %s (run scripts/setup to install it)", why)
}

// NodeModules returns dir/node_modules when it exists (after scripts/setup
// ran npm ci there); otherwise the test is skipped or failed per NeedTool.
func NodeModules(t testing.TB, dir string) string {
	t.Helper()
	nm := filepath.Join(dir, "node_modules")
	_, err := os.Stat(nm)
	NeedTool(t, err == nil, "node packages in "+dir)
	return nm
}

// Pi073 returns the absolute path of a script of internal/testutil/pi073,
// the one Node harness of Pi 0.73.1 that several packages' tests run (one
// npm install serves them all), and the node binary to run it with. The
// test is skipped, or failed under PI_HISTORY_REQUIRE_TOOLS, when node or
// the packages are missing.
func Pi073(t testing.TB, script string) (node, path string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "pi073")
	NodeModules(t, dir)
	node, err := exec.LookPath("node")
	NeedTool(t, err == nil, "node (Node 20 or later)")
	return node, filepath.Join(dir, script)
}

// LogBuffer collects what a logger writes from many goroutines; String
// returns it so far.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
