package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/datadir"
)

// exportJournal is a session with a side branch and a compaction (window 2).
func exportJournal(sid string) []string {
	return []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/dev/shop"}`, sid),
		srvLine("m1", "", "The checkout test fails with ErrCartEmpty"),
		srvLine("m2", "m1", "reading cart.go"),
		srvLine("b1", "m1", "an abandoned side branch"),
		`{"type":"compaction","id":"c1","parentId":"m2","timestamp":"2026-01-01T10:00:05.000Z","summary":"Summary: ErrCartEmpty comes from cart.go","firstKeptEntryId":"m2","tokensBefore":1000}`,
		srvLine("m3", "c1", "fix it please <script>alert(1)</script>"),
	}
}

// TestExportThroughTheServer exports the same sessions with the data
// directory opened here and through a running server: the same bytes on
// stdout and in files, the same messages and exit codes.
func TestExportThroughTheServer(t *testing.T) {
	e := newTestEnv(t)
	j1 := e.journal("--home-dev-shop--", "s1-aaaa", exportJournal("s1-aaaa")...)
	e.journal("--home-dev-shop--", "s1-bbbb", exportJournal("s1-bbbb")...)
	e.mustCLI("import")
	journal, _ := os.ReadFile(j1)

	type result struct {
		stdout, stderr string
		code           int
		file           string
	}
	cases := [][]string{
		{"s1-aaaa"},
		{"s1-a"},
		{j1},
		{"s1-aaaa", "--leaf", "m2"},
		{"s1-aaaa", "--format", "md"},
		{"s1-aaaa", "--format", "html", "--window", "2"},
		{"s1-aaaa", "--leaf", "b1", "--zstd", "-o", "OUT/b1.jsonl"},
		{"s1-aaaa", "-o", "OUT/s1.md.zst"},
		{"s1-aaaa", "-o", "OUT/exists.html"},
		{"nope"},
		{"s1-"},
		{"s1-aaaa", "--leaf", "zz"},
		{"s1-aaaa", "--window", "9"},
		{"s1-aaaa", "--format", "pdf"},
		{"--all", "-o", "OUT/all.tar.zst"},
		{"--project", "/home/dev/shop", "--since", "2026-01-01", "-o", "OUT/shop.tar.zst"},
		{"--project", "/home/dev/elsewhere", "-o", "OUT/none.tar.zst"},
		{"--since", "soon", "-o", "OUT/bad.tar.zst"},
		{"--all", "-o", "OUT/all.tar.zst"}, // exists now: refused without --force
		{"--until", "2020-01-01", "-o", "OUT/old.tar.zst"},
	}
	runAll := func(out string) []result {
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "exists.html"), []byte("keep me"), 0o644)
		var rs []result
		for _, c := range cases {
			args := append([]string{"export"}, c...)
			file := ""
			for i, a := range args {
				if strings.HasPrefix(a, "OUT/") {
					file = filepath.Join(out, strings.TrimPrefix(a, "OUT/"))
					args[i] = file
				}
			}
			stdout, stderr, code := e.cli(args...)
			// An archive's summary ends with its speed, which varies.
			stdout = archiveRate.ReplaceAllString(strings.ReplaceAll(stdout, out, "OUT"), "R MB/s")
			r := result{stdout: stdout, stderr: strings.ReplaceAll(stderr, out, "OUT"), code: code}
			if file != "" {
				b, _ := os.ReadFile(file)
				r.file = string(b)
			}
			rs = append(rs, r)
		}
		return rs
	}
	local := runAll(filepath.Join(t.TempDir(), "local"))
	if local[0].stdout != string(journal) || local[1].stdout != string(journal) || local[2].stdout != string(journal) {
		t.Fatalf("whole-session export is not the journal:\n%s", local[0].stdout)
	}
	if local[9].code != 1 || local[10].code != 1 || local[13].code != 2 || local[8].code != 1 || local[8].file != "keep me" {
		t.Fatalf("local failures: %+v", local[8:])
	}
	if a := local[14]; a.code != 0 || !strings.Contains(a.stdout, "2 sessions, 10 entries") || len(a.file) == 0 {
		t.Fatalf("local archive: %+v", a)
	}
	if a := local[15]; a.code != 0 || !strings.Contains(a.stdout, "2 sessions") {
		t.Fatalf("local project archive: %+v", a)
	}
	if a := local[16]; a.code != 1 || !strings.Contains(a.stderr, "no stored session matches") {
		t.Fatalf("archive matching nothing: %+v", a)
	}
	if a := local[17]; a.code != 2 || !strings.Contains(a.stderr, `time "soon"`) {
		t.Fatalf("archive with a bad time: %+v", a)
	}
	if a := local[18]; a.code != 1 || !strings.Contains(a.stderr, "--force") {
		t.Fatalf("archive over an existing file: %+v", a)
	}

	e.serve()
	remote := runAll(filepath.Join(t.TempDir(), "remote"))
	for i, c := range cases {
		if local[i] != remote[i] {
			t.Errorf("export %s differs through the server:\nlocal:  %+v\nremote: %+v", strings.Join(c, " "), local[i], remote[i])
		}
	}
}

var archiveRate = regexp.MustCompile(`[0-9.]+ MB/s`)

// TestExportThroughTheServerFailingMidway: when the server's stream breaks
// off, the export fails and leaves no file behind.
func TestExportThroughTheServerFailingMidway(t *testing.T) {
	e := newTestEnv(t)
	os.MkdirAll(e.data, 0o700)
	lock, err := datadir.Acquire(e.data) // the "server" owns the data directory
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	mux := http.NewServeMux()
	token := strings.Repeat("t", 64)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		// A stand-in that holds the token, as the real server does.
		json.NewEncoder(w).Encode(client.Health{Status: "ok", Proof: client.Proof(token, r.Host, r.URL.Query().Get("challenge"))})
	})
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"summary":{"id":"s1"}}`))
	})
	mux.HandleFunc("GET /v1/sessions/{id}/export", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(200)
		w.Write([]byte(strings.Repeat("x", 1000)))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("GET /v1/export/archive", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Pi-History-Archive")
		w.WriteHeader(200)
		w.Write([]byte(strings.Repeat("z", 500)))
		if r.URL.Query().Get("project") != "" {
			return // ends cleanly, but without its account: incomplete
		}
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = nil
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	api.WriteServerInfo(e.data, client.ServerInfo{Addr: "127.0.0.1:" + port, PID: 1, URL: srv.URL})
	os.WriteFile(filepath.Join(e.data, client.TokenFile), []byte(token), 0o600)

	out := filepath.Join(t.TempDir(), "s1.jsonl")
	_, stderr, code := e.cli("export", "s1", "-o", out)
	if code != 1 || !strings.Contains(stderr, "stopped after 1000 bytes") {
		t.Errorf("broken stream: exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("a broken export left files: %v", entries)
	}
	for _, c := range [][]string{{"--all"}, {"--project", "/p"}} {
		out := filepath.Join(t.TempDir(), "a.tar.zst")
		_, stderr, code := e.cli(append(append([]string{"export"}, c...), "-o", out)...)
		if code != 1 || !strings.Contains(stderr, "500 bytes") {
			t.Errorf("broken archive stream %v: exit %d: %s", c, code, stderr)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
			t.Errorf("a broken archive left files: %v", entries)
		}
	}
}

// TestImportingAnArchiveOfThisStoreAddsNothing: 'export --all' then
// 'import' of that archive (a restore over the same store, or a backup
// imported twice) finds every session already stored: no second copy of a
// session, no hit found twice.
func TestImportingAnArchiveOfThisStoreAddsNothing(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "ArchiveMarker one"), srvLine("a2", "a1", "two"))
	e.journal("--q--", "s2", `{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T11:00:00.000Z","cwd":"/q"}`,
		srvLine("b1", "", "ArchiveMarker three"))
	e.mustCLI("import", e.sessions)
	arch := filepath.Join(t.TempDir(), "all.tar.zst")
	e.mustCLI("export", "--all", "-o", arch)
	before := e.mustCLI("sessions", "--json")
	out := e.mustCLI("import", arch)
	if !strings.Contains(out, "0 new entries") {
		t.Errorf("import of the store's own archive: %s", out)
	}
	if after := e.mustCLI("sessions", "--json"); after != before {
		t.Errorf("sessions after importing the archive:\n%s\nbefore:\n%s", after, before)
	}
	hits := e.mustCLI("search", "--all", "ArchiveMarker")
	if n := strings.Count(hits, "«ArchiveMarker»"); n != 2 {
		t.Errorf("%d hits of ArchiveMarker, want 2:\n%s", n, hits)
	}
}

// TestImportFailsForFilesItCouldNotRead: an archive cut short and a file
// that is not a journal make import fail after its summary (a restore
// script must not delete the backup), with one line each; a journal with a
// bad line still imports, the line counted as skipped.
func TestImportFailsForFilesItCouldNotRead(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "one"), srvLine("a2", "a1", "two"), srvLine("a3", "a2", "three"))
	e.mustCLI("import", e.sessions)
	dir := t.TempDir()
	arch := filepath.Join(dir, "all.tar.zst")
	e.mustCLI("export", "--all", "-o", arch)
	b, _ := os.ReadFile(arch)
	cut := filepath.Join(dir, "cut.tar.zst")
	page := filepath.Join(dir, "page.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	os.WriteFile(page, []byte(strings.Repeat("<p>not a journal</p>\n", 40)), 0o644)
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, []byte(`{"type":"session","version":3,"id":"s8","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`+"\n"+srvLine("y1", "", "no newline after me")), 0o644)
	os.WriteFile(bad, []byte(`{"type":"session","version":3,"id":"s9","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`+"\n{broken\n"+srvLine("z1", "", "fine")+"\n"), 0o644)
	for _, c := range []struct {
		file   string
		code   int
		stderr string
		lines  int // 'skipped' lines
	}{
		{cut, 1, "1 file (or archive member) was not read", 1},
		{page, 1, "no Pi session header in its first 40 lines", 1},
		{bad, 0, "bad.jsonl:2:", 1},
		{open, 0, "waiting " + open + ": its last", 0},
	} {
		out, stderr, code := e.cli("import", c.file)
		if code != c.code || !strings.Contains(stderr, c.stderr) || strings.Count(stderr, "skipped ") != c.lines {
			t.Errorf("import %s: exit %d, stdout %q, stderr %q; want %d, %d 'skipped' line(s), %q", filepath.Base(c.file), code, out, stderr, c.code, c.lines, c.stderr)
		}
	}
}

// TestExportOfOneSessionRefusesAnArchiveName: one session written under a
// .tar.zst name was a compressed journal that 'import' then failed to read
// as a tar; the name is refused before anything is written.
func TestExportOfOneSessionRefusesAnArchiveName(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`, srvLine("a1", "", "one"))
	e.mustCLI("import", e.sessions)
	out := filepath.Join(t.TempDir(), "one.tar.zst")
	if _, stderr, code := e.cli("export", "s1", "-o", out); code != 2 || !strings.Contains(stderr, "archive of many sessions") {
		t.Errorf("export s1 -o one.tar.zst: exit %d, %q; want 2 and the reason", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the file was written")
	}
}

// TestACompressedSessionExportImports: 'export S -o s.jsonl.zst' then
// 'import s.jsonl.zst' into a fresh data directory gives the session back,
// byte for byte; importing it again adds nothing.
func TestACompressedSessionExportImports(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "one"), srvLine("a2", "a1", "two"))
	e.mustCLI("import", e.sessions)
	zst := filepath.Join(t.TempDir(), "s1.jsonl.zst")
	e.mustCLI("export", "s1", "-o", zst)
	want := e.mustCLI("export", "s1")

	f := newTestEnv(t)
	if out := f.mustCLI("import", zst); !strings.Contains(out, "1 session, 2 new entries") {
		t.Fatalf("import of the compressed session: %s", out)
	}
	if got := f.mustCLI("export", "s1"); got != want {
		t.Errorf("the imported session exports as\n%s\nwant\n%s", got, want)
	}
	if out := f.mustCLI("import", zst); !strings.Contains(out, "0 new entries") {
		t.Errorf("importing it again: %s", out)
	}
}

// TestACompressedSessionWrittenAgainShorterImports: a .jsonl.zst imported,
// then written again under the same name with less in it (one window, say),
// imports as a rewrite instead of failing.
func TestACompressedSessionWrittenAgainShorterImports(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--p--", "s1", `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("a1", "", "one"), srvLine("a2", "a1", "two"), srvLine("a3", "a2", "three"))
	e.mustCLI("import", e.sessions)
	zst := filepath.Join(t.TempDir(), "s1.jsonl.zst")
	e.mustCLI("export", "s1", "-o", zst)
	f := newTestEnv(t)
	f.mustCLI("import", zst)
	e.mustCLI("export", "s1", "--leaf", "a1", "-o", zst, "--force")
	if _, stderr, code := f.cli("import", zst); code != 0 {
		t.Fatalf("import of the shorter file: exit %d: %s", code, stderr)
	}
}

func TestStopWriterStopsOnceTheContextEnds(t *testing.T) {
	var b strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	w := stopWriter{ctx, &b}
	if _, err := w.Write([]byte("before ")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := w.Write([]byte("after")); !errors.Is(err, context.Canceled) {
		t.Errorf("a write after the end: %v, want context.Canceled", err)
	}
	if b.String() != "before " {
		t.Errorf("written %q", b.String())
	}
}

// TestASecondInterruptCleansUpAndExits: the first Ctrl-C ends the context
// (the export stops at its next write); a second one runs the cleanup (the
// partial file's removal) and ends the process with status 130.
func TestASecondInterruptCleansUpAndExits(t *testing.T) {
	exited := make(chan int, 1)
	defer func(f func(int)) { exitProcess = f }(exitProcess)
	exitProcess = func(code int) { exited <- code }
	partial := filepath.Join(t.TempDir(), ".out.jsonl.partial-1")
	f, err := os.Create(partial)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pf partialFile
	pf.track(f) // as each export's WriteFile callback does
	ctx, stop := interruptible(pf.remove)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first interrupt did not end the context")
	}
	if _, err := os.Stat(partial); err != nil {
		t.Fatalf("the first interrupt removed the file (left to the writer): %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit status %d, want 130", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second interrupt did not end the process")
	}
	if _, err := os.Stat(partial); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the partial file is still there: %v", err)
	}
}
