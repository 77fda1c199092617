package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pi-history/pi-history/search"
)

// The lean client sends what the std client sends, reuses its connection,
// and reports every kind of bad answer as an error.
func TestRawSearcher(t *testing.T) {
	var conns atomic.Int32
	var answer atomic.Value // func(w, needle)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/search" || r.Header.Get("Authorization") != "Bearer tok" ||
			r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request line or headers", http.StatusBadRequest)
			return
		}
		var req search.Request
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.Scope != search.ScopeAll || req.Limit != 20 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		answer.Load().(func(http.ResponseWriter, string))(w, req.Needle)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	needles := []string{"alpha", "be\"ta"}
	reqs, err := prepareRequests(addr, "tok", needles)
	if err != nil {
		t.Fatal(err)
	}
	rs := &rawSearcher{addr: addr, reqs: reqs, needles: needles, checkEvery: 1}
	defer rs.close()

	good := func(w http.ResponseWriter, needle string) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&search.Response{Hits: []search.Hit{{Snippets: []search.Snippet{
			{Text: "x " + needle + " y", MatchStart: 2, MatchEnd: 2 + len(needle)}}}}})
	}
	answer.Store(good)
	for i := range 10 {
		if err := rs.search(i % 2); err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 10 searches, want 1", n)
	}

	for name, bad := range map[string]func(http.ResponseWriter, string){
		"status": func(w http.ResponseWriter, _ string) { http.Error(w, "no", http.StatusTooManyRequests) },
		"content type": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "{\"hits\":[]}\n")
		},
		"not a search answer": func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{\"other\":1}\n")
		},
		"wrong match": func(w http.ResponseWriter, needle string) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(&search.Response{Hits: []search.Hit{{Snippets: []search.Snippet{
				{Text: "x " + needle + " y", MatchStart: 0, MatchEnd: len(needle)}}}}})
		},
		"connection dropped": func(w http.ResponseWriter, _ string) {
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
		},
	} {
		answer.Store(bad)
		if err := rs.search(0); err == nil {
			t.Errorf("%s: no error", name)
		}
		answer.Store(good)
		if err := rs.search(1); err != nil {
			t.Errorf("after %s: %v", name, err)
		}
	}
}
