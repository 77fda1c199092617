package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
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
