package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/service"
)

// testEnv is a data directory and a sessions directory with journals in it.
type testEnv struct {
	t        *testing.T
	data     string
	sessions string
	url      string // the in-process server's base URL, when started
	token    string
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	root := t.TempDir()
	return &testEnv{t: t, data: filepath.Join(root, "data"), sessions: filepath.Join(root, "sessions")}
}

// journal writes a journal of session sid into the sessions directory.
func (e *testEnv) journal(project, sid string, lines ...string) string {
	p := filepath.Join(e.sessions, project, sid+".jsonl")
	srvWriteLines(e.t, p, lines...)
	return p
}

// cli runs a command in this process, with --data and --sessions set
// (before a "--", if args hold one).
func (e *testEnv) cli(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	var out, errb bytes.Buffer
	at := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		at = i
	}
	args = slices.Concat(args[:at:at], []string{"--data", e.data, "--sessions", e.sessions}, args[at:])
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// serve starts what 'pi-history serve' runs, in this process, on a free
// loopback port: it owns the data directory (so the CLI must use its API)
// and is recorded in server.json until the test ends.
func (e *testEnv) serve() {
	t := e.t
	t.Helper()
	if err := os.MkdirAll(e.sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(service.Options{DataDir: e.data, SessionsDirs: []string{e.sessions}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if _, err := svc.Import(t.Context(), []string{e.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	tok, _, _, err := api.LoadOrCreateToken(e.data)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &globals{log: slog.New(slog.DiscardHandler)}
	srv, err := newAPIServer(g, svc, serverParts{token: tok, addr: ln.Addr().String(), done: ctx.Done()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, api.Timeouts{Shutdown: 5 * time.Second}) }()
	si := client.ServerInfo{Addr: ln.Addr().String(), PID: 1, URL: api.URLFor(ln.Addr().String())}
	if err := api.WriteServerInfo(e.data, si); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		api.RemoveServerInfo(e.data, si.PID)
	})
	e.url, e.token = si.URL, tok
}

// mustCLI runs a command that must succeed.
func (e *testEnv) mustCLI(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.cli(args...)
	if code != 0 {
		e.t.Fatalf("pi-history %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// importAll imports the sessions directory and, when serve is set, starts a
// server: the commands that follow then run through its API.
func (e *testEnv) importAll(serve bool) {
	e.t.Helper()
	e.mustCLI("import", e.sessions)
	if serve {
		e.serve()
	}
}
