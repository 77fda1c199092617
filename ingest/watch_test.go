package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-history/pi-history/store"
)

func header(sid string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, sid)
}

func userLine(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q}}`, id, p, text)
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// startWatcher runs a watcher over dir with a long rescan period, so that
// the tests see what the events alone achieve.
func startWatcher(t *testing.T, st *store.Store, dir string) *Watcher {
	t.Helper()
	w := NewWatcher(st, []string{dir}, WatchOptions{Rescan: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watcher: %v", err)
		}
	})
	// Wait for the initial scan to have added the watches.
	deadline := time.Now().Add(5 * time.Second)
	for !w.Status().Running || w.Status().LastRescan.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("watcher did not start")
		}
		time.Sleep(time.Millisecond)
	}
	return w
}

// waitStored polls until entry id of session sid is stored and returns how
// long it took.
func waitStored(t *testing.T, st *store.Store, sid, id string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if _, err := st.Lookup(sid, id); err == nil {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("entry %s of %s not stored after %v", id, sid, within)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatcherStoresAppendedLinesQuickly(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	proj := filepath.Join(root, "--home-dev-shop--")
	os.MkdirAll(proj, 0o755)
	j := filepath.Join(proj, "s1.jsonl")
	appendLine(t, j, header("s1"))
	appendLine(t, j, userLine("a1", "", "first"))
	startWatcher(t, st, root)
	waitStored(t, st, "s1", "a1", 5*time.Second) // from the initial scan

	var worst time.Duration
	prev := "a1"
	for i := range 10 {
		id := fmt.Sprintf("b%d", i)
		appendLine(t, j, userLine(id, prev, "more"))
		if d := waitStored(t, st, "s1", id, 5*time.Second); d > worst {
			worst = d
		}
		prev = id
	}
	t.Logf("worst append-to-stored latency: %v", worst)
	if worst > 100*time.Millisecond {
		t.Errorf("an appended line took %v to be stored; want well under 100ms", worst)
	}
}

// TestWatcherKeepsTheEntriesOfARewrittenFile: a journal rewritten with
// other entries under the same session header keeps the entries it held,
// as history, and adds the new ones.
func TestWatcherKeepsTheEntriesOfARewrittenFile(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	proj := filepath.Join(root, "--p--")
	os.MkdirAll(proj, 0o755)
	j := filepath.Join(proj, "s2.jsonl")
	appendLine(t, j, header("s2"))
	appendLine(t, j, userLine("old1", "", "before the rewrite"))
	appendLine(t, j, userLine("old2", "old1", "before the rewrite"))
	startWatcher(t, st, root)
	waitStored(t, st, "s2", "old2", 5*time.Second)

	content := header("s2") + "\n" + userLine("new1", "", "after the rewrite") + "\n"
	if err := os.WriteFile(j, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	waitStored(t, st, "s2", "new1", 5*time.Second)
	for _, id := range []string{"old1", "old2"} {
		if _, err := st.Lookup("s2", id); err != nil {
			t.Errorf("entry %s is gone after the file was rewritten: %v", id, err)
		}
	}
	si, err := st.Session("s2")
	if err != nil {
		t.Fatal(err)
	}
	if si.Entries != 3 || si.File != j {
		t.Errorf("session after the rewrite: %d entries, file %s; want 3, %s", si.Entries, si.File, j)
	}
}

func TestWatcherFollowsNewAndVanishedDirectories(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	w := startWatcher(t, st, root)

	// A project folder created after the start, with a journal in it.
	proj := filepath.Join(root, "--later--")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(proj, "s3.jsonl")
	appendLine(t, j, header("s3"))
	appendLine(t, j, userLine("c1", "", "hello"))
	waitStored(t, st, "s3", "c1", 5*time.Second)
	appendLine(t, j, userLine("c2", "c1", "again"))
	waitStored(t, st, "s3", "c2", 5*time.Second)

	// A folder that vanishes (with its journal) must not stop the watcher.
	gone := filepath.Join(root, "--gone--")
	os.Mkdir(gone, 0o755)
	appendLine(t, filepath.Join(gone, "s4.jsonl"), header("s4"))
	appendLine(t, filepath.Join(gone, "s4.jsonl"), userLine("d1", "", "soon gone"))
	waitStored(t, st, "s4", "d1", 5*time.Second)
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	w.Rescan()
	appendLine(t, j, userLine("c3", "c2", "still watched"))
	waitStored(t, st, "s3", "c3", 5*time.Second)
	if _, err := st.Lookup("s4", "d1"); err != nil {
		t.Errorf("entries of a vanished file must stay stored: %v", err)
	}
	// The vanished folder is let go by the rescan (asked for above, run
	// by the watcher's own goroutine) or by its removal event, whichever
	// comes first; neither has to have run yet.
	deadline := time.Now().Add(5 * time.Second)
	for w.Status().WatchedDirs != 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := w.Status(); s.WatchedDirs != 2 {
		t.Errorf("watching %d directories 5 s after the rescan, want 2 (root and --later--)", s.WatchedDirs)
	}
}

func TestWatcherWaitsForMissingRoot(t *testing.T) {
	st := openStore(t)
	parent := t.TempDir()
	root := filepath.Join(parent, "sessions")
	startWatcher(t, st, root)
	proj := filepath.Join(root, "--p--")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(proj, "s5.jsonl")
	appendLine(t, j, header("s5"))
	appendLine(t, j, userLine("e1", "", "hi"))
	waitStored(t, st, "s5", "e1", 5*time.Second)
}

func TestSerialReadsOnePathAtATime(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	j := filepath.Join(dir, "s6.jsonl")
	appendLine(t, j, header("s6"))
	for i := range 200 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("f%d", i-1)
		}
		appendLine(t, j, userLine(fmt.Sprintf("f%d", i), parent, "x"))
	}
	s := NewSerial(st)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := s.File(j, nil)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	si, err := st.Session("s6")
	if err != nil {
		t.Fatal(err)
	}
	if si.Entries != 200 {
		t.Errorf("%d entries stored, want 200", si.Entries)
	}
	if len(s.locks) != 0 {
		t.Errorf("%d path locks left behind", len(s.locks))
	}
}

// TestWatcherFirstScanStoresOldestSessionsFirst: the scan at start reads
// the journals in the order their sessions began, across projects, so that
// seqs (the order of "oldest first") follow the sessions' dates rather than
// their directories' names.
func TestWatcherFirstScanStoresOldestSessionsFirst(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	files := []struct{ dir, name, sid string }{
		{"--a--", "2026-02-01T10-00-00-000Z_s3.jsonl", "s3"},
		{"--b--", "2025-07-01T10-00-00-000Z_s1.jsonl", "s1"},
		{"--c--", "2025-12-01T10-00-00-000Z_s2.jsonl", "s2"},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.dir, f.name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		appendLine(t, p, header(f.sid))
		appendLine(t, p, userLine(f.sid+"-1", "", "hello"))
	}
	// One worker: the reads happen in the order they were queued.
	w := NewWatcher(st, []string{dir}, WatchOptions{Rescan: time.Hour, Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var seqs []uint64
	for _, sid := range []string{"s1", "s2", "s3"} {
		waitStored(t, st, sid, sid+"-1", 10*time.Second)
		seq, _ := st.Lookup(sid, sid+"-1")
		seqs = append(seqs, seq)
	}
	if seqs[0] >= seqs[1] || seqs[1] >= seqs[2] {
		t.Errorf("seqs of sessions begun in 2025-07, 2025-12, 2026-02: %v; want them rising", seqs)
	}
}

// TestWatcherForgetsJournalsThatAreGone: what the watcher keeps per journal
// is dropped when the journal is deleted (on its event) or moved away with
// its directory (at the next rescan), so that months of sessions come and
// gone do not pile up in its maps.
func TestWatcherForgetsJournalsThatAreGone(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	w := startWatcher(t, st, dir)
	kept := filepath.Join(dir, "--p--", "kept.jsonl")
	deleted := filepath.Join(dir, "--p--", "deleted.jsonl")
	moved := filepath.Join(dir, "--q--", "moved.jsonl")
	for _, p := range []string{kept, deleted, moved} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		sid := filepath.Base(p)
		appendLine(t, p, header(sid))
		appendLine(t, p, userLine(sid+"-1", "", "hello"))
		waitStored(t, st, sid, sid+"-1", 10*time.Second)
	}
	known := func() (n int, paths []string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for p := range w.files {
			paths = append(paths, p)
		}
		for p := range w.seen {
			if w.files[p] == nil {
				paths = append(paths, p)
			}
		}
		return len(paths), paths
	}
	waitKnown := func(want int, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, paths := known()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the watcher still keeps %v; want %d path(s)", why, paths, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitKnown(3, "after three journals were read")
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	waitKnown(2, "after a journal was deleted")
	if err := os.Rename(filepath.Dir(moved), filepath.Join(t.TempDir(), "elsewhere")); err != nil {
		t.Fatal(err)
	}
	w.Rescan()
	waitKnown(1, "after a directory was moved away and a rescan")
	// What was read stays stored.
	if _, err := st.Lookup("moved.jsonl", "moved.jsonl-1"); err != nil {
		t.Errorf("a moved journal's entries: %v", err)
	}
}
