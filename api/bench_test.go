package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// stubEngine answers every search with the same response, so a benchmark
// measures the API's own cost (routing, checks, decoding, encoding,
// metrics), not the search.
type stubEngine struct {
	Engine
	resp *search.Response
}

func (e stubEngine) Search(context.Context, *search.Request) (*search.Response, error) {
	return e.resp, nil
}

// cannedResponse looks like an answer of bench/apiload: five hits with a
// snippet each, about 2.5 KB of JSON.
func cannedResponse() *search.Response {
	r := &search.Response{Stats: search.Stats{Candidates: 9, Scanned: 90, Confirmed: 5, BytesScanned: 52000, TookMs: 0.42, Plan: "index"}}
	for i := range 5 {
		text := strings.Repeat("function return error value ", 5) + "qzxvbnmlk" + strings.Repeat(" slice buffer reader", 5)
		r.Hits = append(r.Hits, search.Hit{Session: "gen-00042", Entry: "gen-00042-0031" + strconv.Itoa(i), Type: "message", Role: "user",
			Timestamp: "2026-03-01T10:00:01.000Z", Window: 1, OnCurrentBranch: true, Matches: 1, Ref: "[history entry=gen-00042-0031" + strconv.Itoa(i) + "]",
			Seq: uint64(12345 + i), Snippets: []search.Snippet{{Text: text, MatchStart: 140, MatchEnd: 149, Offset: 300}}})
	}
	return r
}

// discardWriter is a ResponseWriter that keeps nothing but its headers.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func BenchmarkSearchRoute(b *testing.B) {
	dir := b.TempDir()
	svc, err := service.Open(service.Options{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	tok, _, _, err := LoadOrCreateToken(dir)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Options{Service: svc, Engine: stubEngine{resp: cannedResponse()}, Token: tok, Addr: testAddr})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"needle":"qzxvbnmlk","scope":"all","limit":20}`)
	r := httptest.NewRequest(http.MethodPost, "http://"+testAddr+"/v1/search", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+tok)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rr := *r
		rr.Body = io.NopCloser(bytes.NewReader(body))
		clear(w.h)
		w.status, w.n = 0, 0
		srv.ServeHTTP(w, &rr)
		if w.status != 0 && w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	b.SetBytes(int64(w.n))
}
