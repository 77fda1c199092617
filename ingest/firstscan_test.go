package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestFirstScanSaysHowFarItIsAndWhenItEnds: a watcher's first reading of
// the sessions directories is logged when it starts and ends, and its
// status counts the journals, bytes and entries read until it is done;
// a later journal is not part of it.
func TestFirstScanSaysHowFarItIsAndWhenItEnds(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	var total int64
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("--p%d--", i%2), fmt.Sprintf("s%d.jsonl", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		appendLine(t, p, header(fmt.Sprintf("s%d", i)))
		for k := range 3 {
			appendLine(t, p, userLine(fmt.Sprintf("e%d", k), "", "hello"))
		}
		info, _ := os.Stat(p)
		total += info.Size()
	}
	var logs testutil.LogBuffer
	w := NewWatcher(st, []string{dir}, WatchOptions{Rescan: time.Hour, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, ok := w.FirstScan(); ok {
		t.Error("a first scan is reported before the watcher ran")
	}
	scanned := w.FirstScanDone()
	select {
	case <-scanned:
		t.Error("FirstScanDone is closed before the watcher ran")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fs, ok := w.FirstScan()
		if ok && fs.Done {
			if fs.Files != 5 || fs.FilesDone != 5 || fs.Bytes != total || fs.BytesDone != total || fs.Entries != 15 || fs.Took <= 0 {
				t.Errorf("first scan done: %+v; want 5 journals, %d bytes, 15 entries", fs, total)
			}
			select {
			case <-scanned:
			default:
				t.Error("FirstScanDone is still open after the first scan is done")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first scan not done after 10s: %+v (ok %v)", fs, ok)
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := logs.String()
	if !strings.Contains(out, "reading Pi's sessions") || !strings.Contains(out, "journals=5") || !strings.Contains(out, "read every journal of Pi's sessions") || !strings.Contains(out, "entries=15") {
		t.Errorf("the log does not tell the first scan's start and end:\n%s", out)
	}
	if st := w.Status(); st.FirstScan == nil || !st.FirstScan.Done {
		t.Errorf("Status().FirstScan = %+v", st.FirstScan)
	}
	// A journal written afterwards is live ingest, not the first scan.
	p := filepath.Join(dir, "--p0--", "late.jsonl")
	appendLine(t, p, header("late"))
	appendLine(t, p, userLine("l1", "", "late"))
	waitStored(t, st, "late", "l1", 10*time.Second)
	if fs, _ := w.FirstScan(); fs.Files != 5 || fs.Entries != 15 {
		t.Errorf("a later journal changed the first scan: %+v", fs)
	}
}

// TestFirstScanOfNothingIsDoneAtOnce: an empty sessions directory makes a
// first scan that is done, and logs nothing about reading.
func TestFirstScanOfNothingIsDoneAtOnce(t *testing.T) {
	st := openStore(t)
	var logs testutil.LogBuffer
	w := NewWatcher(st, []string{t.TempDir()}, WatchOptions{Rescan: time.Hour, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if fs, ok := w.FirstScan(); ok {
			if !fs.Done || fs.Files != 0 {
				t.Errorf("first scan of nothing: %+v", fs)
			}
			select {
			case <-w.FirstScanDone():
			default:
				t.Error("FirstScanDone is open after a first scan of nothing")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no first scan after 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if strings.Contains(logs.String(), "reading Pi's sessions") {
		t.Errorf("an empty directory logged a reading: %s", logs.String())
	}
}
