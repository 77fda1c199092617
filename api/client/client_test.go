package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-history/pi-history/service"
)

// TestClientReusesItsConnection: answers end with a newline after the
// JSON; the client reads it too, so one kept-alive connection serves every
// call.
func TestClientReusesItsConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The newline comes as a chunk of its own, as it may from a
		// server streaming a large answer: the decoder is done before it.
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
		w.(http.Flusher).Flush()
		w.Write([]byte("\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, "")
	for range 5 {
		if err := c.Health(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 calls opened %d connections, want 1", n)
	}
}

// TestImportWithProgressReadsTheStream: progress events reach the callback
// in order; the stream ends with the summary, or with an error the server
// met after it began (an *Error), and a stream cut before either is an
// error, never a zero summary.
func TestImportWithProgressReadsTheStream(t *testing.T) {
	for _, c := range []struct {
		name, body string
		events     int
		entries    int
		errStatus  int
		broken     bool
	}{
		{"summary", `{"progress":{"filesDone":0,"files":2,"bytes":0,"totalBytes":10,"entries":0,"indexedThrough":16,"indexTarget":48}}
{"indexing":{"through":16,"target":32}}
{"compacting":true}
{"summary":{"files":2,"sessions":2,"entries":7,"problems":[]}}
`, 3, 7, 0, false},
		{"error", `{"progress":{"filesDone":1,"files":2,"bytes":5,"totalBytes":10,"entries":3}}
{"error":{"type":"urn:pi-history:problem:internal","title":"Internal server error","status":500,"detail":"disk full"}}
`, 1, 0, 500, false},
		{"cut short", `{"progress":{"filesDone":1,"files":2,"bytes":5,"totalBytes":10,"entries":3}}
{"progr`, 1, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(proving("tok", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept") != ImportStreamType {
					t.Errorf("Accept %q", r.Header.Get("Accept"))
				}
				w.Header().Set("Content-Type", ImportStreamType)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			var events []service.ImportStatus
			sum, err := New(srv.URL, "tok").ImportWithProgress(context.Background(), []string{"/x"}, func(st service.ImportStatus) { events = append(events, st) })
			if c.name == "summary" && (len(events) != 3 || events[0].Files != 2 || events[0].Through != 16 || events[0].Target != 48 ||
				!events[1].Indexing || events[1].Target != 32 || !events[2].Compacting) {
				t.Errorf("events %+v", events)
			}
			if len(events) != c.events {
				t.Errorf("%d events, want %d", len(events), c.events)
			}
			var pe *Error
			switch {
			case c.errStatus != 0:
				if !errors.As(err, &pe) || pe.Status != c.errStatus || pe.Detail != "disk full" {
					t.Errorf("err = %v, want the server's problem", err)
				}
			case c.broken:
				if err == nil || !strings.Contains(err.Error(), "broke off") {
					t.Errorf("err = %v, want a broken stream", err)
				}
			default:
				if err != nil || sum.Entries != c.entries {
					t.Errorf("summary %+v, %v", sum, err)
				}
			}
		})
	}
}

// proving serves h, but answers a health challenge as a server holding
// token does.
func proving(token string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			json.NewEncoder(w).Encode(Health{Status: "ok", Proof: Proof(token, r.Host, r.URL.Query().Get("challenge"))})
			return
		}
		h(w, r)
	})
}

// TestTheTokenGoesOnlyToAServerHoldingIt: a program answering at the
// recorded address (say on the port of a server killed with kill -9) that
// cannot answer the health challenge never receives the token.
func TestTheTokenGoesOnlyToAServerHoldingIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		health string // what the impostor's /healthz answers
	}{
		{"a bare health answer", `{"status":"ok"}`},
		{"a proof made with another token", ""},
		{"not JSON", "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sawToken atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "" {
					sawToken.Store(true)
				}
				if r.URL.Path == "/healthz" && c.health == "" {
					json.NewEncoder(w).Encode(Health{Status: "ok", Proof: Proof("another-token", r.Host, r.URL.Query().Get("challenge"))})
					return
				}
				w.Write([]byte(c.health))
			}))
			defer srv.Close()
			cl := New(srv.URL, "the-real-token")
			if err := cl.Health(context.Background()); !errors.Is(err, ErrNotOurServer) {
				t.Errorf("Health: %v, want ErrNotOurServer", err)
			}
			if _, err := cl.Stats(context.Background()); !errors.Is(err, ErrNotOurServer) {
				t.Errorf("Stats: %v, want ErrNotOurServer", err)
			}
			if _, err := cl.Export(context.Background(), "s1", ExportOptions{}); !errors.Is(err, ErrNotOurServer) {
				t.Errorf("Export: %v, want ErrNotOurServer", err)
			}
			if sawToken.Load() {
				t.Error("the impostor received the token")
			}
		})
	}
	// A server that holds the token is asked once, then trusted.
	var challenges atomic.Int32
	real := proving("tok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(service.Stats{})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			challenges.Add(1)
		}
		real.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cl := New(srv.URL, "tok")
	for range 3 {
		if _, err := cl.Stats(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := challenges.Load(); n != 1 {
		t.Errorf("%d health challenges for three calls; want 1", n)
	}
	// A proof older than proofTTL is made again: the server may have died
	// and another program taken its port meanwhile.
	cl.proven.mu.Lock()
	cl.proven.at = time.Now().Add(-proofTTL)
	cl.proven.mu.Unlock()
	if _, err := cl.Stats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := challenges.Load(); n != 2 {
		t.Errorf("%d health challenges after the proof aged; want 2", n)
	}
	// A request that does not reach the server drops the proof at once.
	srv.Close()
	if _, err := cl.Stats(context.Background()); err == nil {
		t.Fatal("a closed server answered")
	}
	cl.proven.mu.Lock()
	dropped := cl.proven.at.IsZero()
	cl.proven.mu.Unlock()
	if !dropped {
		t.Error("the proof outlived a failed request")
	}
}

// TestProofWaitsRespectTheirContext: while one call proves the server (a
// slow one), another call waits for that proof, but no longer than its own
// context allows; a busy server (429) is not taken for another program.
func TestProofWaitsRespectTheirContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(proving("tok", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(service.Stats{})
	}))
	defer srv.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			<-release
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer slow.Close()
	cl := New(slow.URL, "tok")
	first := make(chan error, 1)
	go func() {
		_, err := cl.Stats(context.Background())
		first <- err
	}()
	time.Sleep(50 * time.Millisecond) // the first call is inside its challenge
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cl.Stats(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("a call waiting for another's proof: %v after %v; want its own deadline", err, time.Since(start))
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the call that proved: %v", err)
	}

	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer busy.Close()
	var pe *Error
	if err := New(busy.URL, "tok").Health(context.Background()); errors.Is(err, ErrNotOurServer) || !errors.As(err, &pe) || pe.Status != 429 {
		t.Errorf("a busy server: %v; want its 429, not ErrNotOurServer", err)
	}
}
