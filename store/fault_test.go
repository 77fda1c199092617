package store

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pi-history/pi-history/internal/testutil"
)

// faultFS is the operating system's file system, with the free space it
// reports and the failure of writes under a test's control.
type faultFS struct {
	testutil.ShortFS             // the free space it reports (Avail; 0: what the disk says)
	failWrites       atomic.Bool // writes and syncs of files fail with EIO
	failTextSyncs    atomic.Bool // syncs of the text file fail with EIO
}

func (f *faultFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return file, err
	}
	return &faultFile{File: file, fs: f, text: filepath.Base(name) == textLogName}, nil
}

func (f *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(name, file, err)
}

func (f *faultFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	return f.wrap(newname, file, err)
}

func (f *faultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(name, file, err)
}

// faultFile is a log file of a faultFS.
type faultFile struct {
	vfs.File
	fs   *faultFS
	text bool // the text file
}

func (f *faultFile) fail() error {
	if f.fs.failWrites.Load() {
		return &os.PathError{Op: "write", Path: "file", Err: syscall.EIO}
	}
	return nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fail(); err != nil {
		return err
	}
	if f.text && f.fs.failTextSyncs.Load() {
		return &os.PathError{Op: "sync", Path: "file", Err: syscall.EIO}
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

// logger is a text logger into b.
func logger(b *testutil.LogBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// captureStderr runs fn with os.Stderr sent to a pipe and returns what was
// written to it.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	defer func() {
		os.Stderr = saved
	}()
	fn()
	os.Stderr = saved
	w.Close()
	return <-got
}

// TestFullDiskStopsWritesNotReadsAndTheyResumeByThemselves: with less
// free space than the reserve, writes are refused before they reach
// Pebble (whose failed commits end the process) and reads go on; the log
// says so once, however many writes are refused, and once more when space
// is back, which happens without anyone retrying; what was refused is
// then stored in full.
func TestFullDiskStopsWritesNotReadsAndTheyResumeByThemselves(t *testing.T) {
	fs := &faultFS{ShortFS: testutil.ShortFS{FS: vfs.Default}}
	var log testutil.LogBuffer
	st, err := OpenWith(filepath.Join(t.TempDir(), "store"), Options{FS: fs, Log: logger(&log), ProbeEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 0, 5, 100, true)); err != nil {
		t.Fatal(err)
	}

	fs.Avail.Store(1 << 20)
	resumed := st.WritesResumed()
	for i := range 3 {
		_, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 5, 5, 200, false))
		if !errors.Is(err, ErrWritesStopped) {
			t.Fatalf("write %d on a full disk: %v; want ErrWritesStopped", i, err)
		}
	}
	if _, err := st.Push("a", nil, bulkBatch("/j/a.jsonl", "a", 50, 1, 0, false).Entries); !errors.Is(err, ErrWritesStopped) {
		t.Fatalf("push on a full disk: %v; want ErrWritesStopped", err)
	}
	fl := st.Faults()
	if len(fl) != 1 || fl[0].Part != "writes" || fl[0].Restart || !strings.Contains(fl[0].Cause, "free") {
		t.Fatalf("faults on a full disk: %+v; want one writes fault naming the free space", fl)
	}
	if st.LastSeq() != 5 {
		t.Errorf("LastSeq = %d after refused writes; want 5", st.LastSeq())
	}
	if raw, err := st.Raw(3); err != nil || !bytes.Contains(raw, []byte("a-0002")) {
		t.Errorf("reading entry 3 on a full disk: %q, %v", raw, err)
	}
	if fs, err := st.FileState("/j/a.jsonl"); err != nil || fs.Offset != 100 {
		t.Errorf("the refused writes moved the file's read position: %+v, %v; want offset 100", fs, err)
	}
	select {
	case <-resumed:
		t.Fatal("writes resumed while the disk is still full")
	case <-time.After(50 * time.Millisecond):
	}

	fs.Avail.Store(0) // the disk's own figure: plenty
	select {
	case <-resumed:
	case <-time.After(5 * time.Second):
		t.Fatal("writes did not resume by themselves within 5s of space coming back")
	}
	if fl := st.Faults(); len(fl) != 0 {
		t.Errorf("faults once space is back: %+v; want none", fl)
	}
	res, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 5, 5, 200, false))
	if err != nil || res.Added != 5 {
		t.Fatalf("the refused batch once space is back: %+v, %v; want 5 added", res, err)
	}
	for i := range 10 {
		if _, err := st.Lookup("a", bulkBatch("", "a", i, 1, 0, false).Entries[0].ID); err != nil {
			t.Errorf("entry %d missing after writes resumed: %v", i, err)
		}
	}
	if n := strings.Count(log.String(), `msg="store: writes stopped`); n != 1 {
		t.Errorf("the log says %d times that writes stopped; want once:\n%s", n, log.String())
	}
	if n := strings.Count(log.String(), `msg="store: writes resumed`); n != 1 {
		t.Errorf("the log says %d times that writes resumed; want once:\n%s", n, log.String())
	}
}

// TestAFailedWriteStopsWritesNotTheProcess: a write to Pebble's log that
// fails (an I/O error the free-space check cannot foresee) makes Pebble
// give up on its commit pipeline and call its logger's Fatalf, which used
// to exit the process. Now that commit fails, the store refuses writes
// until a restart and says so once in the structured log (nothing on
// stderr), reads go on, it asks for the restart once the disk takes
// writes again (not before), Close returns, and a store opened again
// holds every write acknowledged before the failure.
func TestAFailedWriteStopsWritesNotTheProcess(t *testing.T) {
	fs := &faultFS{ShortFS: testutil.ShortFS{FS: vfs.Default}}
	var log testutil.LogBuffer
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{FS: fs, Log: logger(&log), ProbeEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 0, 5, 100, true)); err != nil {
		t.Fatal(err)
	}
	fs.failWrites.Store(true)
	stderr := captureStderr(t, func() {
		_, err = st.Apply(bulkBatch("/j/a.jsonl", "a", 5, 5, 200, false))
		if !errors.Is(err, ErrWritesStopped) {
			t.Errorf("a write whose log write fails: %v; want ErrWritesStopped", err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 5, 5, 200, false))
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrWritesStopped) {
				t.Errorf("the next write: %v; want ErrWritesStopped", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the next write did not return within 5s")
		}
		if raw, err := st.Raw(5); err != nil || !bytes.Contains(raw, []byte("a-0004")) {
			t.Errorf("reading entry 5 after the failure: %q, %v", raw, err)
		}
		if got := st.LastSeq(); got != 5 {
			t.Errorf("LastSeq = %d after the failed write; want 5 (the index must not be told of a write that failed)", got)
		}
		fl := st.Faults()
		if len(fl) == 0 || fl[0].Part != "writes" || !fl[0].Restart || !strings.Contains(fl[0].Cause, "input/output error") {
			t.Errorf("faults after the failed write: %+v; want a writes fault that needs a restart, naming the I/O error", fl)
		}
		select {
		case <-st.RestartWanted():
			t.Error("a restart was asked for while the disk still fails writes")
		case <-time.After(50 * time.Millisecond):
		}
		fs.failWrites.Store(false)
		select {
		case <-st.RestartWanted():
		case <-time.After(5 * time.Second):
			t.Error("no restart asked for within 5s of the disk taking writes again")
		}
		st.Close()
	})
	if stderr != "" {
		t.Errorf("Pebble wrote to stderr:\n%s", stderr)
	}
	if n := strings.Count(log.String(), "a write failed inside Pebble"); n != 1 {
		t.Errorf("the log says %d times that a write failed; want once:\n%s", n, log.String())
	}

	fs.failWrites.Store(false)
	st, err = OpenWith(dir, Options{FS: fs})
	if err != nil {
		t.Fatalf("opening the store again after the failed write: %v", err)
	}
	defer st.Close()
	for i := range 5 {
		if _, err := st.Lookup("a", bulkBatch("", "a", i, 1, 0, false).Entries[0].ID); err != nil {
			t.Errorf("acknowledged entry %d lost after the failed write: %v", i, err)
		}
	}
	if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 5, 5, 200, false)); err != nil {
		t.Errorf("writing after the restart: %v", err)
	}
}

// TestPebbleErrorsAreLoggedOnceUntilTheyClear: Pebble's background errors
// (a flush failing on a full disk is retried many times a second) reach
// the structured log once, and once more when a flush or compaction
// succeeds again; meanwhile the store reports a background fault.
func TestPebbleErrorsAreLoggedOnceUntilTheyClear(t *testing.T) {
	var log testutil.LogBuffer
	f := &faults{log: logger(&log), dir: "/d", resumed: make(chan struct{})}
	l, ev := pebbleLogger{f}, f.eventListener()
	stderr := captureStderr(t, func() {
		for range 40 {
			ev.BackgroundError(errors.New("flush: no space left on device"))
			l.Errorf("deleting obsolete file %s: %v", "000012.sst", syscall.ENOSPC)
		}
		l.Infof("chatter")
	})
	if stderr != "" {
		t.Errorf("Pebble's messages reached stderr:\n%s", stderr)
	}
	fl := f.list()
	if len(fl) != 1 || fl[0].Part != "background" || !strings.Contains(fl[0].Cause, "no space") {
		t.Errorf("faults: %+v; want one background fault naming the cause", fl)
	}
	ev.FlushEnd(pebble.FlushInfo{Err: errors.New("still failing")})
	if len(f.list()) != 1 {
		t.Error("a failed flush cleared the background fault")
	}
	ev.FlushEnd(pebble.FlushInfo{})
	if fl := f.list(); len(fl) != 0 {
		t.Errorf("faults after a flush succeeded: %+v; want none", fl)
	}
	if n := strings.Count(log.String(), "background work is failing"); n != 1 {
		t.Errorf("the log says %d times that background work fails; want once:\n%s", n, log.String())
	}
	if n := strings.Count(log.String(), "succeeds again"); n != 1 || !strings.Contains(log.String(), "repeats=79") {
		t.Errorf("the log says %d times that background work succeeds again, with the repeats; want once with repeats=79:\n%s", n, log.String())
	}
}
