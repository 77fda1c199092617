package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/store"
)

// TestLiveIngestResumesByItselfWhenSpaceComesBack: lines appended to a
// journal while the disk is full are not stored (the watcher's read is
// refused), and once space is back they are, at once: the watcher's
// periodic rescan (an hour here) is not what brings them in, and nothing
// appended meanwhile is lost.
func TestLiveIngestResumesByItselfWhenSpaceComesBack(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions")
	path := filepath.Join(sessions, "--w--", "2026-01-01T10-00-00-000Z_s0.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	appendJournal(t, path, "s0", 0, 3)
	fs := &testutil.ShortFS{FS: vfs.Default}
	svc, err := Open(Options{DataDir: filepath.Join(root, "data"), SessionsDirs: []string{sessions}, StoreFS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	refused := make(chan struct{}, 16)
	w := ingest.NewWatcher(svc.Store, []string{sessions}, ingest.WatchOptions{Serial: svc.Serial(), Rescan: time.Hour,
		OnIngest: func(_ string, _ ingest.FileReport, err error) {
			if errors.Is(err, store.ErrWritesStopped) {
				refused <- struct{}{}
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	svc.OnWritesResumed(ctx, w.Rescan)

	stored := func(id string) bool {
		_, err := svc.Store.Lookup("s0", id)
		return err == nil
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the journal's first lines stored", func() bool { return stored("s0-2") })

	fs.Avail.Store(1 << 20)
	appendJournal(t, path, "s0", 3, 6)
	select {
	case <-refused:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not try to read the appended lines within 5s")
	}
	if stored("s0-3") {
		t.Fatal("a line appended on a full disk was stored")
	}
	if f := svc.Store.Faults(); len(f) == 0 {
		t.Error("no fault reported while the disk is full")
	}

	fs.Avail.Store(0)
	waitFor("the lines appended on the full disk stored once space is back", func() bool { return stored("s0-5") })
	for i := 1; i < 6; i++ {
		if !stored(fmt.Sprintf("s0-%d", i)) {
			t.Errorf("line s0-%d lost", i)
		}
	}
	if st, err := svc.Stats(); err != nil || st.Entries != 5 {
		t.Errorf("stats after the fault cleared: %+v, %v; want 5 entries", st, err)
	}
}

// TestImportStopsAtAFullDisk: an import on a full disk stops at the first
// refused file with an error that says why, instead of listing every file
// as a problem, and imports everything once space is back.
func TestImportStopsAtAFullDisk(t *testing.T) {
	root := t.TempDir()
	sessions := filepath.Join(root, "sessions")
	for f := range 3 {
		p := filepath.Join(sessions, "--w--", fmt.Sprintf("2026-01-01T10-00-0%d-000Z_s%d.jsonl", f, f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		appendJournal(t, p, fmt.Sprintf("s%d", f), 0, 4)
	}
	fs := &testutil.ShortFS{FS: vfs.Default}
	fs.Avail.Store(1 << 20)
	svc, err := Open(Options{DataDir: filepath.Join(root, "data"), StoreFS: fs, Bulk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	sum, err := svc.Import(context.Background(), []string{sessions}, nil)
	if !errors.Is(err, store.ErrWritesStopped) || len(sum.Problems) != 0 {
		t.Fatalf("import on a full disk: %v, problems %+v; want ErrWritesStopped and no problem listed", err, sum.Problems)
	}
	fs.Avail.Store(0)
	sum, err = svc.Import(context.Background(), []string{sessions}, nil)
	if err != nil || sum.Entries != 9 {
		t.Fatalf("import once space is back: %+v, %v; want 9 entries", sum, err)
	}
}
