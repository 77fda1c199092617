package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/service"
)

// dirState lists every file under dir with its size and modification time,
// a line each, in path order.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, fmt.Sprintf("%s %d %s", rel, info.Size(), info.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// stateDiff names the lines of a that b lacks and those of b that a lacks.
func stateDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func shareEnv(t *testing.T) *testEnv {
	e := newTestEnv(t)
	e.journal("p", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"find the shared needle"}}`,
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"the shared needle is here"}]}}`)
	e.importAll(false)
	return e
}

// TestCommandsThatReadWriteNothingToTheDataDirectory: after an import, the
// commands that only read open the data directory for reading only
// (decision 490): no file in it is created, changed or removed.
func TestCommandsThatReadWriteNothingToTheDataDirectory(t *testing.T) {
	e := shareEnv(t)
	before := dirState(t, e.data)
	for _, args := range [][]string{
		{"search", "--color", "never", "shared needle"},
		{"search", "--all", "--count", "--json", "shared needle"},
		{"show", "s1"},
		{"export", "--format", "md", "s1"},
		{"sessions"},
		{"stats"},
	} {
		out := e.mustCLI(args...)
		if args[0] == "search" && !strings.Contains(out, "shared needle") {
			t.Errorf("%v found nothing: %q", args, out)
		}
		if diff := stateDiff(before, dirState(t, e.data)); diff != "" {
			t.Fatalf("pi-history %s changed the data directory:\n%s", strings.Join(args, " "), diff)
		}
	}
}

// TestCommandsThatReadRunBesideEachOther: a command that reads does not
// wait for another that reads (both hold the lock shared); a writer is
// still waited for (TestACommandWaitsForAnotherHoldingTheDataDirectory).
func TestCommandsThatReadRunBesideEachOther(t *testing.T) {
	e := shareEnv(t)
	defer func(w, tell, poll time.Duration) { lockWait, lockTell, lockPoll = w, tell, poll }(lockWait, lockTell, lockPoll)
	lockWait, lockTell, lockPoll = 200*time.Millisecond, time.Millisecond, time.Millisecond
	other, err := datadir.AcquireWith(e.data, datadir.Mode{Shared: true}) // another reader
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	out, errOut, code := e.cli("search", "--color", "never", "shared needle")
	if code != 0 || !strings.Contains(out, "«shared needle»") {
		t.Fatalf("search beside another reader: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(errOut, "waiting") {
		t.Errorf("search waited for another reader: %q", errOut)
	}
}

// TestAReadingCommandDoesTheUpkeepOnce: when the index lacks entries (its
// open run was not saved: a server killed after taking entries in), the
// first command that reads opens the data directory for writing and
// waits for the index to catch up; the next one finds nothing due and
// writes nothing.
func TestAReadingCommandDoesTheUpkeepOnce(t *testing.T) {
	e := shareEnv(t)
	saved := filepath.Join(e.data, "index", "open.pg")
	if err := os.Remove(saved); err != nil {
		t.Fatalf("the import left no saved open run to remove: %v", err)
	}
	for i := range 2 {
		before := dirState(t, e.data)
		if out := e.mustCLI("search", "--color", "never", "shared needle"); !strings.Contains(out, "«shared needle»") {
			t.Fatalf("search %d found nothing: %q", i+1, out)
		}
		diff := stateDiff(before, dirState(t, e.data))
		if i == 0 && !strings.Contains(diff, "+ index/open.pg") {
			t.Fatalf("the first search after the open run was lost did not save it again; the directory changed by:\n%s", diff)
		}
		if i == 1 && diff != "" {
			t.Fatalf("the second search changed the data directory:\n%s", diff)
		}
	}
}

// TestServeWaitsForACommandHoldingTheDataDirectory: serve started while a
// command holds the data directory waits for it, saying so, up to
// serveLockWait; past it, it fails saying for whom it waited; with a server
// answering for the directory it fails at once, naming it.
func TestServeWaitsForACommandHoldingTheDataDirectory(t *testing.T) {
	e := shareEnv(t)
	defer func(w, tell, poll time.Duration) { serveLockWait, lockTell, lockPoll = w, tell, poll }(serveLockWait, lockTell, lockPoll)
	serveLockWait, lockTell, lockPoll = 5*time.Second, 10*time.Millisecond, 5*time.Millisecond
	var logs strings.Builder
	g := &globals{data: e.data, log: slog.New(slog.NewTextHandler(&logs, nil))}

	reader, err := datadir.AcquireWith(e.data, datadir.Mode{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		reader.Release()
	}()
	start := time.Now()
	svc, err := g.openToServe(service.Options{DataDir: e.data})
	if err != nil {
		t.Fatalf("serve beside a command that ended after 200 ms: %v", err)
	}
	svc.Close()
	if waited := time.Since(start); waited < 150*time.Millisecond || !strings.Contains(logs.String(), "waiting for another process") {
		t.Errorf("serve opened after %s, logging %q; want it to wait for the reader and say so", waited, logs.String())
	}

	serveLockWait = 50 * time.Millisecond
	writer, err := datadir.Acquire(e.data)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.openToServe(service.Options{DataDir: e.data})
	writer.Release()
	if err == nil || !strings.Contains(err.Error(), "waited 50ms for process") || !strings.Contains(err.Error(), "run the command again") {
		t.Fatalf("serve while a command held the directory past the wait: %v; want how long it waited, for whom, and what to do", err)
	}

	e.serve()
	start = time.Now()
	_, err = g.openToServe(service.Options{DataDir: e.data})
	if err == nil || !strings.Contains(err.Error(), "a server answers at "+e.url) || time.Since(start) > time.Second {
		t.Fatalf("serve beside a running server: %v after %s; want at once an error naming it", err, time.Since(start))
	}
}

// TestAWaitForTheDataDirectoryEndsWithItsContext: a command waiting for
// another holding the data directory stops waiting when its context ends
// (an import's or an archive export's Ctrl-C), saying so, instead of
// waiting out lockWait.
func TestAWaitForTheDataDirectoryEndsWithItsContext(t *testing.T) {
	e := shareEnv(t)
	defer func(w, poll time.Duration) { lockWait, lockPoll = w, poll }(lockWait, lockPoll)
	lockWait, lockPoll = 5*time.Second, 5*time.Millisecond
	writer, err := datadir.Acquire(e.data)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Release()
	g := &globals{data: e.data, log: slog.New(slog.DiscardHandler), stderr: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = g.existingOrRemote(ctx, true)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "interrupted while waiting for process") {
		t.Fatalf("a wait whose context ended: %v; want it interrupted, naming what it waited for", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("the wait went on %s after its context ended", waited)
	}
}

// TestAReadingCommandSaysWhenUpkeepTakesLong: a command that finds the
// index missing (its files deleted, as after a disk was cleaned) rebuilds
// it before answering and, past settleTell, says what it is doing; its
// answer is whole.
func TestAReadingCommandSaysWhenUpkeepTakesLong(t *testing.T) {
	e := newTestEnv(t)
	lines := []string{`{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}`}
	parent := "null"
	for i := range 20000 {
		id := fmt.Sprintf("e%07d", i)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"entry %d of a long session"}}`, id, parent, i))
		parent = `"` + id + `"`
	}
	e.journal("p", "big", lines...)
	e.importAll(false)
	ents, err := os.ReadDir(filepath.Join(e.data, "index"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		os.Remove(filepath.Join(e.data, "index", d.Name()))
	}
	defer func(w, tell time.Duration) { settleWait, settleTell = w, tell }(settleWait, settleTell)
	settleWait, settleTell = time.Minute, time.Millisecond
	out, errOut, code := e.cli("search", "--count", "--color", "never", "of a long session")
	if code != 0 || !strings.Contains(out, "20000 hits in all") {
		t.Fatalf("search after the index was deleted: exit %d\nstdout: %.300s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "bringing "+e.data+" up to date first (") || !strings.Contains(errOut, "entries for the index to take in") {
		t.Errorf("a long upkeep said nothing of itself: %q", errOut)
	}
	before := dirState(t, e.data)
	e.mustCLI("search", "--count", "of a long session")
	if diff := stateDiff(before, dirState(t, e.data)); diff != "" {
		t.Errorf("the search after the upkeep changed the data directory:\n%s", diff)
	}
}
