package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/search"
)

func TestFindJournalsTakesArchivesInDirectories(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{
		"--p--/a.jsonl", "--p--/notes.txt", "--p--/b.jsonl.zst",
		"backups/2025.tar.zst", "backups/old/2024.TZST", "backups/2023.tar.gz",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
			t.Fatal(err)
		}
		// One time for all: files not named by Pi are ordered by it,
		// then by path (see TestImportStoresSessionsOldestFirst).
		same := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(p, same, same); err != nil {
			t.Fatal(err)
		}
	}
	direct := filepath.Join(root, "--p--", "notes.txt")
	files, total, err := FindJournals([]string{root, direct})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "--p--", "a.jsonl"),
		direct, // named on its own: taken as a journal
		filepath.Join(root, "backups", "2025.tar.zst"),
		filepath.Join(root, "backups", "old", "2024.TZST"),
	}
	if !reflect.DeepEqual(files, want) || total != 40 {
		t.Errorf("FindJournals: %v (%d bytes)\nwant %v (40 bytes)", files, total, want)
	}
	if _, _, err := FindJournals([]string{filepath.Join(root, "missing")}); err == nil {
		t.Error("a missing path is not an error")
	}
	// A sessions directory that is a link (to another disk, say) is read,
	// its journals named under the link.
	link := filepath.Join(t.TempDir(), "sessions")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	files, _, err = FindJournals([]string{link})
	if err != nil || len(files) != 3 || files[0] != filepath.Join(link, "--p--", "a.jsonl") {
		t.Errorf("FindJournals through a link: %v %v", files, err)
	}
}

// TestWarmPreloadsEveryBranch: a service's warm-up loads every session's
// current branch.
func TestWarmPreloadsEveryBranch(t *testing.T) {
	svc, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, sid := range []string{"s1", "s2", "s3"} {
		h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
		e := &journal.Entry{Type: "message", Role: "user", ID: sid + "-a", Raw: []byte(`{"id":"a"}`), Text: "hello " + sid, Searchable: true}
		if _, err := svc.Store.Push(sid, h, []*journal.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	var more []*journal.Entry
	for i := range 32 {
		id := fmt.Sprintf("s4-%02d", i)
		more = append(more, &journal.Entry{Type: "message", Role: "user", ID: id, Raw: []byte(`{"id":"` + id + `"}`), Text: "hello " + id, Searchable: true})
	}
	if _, err := svc.Store.Push("s4", &journal.Header{ID: "s4", Version: 3, Raw: []byte(`{"type":"session","id":"s4"}`)}, more); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := svc.Warm(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Branches != 4 {
		t.Errorf("Warm = %+v; want 4 sessions' branches", w)
	}
}

// TestImportStoresSessionsOldestFirst: an import stores sessions in the
// order they began, not in the order of their directories' names, so that
// a search of every session, oldest first, starts at the oldest session's
// hit. Sorted by path, project "a"'s sessions of 2026 came first. It
// keeps their current branches for the next process.
func TestImportStoresSessionsOldestFirst(t *testing.T) {
	svc, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { svc.Close() }()
	root := t.TempDir()
	for _, f := range []struct{ dir, stamp, id string }{
		{"--a--", "2026-02-01T10-00-00-000Z", "a-new"},
		{"--a--", "2025-11-01T10-00-00-000Z", "a-old"},
		{"--z--", "2025-06-01T10-00-00-000Z", "z-oldest"},
		{"--m--", "2026-01-01T10-00-00-000Z", "m-mid"},
	} {
		ts := f.stamp[:13] + ":" + f.stamp[14:16] + ":" + f.stamp[17:19] + "." + f.stamp[20:]
		text := `{"type":"session","version":3,"id":"` + f.id + `","timestamp":"` + ts + `","cwd":"/w"}` + "\n" +
			`{"type":"message","id":"` + f.id + `-1","parentId":null,"timestamp":"` + ts + `","message":{"role":"user","content":"needle in ` + f.id + `"}}` + "\n"
		p := filepath.Join(root, f.dir, f.stamp+"_"+f.id+".jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Import(context.Background(), []string{root}, nil); err != nil {
		t.Fatal(err)
	}
	if n := svc.Store.BranchesWorkedOut(); n != 4 {
		t.Errorf("the import worked out %d current branches; want the 4 sessions'", n)
	}
	resp, err := search.New(svc.Store, svc.Index).Search(context.Background(), &search.Request{Needle: "needle", Scope: search.ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range resp.Hits {
		got = append(got, h.Session)
	}
	if want := []string{"z-oldest", "a-old", "m-mid", "a-new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hits oldest first come from %v, want %v", got, want)
	}
	// The next process reads the branches the import kept.
	dir := filepath.Dir(svc.Store.Dir())
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if svc, err = Open(Options{DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := search.New(svc.Store, svc.Index).Search(context.Background(), &search.Request{Needle: "needle", Scope: search.ScopeAll}); err != nil {
		t.Fatal(err)
	}
	if n := svc.Store.BranchesWorkedOut(); n != 0 {
		t.Errorf("after a reopen, a search of every session worked out %d branches; want them read back", n)
	}
}

// TestImportWaitsForOtherReadersOfAFile: an import of a journal the
// watcher (or a sync) is reading waits for that read to end instead of
// reading the file at the same time; otherwise, after a rewrite, both would
// replace the session and the entries' order could end up wrong.
func TestImportWaitsForOtherReadersOfAFile(t *testing.T) {
	svc, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	text := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"
	for i := 0; i < 3; i++ {
		text += fmt.Sprintf(`{"type":"message","id":"e%d","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello %d"}}`+"\n", i, i)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another reader of p (the watcher's read) stops inside its read.
	inside, release := make(chan struct{}), make(chan struct{})
	go svc.Serial().File(p, func(int64, int) {
		close(inside)
		<-release
	})
	<-inside
	imported := make(chan error, 1)
	go func() {
		_, err := svc.Import(context.Background(), []string{p}, nil)
		imported <- err
	}()
	select {
	case err := <-imported:
		close(release)
		t.Fatalf("the import read the file while another reader was inside it (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-imported:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the import did not end once the other reader had")
	}
}

// TestImportSaysWhatItLeavesOut: an import of a directory holding links
// that lead out of it (to /, to a journal elsewhere) reads only the
// directory's own journals, at once, and lists each link left out.
func TestImportSaysWhatItLeavesOut(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	header := func(sid string) string {
		return `{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"
	}
	for p, sid := range map[string]string{filepath.Join(root, "--p--", "a.jsonl"): "a", filepath.Join(outside, "o.jsonl"): "o"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(header(sid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"--slash--": "/", "linked.jsonl": filepath.Join(outside, "o.jsonl")}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sum, err := svc.Import(ctx, []string{root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 1 || sum.Sessions != 1 {
		t.Errorf("imported %d files, %d sessions; want 1, 1 (the directory's own journal)", sum.Files, sum.Sessions)
	}
	listed := map[string]bool{}
	for _, p := range sum.Problems {
		if strings.Contains(p.Reason, "outside") {
			listed[filepath.Base(p.File)] = true
		}
	}
	for link := range links {
		if !listed[link] {
			t.Errorf("the link %s is not among the problems: %+v", link, sum.Problems)
		}
	}
}
