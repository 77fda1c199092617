package ingest

import (
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestWatcherReportsEverySkip: each file or directory the watcher cannot
// use is logged once (per file and cause), listed with its reason in the
// watcher's status, and counted, however often it is seen again; a
// journal's skipped line likewise.
func TestWatcherReportsEverySkip(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	proj := filepath.Join(root, "--p--")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 4096)
	rand.New(rand.NewSource(41)).Read(garbage)
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	files := map[string]string{
		"noheader.jsonl": userLine("a", "", "a journal without its header") + "\n",
		"garbage.jsonl":  string(garbage),
		"binary.jsonl":   "\x00\x01\x02binary, and no line end",
		"deep.jsonl": header("deep") + "\n" +
			`{"type":"message","id":"d1","parentId":null,"message":{"role":"user","content":` + deep + `}}` + "\n" +
			userLine("d2", "", "the line after") + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{ // path: a part of its reason
		filepath.Join(proj, "noheader.jsonl"): "not a session header",
		filepath.Join(proj, "garbage.jsonl"):  "not a Pi journal",
		filepath.Join(proj, "binary.jsonl"):   "binary data",
		filepath.Join(proj, "deep.jsonl"):     "nest more than",
		filepath.Join(root, "--slash--"):      "outside",
	}
	if err := os.Symlink("/", filepath.Join(root, "--slash--")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root reads a directory whatever its mode
		locked := filepath.Join(root, "--locked--")
		if err := os.Mkdir(locked, 0o755); err != nil {
			t.Fatal(err)
		}
		appendLine(t, filepath.Join(locked, "s.jsonl"), header("locked"))
		os.Chmod(locked, 0)
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		want[locked] = "cannot read the directory"
	}
	var logBuf testutil.LogBuffer
	w := runWatcher(t, st, []string{root}, WatchOptions{Rescan: time.Hour, Log: slog.New(slog.NewTextHandler(&logBuf, nil))})
	waitStored(t, st, "deep", "d2", 5*time.Second)

	check := func(when string) {
		t.Helper()
		var ws WatchStatus
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			if ws = w.Status(); len(ws.Skipped) >= len(want) || time.Now().After(deadline) {
				break
			}
		}
		listed := map[string]Skip{}
		for _, s := range ws.Skipped {
			listed[s.Path] = s
		}
		for p, reason := range want {
			s, ok := listed[p]
			if !ok {
				t.Errorf("%s: %s is not among the skips listed: %+v", when, p, ws.Skipped)
				continue
			}
			if !strings.Contains(s.Reason, reason) {
				t.Errorf("%s: %s skipped for %q; want a reason with %q", when, p, s.Reason, reason)
			}
			if n := strings.Count(logBuf.String(), "path="+p+" "); n != 1 {
				t.Errorf("%s: %s logged %d times; want once:\n%s", when, p, n, logBuf.String())
			}
		}
		if len(ws.Skipped) != len(want) || ws.Skips != uint64(len(want)) {
			t.Errorf("%s: %d skips listed, %d counted; want %d: %+v", when, len(ws.Skipped), ws.Skips, len(want), ws.Skipped)
		}
		if s := listed[filepath.Join(proj, "deep.jsonl")]; s.Line != 2 {
			t.Errorf("%s: the deep line is reported at line %d; want 2", when, s.Line)
		}
	}
	check("after the first scan")

	// Seen again (appends, a rescan): not logged or counted again.
	appendLine(t, filepath.Join(proj, "noheader.jsonl"), userLine("b", "a", "still no header"))
	appendLine(t, filepath.Join(proj, "deep.jsonl"), userLine("d3", "d2", "appended"))
	waitStored(t, st, "deep", "d3", 5*time.Second)
	before := w.Status().LastRescan
	w.Rescan()
	for deadline := time.Now().Add(5 * time.Second); w.Status().LastRescan.Equal(before); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rescan did not run")
		}
	}
	check("after appends and a rescan")

	// A file that becomes a journal is no longer listed (still counted).
	if err := os.WriteFile(filepath.Join(proj, "noheader.jsonl"), []byte(header("fixed")+"\n"+userLine("f1", "", "fixed")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitStored(t, st, "fixed", "f1", 5*time.Second)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		ws := w.Status()
		if len(ws.Skipped) == len(want)-1 && ws.Skips == uint64(len(want)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the header-less file got a header: %d skips listed, %d counted; want %d, %d: %+v", len(ws.Skipped), ws.Skips, len(want)-1, len(want), ws.Skipped)
		}
	}
}

// TestAnUnfinishedFirstLineThatCannotBeAHeaderIsReported: a file whose
// only line is unfinished is read as a journal being written (nothing
// reported, the line waits) unless the line can never become a session
// header: binary data, or longer than any header.
func TestAnUnfinishedFirstLineThatCannotBeAHeaderIsReported(t *testing.T) {
	cases := []struct {
		name, text string
		reported   bool
	}{
		{"a header being written", `{"type":"session","version":3,"id":"w","timest`, false},
		{"binary data", "\x7fELF\x02\x01\x01\x00\x00", true},
		{"a line longer than any header", strings.Repeat("x", maxHeaderBytes+1), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := File(openStore(t), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rep.Problems) == 1 && rep.Problems[0].Unread; got != c.reported || rep.Added != 0 {
				t.Errorf("read as %+v; want reported as not a journal: %v", rep, c.reported)
			}
		})
	}
}
