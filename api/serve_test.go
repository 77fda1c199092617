package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/search"
)

func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// live serves a harness's server on a real loopback listener.
type live struct {
	*harness
	url    string
	cancel context.CancelFunc
	done   chan error
	c      *client.Client
}

func serveLive(t *testing.T, tm Timeouts, opts ...harnessOpt) *live {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, func(o *Options) { o.Addr = ln.Addr().String() })
	h := newHarness(t, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	l := &live{harness: h, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- h.srv.Serve(ctx, ln, tm) }()
	l.c = client.New(l.url, h.token)
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	return l
}

func TestClientRoundTrip(t *testing.T) {
	l := serveLive(t, Timeouts{})
	ctx := t.Context()
	c := l.c
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Entries != 8 {
		t.Fatalf("stats: %+v %v", st, err)
	}
	sr, err := c.Search(ctx, &search.Request{Needle: "ErrCartEmpty", Count: true})
	if err != nil || len(sr.Hits) != 3 {
		t.Fatalf("search: %+v %v", sr, err)
	}
	ss, err := c.Sessions(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %v %v", ss, err)
	}
	d, err := c.Session(ctx, "s1", client.SessionOptions{})
	if err != nil || d.CurrentLeaf != "l1" || len(d.Tree) != 8 {
		t.Fatalf("session: %+v %v", d, err)
	}
	lr, err := c.List(ctx, &search.ListRequest{Session: "s1", Window: 2, Roles: []string{"user", "assistant"}})
	if err != nil || len(lr.Items) != 2 {
		t.Fatalf("list: %+v %v", lr, err)
	}
	rr, err := c.Read(ctx, &search.ReadRequest{Session: "s1", Entry: "m3", Raw: true})
	if err != nil || rr.NextOffset != search.RawPiece {
		t.Fatalf("read: next %d %v", rr.NextOffset, err)
	}
	wr, err := c.Windows(ctx, "s1", "b1")
	if err != nil || wr.Leaf != "b1" || len(wr.Windows) != 1 {
		t.Fatalf("windows: %+v %v", wr, err)
	}
	appendLines(t, l.journal, userLine("n1", "l1", "synced through the client"))
	sy, err := c.Sync(ctx, "s1", l.journal)
	if err != nil || sy.Leaf != "n1" {
		t.Fatalf("sync: %+v %v", sy, err)
	}
	pr, err := c.Push(ctx, "s1", []string{userLine("n2", "n1", "pushed through the client")})
	if err != nil || pr.Added != 1 {
		t.Fatalf("push: %+v %v", pr, err)
	}
	_, err = c.Push(ctx, "s1", []string{userLine("n2", "n1", "changed")})
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Status != 409 || pe.Entry != "n2" {
		t.Fatalf("conflicting push: %v", err)
	}
	is, err := c.IngestStatus(ctx)
	if err != nil || len(is.Files) != 1 {
		t.Fatalf("ingest status: %+v %v", is, err)
	}
	sum, err := c.Import(ctx, []string{l.sessions})
	if err != nil || sum.Files != 1 {
		t.Fatalf("import: %+v %v", sum, err)
	}
	_, err = c.Read(ctx, &search.ReadRequest{Session: "s1", Entry: "nope"})
	if !errors.As(err, &pe) || pe.Status != 404 || pe.Param != "entry" {
		t.Fatalf("read of a missing entry: %v", err)
	}
	// A client with another token finds that the server does not hold it,
	// and does not send it.
	bad := client.New(l.url, "wrong-token")
	if _, err := bad.Stats(ctx); !errors.Is(err, client.ErrNotOurServer) {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestDiscoverAndServerInfo(t *testing.T) {
	l := serveLive(t, Timeouts{})
	if _, _, err := client.Discover(l.dataDir); !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("discover without server.json: %v", err)
	}
	addr := strings.TrimPrefix(l.url, "http://")
	if err := WriteServerInfo(l.dataDir, client.ServerInfo{Addr: addr, PID: 4242, URL: l.url}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(l.dataDir, client.ServerFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("server.json: %v %v", info.Mode(), err)
	}
	c, si, err := client.Discover(l.dataDir)
	if err != nil || si.PID != 4242 {
		t.Fatalf("discover: %+v %v", si, err)
	}
	if _, err := c.Stats(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A data directory others may write could name anyone's server.
	os.Chmod(l.dataDir, 0o777)
	if _, _, err := client.Discover(l.dataDir); err == nil || !strings.Contains(err.Error(), "can be written by other users") {
		t.Errorf("discover in a directory anyone may write: %v", err)
	}
	os.Chmod(l.dataDir, 0o700)
	if os.Getuid() == 0 {
		// Given to another user: refused.
		tok := filepath.Join(l.dataDir, client.TokenFile)
		if err := os.Chown(tok, 65534, 65534); err == nil {
			if _, _, err := client.Discover(l.dataDir); err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
				t.Errorf("discover with another user's token file: %v", err)
			}
			os.Chown(tok, 0, 0)
		}
	}
	RemoveServerInfo(l.dataDir, 1) // another pid: kept
	if _, err := client.ReadServerInfo(l.dataDir); err != nil {
		t.Fatalf("server.json of another pid removed: %v", err)
	}
	RemoveServerInfo(l.dataDir, 4242)
	if _, err := client.ReadServerInfo(l.dataDir); !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("server.json not removed: %v", err)
	}
	if got := URLFor("0.0.0.0:7314"); got != "http://127.0.0.1:7314" {
		t.Errorf("URLFor(0.0.0.0:7314) = %s", got)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, "192.168.1.2:1": false, "example.com:1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%s) = %v", addr, !want)
		}
	}
}

func TestToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, created, _, err := LoadOrCreateToken(dir)
	if err != nil || !created || len(tok) != 64 {
		t.Fatalf("create: %q %v %v", tok, created, err)
	}
	p := filepath.Join(dir, client.TokenFile)
	info, _ := os.Stat(p)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token mode %v", info.Mode().Perm())
	}
	again, created, _, err := LoadOrCreateToken(dir)
	if err != nil || created || again != tok {
		t.Fatalf("second load: %v %v", created, err)
	}
	os.Chmod(p, 0o644)
	_, _, fixed, err := LoadOrCreateToken(dir)
	info, _ = os.Stat(p)
	if err != nil || !fixed || info.Mode().Perm() != 0o600 {
		t.Errorf("open token file not made private: fixed %v, mode %v, %v", fixed, info.Mode().Perm(), err)
	}
	os.WriteFile(p, []byte("short\n"), 0o600)
	if _, _, _, err := LoadOrCreateToken(dir); err == nil {
		t.Error("a damaged token was accepted")
	}
}

func TestSlowClientsAreDropped(t *testing.T) {
	l := serveLive(t, Timeouts{ReadHeader: 200 * time.Millisecond, Read: 500 * time.Millisecond})
	addr := strings.TrimPrefix(l.url, "http://")
	// A client that never finishes its headers.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET /v1/stats HTTP/1.1\r\nHost: "+addr+"\r\n")
	// A client that sends its body too slowly.
	slowBody, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slowBody.Close()
	io.WriteString(slowBody, "POST /v1/search HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+l.token+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"needle\":")
	// Meanwhile others are served.
	if _, err := l.c.Stats(t.Context()); err != nil {
		t.Fatalf("a slow client blocks others: %v", err)
	}
	start := time.Now()
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(slow); err != nil {
		t.Fatalf("slow header client: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("slow header client dropped after %v", d)
	}
	slowBody.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, _ := io.ReadAll(slowBody)
	if s := string(resp); s != "" && !strings.Contains(s, " 400 ") && !strings.Contains(s, " 408 ") {
		t.Errorf("slow body client got %q", s)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("slow body client dropped after %v", d)
	}
	if _, err := l.c.Stats(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestGracefulShutdownFinishesRequests(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	l := serveLive(t, Timeouts{Shutdown: 5 * time.Second}, func(o *Options) {
		o.Mount = func(r chi.Router) {
			r.Get("/test/slow", func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release
				io.WriteString(w, "finished")
			})
		}
	})
	var wg sync.WaitGroup
	var body string
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Get(l.url + "/test/slow")
		if err != nil {
			rerr = err
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}()
	<-entered
	l.cancel() // SIGTERM
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-l.done:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	default:
	}
	// New connections are refused while the old request finishes.
	if _, err := http.Get(l.url + "/healthz"); err == nil {
		t.Error("a new request was accepted during shutdown")
	}
	close(release)
	wg.Wait()
	if rerr != nil || body != "finished" {
		t.Fatalf("in-flight request: %q %v", body, rerr)
	}
	if err := <-l.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	l.done <- nil // for the cleanup
}

func TestTooManyRequests(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	h := newHarness(t, func(o *Options) {
		o.MaxInFlight = 1
		o.Mount = func(r chi.Router) {
			r.Get("/test/block", func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release
			})
		}
	})
	blocked := make(chan struct{})
	go func() { // not h.do: it may call t.Fatal, which only the test's goroutine may
		defer close(blocked)
		hr := httptest.NewRequest(http.MethodGet, "http://"+testAddr+"/test/block", nil)
		h.srv.ServeHTTP(httptest.NewRecorder(), hr)
	}()
	<-entered
	w := h.do(req{Path: "/v1/stats"})
	h.problem(w, 429, "")
	if w.Header().Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	close(release)
	<-blocked
}

func TestPanicsBecomeProblems(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Mount = func(r chi.Router) {
			r.Get("/test/panic", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
		}
	})
	p := h.problem(h.do(req{Path: "/test/panic"}), 500, "")
	if strings.Contains(p.Detail, "boom") {
		t.Error("a 500 reveals the panic")
	}
}

func TestRequestLogsCarryNoContentOrToken(t *testing.T) {
	var buf testutil.LogBuffer
	h := newHarness(t, func(o *Options) {
		o.Log = newTestLogger(&buf)
	})
	h.ok(h.do(req{Path: "/v1/search?needle=ErrCartEmpty"}), nil)
	h.ok(h.do(req{Method: "POST", Path: "/v1/search", Body: `{"needle":"SecretNeedle"}`}), nil)
	out := buf.String()
	if !strings.Contains(out, "route=/v1/search") || strings.Count(out, "msg=http") != 2 {
		t.Errorf("request log lines missing:\n%s", out)
	}
	for _, bad := range []string{"ErrCartEmpty", "SecretNeedle", h.token, "checkout"} {
		if strings.Contains(out, bad) {
			t.Errorf("log contains %q:\n%s", bad, out)
		}
	}
}

// TestAProgramOnAnotherPortCannotBorrowTheProof: a program at the address
// a client was given (the recorded port of a server that died, say), with
// the real server still running elsewhere, cannot earn the token by having
// the real server answer the health challenge for it: the proof covers
// the address the challenge was sent to, and clients follow no redirects.
func TestAProgramOnAnotherPortCannotBorrowTheProof(t *testing.T) {
	l := serveLive(t, Timeouts{})
	for _, c := range []struct {
		name   string
		health func(w http.ResponseWriter, r *http.Request)
	}{
		{"it relays the challenge", func(w http.ResponseWriter, r *http.Request) { testutil.Relay(w, r, l.url) }},
		{"it redirects to the real server", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, l.url+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got sync.Map
			imp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Authorization"); a != "" {
					got.Store(a, true)
				}
				if r.URL.Path == "/healthz" {
					c.health(w, r)
					return
				}
				w.Write([]byte(`{}`))
			}))
			defer imp.Close()
			_, err := client.New(imp.URL, l.token).Stats(t.Context())
			if !errors.Is(err, client.ErrNotOurServer) {
				t.Errorf("Stats through the other program: %v, want ErrNotOurServer", err)
			}
			got.Range(func(k, _ any) bool {
				t.Errorf("the other program received the token (%q)", k)
				return true
			})
		})
	}
}

// TestAProofDoesNotOutliveItsServerLong: once the server stops and another
// program takes its very address, a proof older than a quarter of a second
// is not trusted: the token is not sent to the newcomer.
func TestAProofDoesNotOutliveItsServerLong(t *testing.T) {
	l := serveLive(t, Timeouts{})
	if _, err := l.c.Stats(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.cancel()
	<-l.done
	l.done <- nil // for the cleanup
	ln, err := net.Listen("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Skipf("the address was taken again before the test could take it: %v", err)
	}
	var sawToken sync.Map
	imp := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			sawToken.Store(a, true)
		}
		w.Write([]byte(`{"status":"ok"}`))
	})}
	go imp.Serve(ln)
	defer imp.Close()
	time.Sleep(300 * time.Millisecond)
	if _, err := l.c.Stats(t.Context()); !errors.Is(err, client.ErrNotOurServer) {
		t.Errorf("Stats at the newcomer: %v, want ErrNotOurServer", err)
	}
	sawToken.Range(func(k, _ any) bool {
		t.Errorf("the program that took the port received the token (%q)", k)
		return true
	})
}
