package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/store"
)

// runWatcher runs a watcher with o over dirs and waits for its first
// scan. Unlike startWatcher, it gives up on a watcher that does not stop
// within seconds of the test's end instead of waiting for it: a watcher
// that walks the whole file system must fail the test, not hang it.
func runWatcher(t *testing.T, st *store.Store, dirs []string, o WatchOptions) *Watcher {
	t.Helper()
	w := NewWatcher(st, dirs, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("watcher: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the watcher did not stop within 10s of being told to (walking outside the sessions directory?)")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for !w.Status().Running || w.Status().LastRescan.IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher's first scan took over 5s (%d directories watched)", w.Status().WatchedDirs)
		}
		time.Sleep(time.Millisecond)
	}
	return w
}

// hostileLinks makes, in root, links that lead out of it: to /, to /proc,
// to the directory holding root, and to a journal elsewhere. It returns
// that journal's session id.
func hostileLinks(t *testing.T, root, suffix string) string {
	t.Helper()
	outside := t.TempDir()
	sid := "outside" + suffix
	if err := os.WriteFile(filepath.Join(outside, "o.jsonl"), []byte(header(sid)+"\n"+userLine("o1", "", "not ours")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"--slash" + suffix + "--":            "/",
		"--proc" + suffix + "--":             "/proc",
		"--up" + suffix + "--":               filepath.Dir(root),
		"--outside" + suffix + "--":          outside,
		"linked" + suffix + ".jsonl":         filepath.Join(outside, "o.jsonl"),
		filepath.Join("--p--", "sys"+suffix): "/sys",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return sid
}

// TestWatcherStaysInsideTheSessionsDirectory: links to /, /proc, /sys, the
// directory above and a journal elsewhere, made before the watcher starts
// and while it runs, are not followed: the watcher watches only the
// sessions directory's own tree, reads nothing from outside, and a line
// appended to a journal meanwhile is stored within 100ms.
func TestWatcherStaysInsideTheSessionsDirectory(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	journal := filepath.Join(root, "--p--", "s.jsonl")
	if err := os.MkdirAll(filepath.Dir(journal), 0o755); err != nil {
		t.Fatal(err)
	}
	appendLine(t, journal, header("s"))
	appendLine(t, journal, userLine("s0", "", "before the links"))
	before := hostileLinks(t, root, "")
	w := runWatcher(t, st, []string{root}, WatchOptions{Rescan: time.Hour})
	waitStored(t, st, "s", "s0", 5*time.Second)
	during := hostileLinks(t, root, "-late")

	// The median of five appends: one slow append on a loaded machine is
	// not the watcher's doing; a watcher busy with the whole file system
	// is slow on every one.
	var took []time.Duration
	parent := "s0"
	for i := range 5 {
		id := fmt.Sprintf("s%d", i+1)
		appendLine(t, journal, userLine(id, parent, "appended beside hostile links"))
		took = append(took, waitStored(t, st, "s", id, 5*time.Second))
		parent = id
	}
	slices.Sort(took)
	if took[2] > 100*time.Millisecond {
		t.Errorf("appended lines took %v to be stored; want a median under 100ms", took)
	}
	if n := w.Status().WatchedDirs; n != 2 {
		t.Errorf("%d directories watched; want 2, the sessions directory and its project", n)
	}
	for _, sid := range []string{before, during} {
		if _, err := st.Session(sid); err == nil {
			t.Errorf("session %s, from outside the sessions directory, was stored", sid)
		}
	}
}

// TestWatcherPollsATreeTooLargeToWatch: past MaxWatches directories the
// watcher says so once and polls; a journal in a directory it does not
// watch is still read, within a poll.
func TestWatcherPollsATreeTooLargeToWatch(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	for i := range 6 {
		j := filepath.Join(root, fmt.Sprintf("--p%d--", i), "s.jsonl")
		if err := os.MkdirAll(filepath.Dir(j), 0o755); err != nil {
			t.Fatal(err)
		}
		appendLine(t, j, header(fmt.Sprintf("s%d", i)))
		appendLine(t, j, userLine("a", "", "first"))
	}
	var logBuf testutil.LogBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	w := runWatcher(t, st, []string{root}, WatchOptions{Rescan: time.Hour, Poll: 20 * time.Millisecond, MaxWatches: 3, Log: log})
	for i := range 6 {
		waitStored(t, st, fmt.Sprintf("s%d", i), "a", 5*time.Second)
	}
	ws := w.Status()
	if !ws.Polling || ws.WatchedDirs > 3 {
		t.Fatalf("status %+v; want polling, at most 3 directories watched", ws)
	}
	// Every project gets an append, watched or not; each is read.
	for i := range 6 {
		appendLine(t, filepath.Join(root, fmt.Sprintf("--p%d--", i), "s.jsonl"), userLine("b", "a", "appended"))
	}
	for i := range 6 {
		waitStored(t, st, fmt.Sprintf("s%d", i), "b", 5*time.Second)
	}
	// Several polls later, still one warning.
	for n := ws.LastRescan; ; time.Sleep(5 * time.Millisecond) {
		if s := w.Status(); s.LastRescan.Sub(n) > 100*time.Millisecond {
			break
		}
	}
	if n := strings.Count(logBuf.String(), "too many directories to watch"); n != 1 {
		t.Errorf("%d warnings about polling; want 1:\n%s", n, logBuf.String())
	}
}
