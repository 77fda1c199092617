package api

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/search"
)

// A search answer is one JSON document with a Content-Length, byte for byte
// what encoding/json writes (HTML characters not escaped).
func TestSearchResponseHasLengthAndSameJSON(t *testing.T) {
	h := newHarness(t)
	w := h.do(req{Method: http.MethodPost, Path: "/v1/search", Body: search.Request{Needle: "ErrCartEmpty", Scope: search.ScopeAll}})
	var resp search.Response
	h.ok(w, &resp)
	if len(resp.Hits) == 0 {
		t.Fatalf("no hits: %s", w.Body)
	}
	if got, want := w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()); got != want {
		t.Fatalf("Content-Length %q, body is %s bytes", got, want)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&resp); err != nil {
		t.Fatal(err)
	}
	if got := w.Body.String(); got != want.String() {
		t.Fatalf("body differs from encoding/json:\n got %s\nwant %s", got, want.String())
	}
}

func TestWriteJSON(t *testing.T) {
	t.Run("no HTML escaping, newline-terminated", func(t *testing.T) {
		w := httptest.NewRecorder()
		if err := writeJSON(w, map[string]string{"a": "<b>&</b>"}); err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); got != "{\"a\":\"<b>&</b>\"}\n" {
			t.Fatalf("body %q", got)
		}
		if w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", w.Header())
		}
	})
	t.Run("an unencodable value writes nothing", func(t *testing.T) {
		w := httptest.NewRecorder()
		if err := writeJSON(w, math.NaN()); err == nil {
			t.Fatal("NaN encoded")
		}
		if w.Body.Len() != 0 || w.Header().Get("Content-Length") != "" || w.Header().Get("Content-Type") != "" {
			t.Fatalf("wrote %q with headers %v", w.Body, w.Header())
		}
	})
	t.Run("large buffers are not pooled; the next answer is whole", func(t *testing.T) {
		big := strings.Repeat("x", maxPooledJSON+1)
		w := httptest.NewRecorder()
		if err := writeJSON(w, big); err != nil {
			t.Fatal(err)
		}
		if w.Body.Len() != len(big)+3 {
			t.Fatalf("body of %d bytes", w.Body.Len())
		}
		w = httptest.NewRecorder()
		if err := writeJSON(w, "small"); err != nil {
			t.Fatal(err)
		}
		if w.Body.String() != "\"small\"\n" {
			t.Fatalf("body %q", w.Body)
		}
	})
}

// The cached observers count into the same series as label lookups would,
// and requests beyond the cache's bound are still counted.
func TestMetricsObserversCached(t *testing.T) {
	h := newHarness(t)
	m := h.srv.metrics
	for range 3 {
		m.observe("/r", "GET", 200, 0)
	}
	m.observe("/r", "GET", 404, 0)
	if got := requestCount(t, m, "/r", "GET", "200"); got != 3 {
		t.Fatalf("200s counted %v, want 3", got)
	}
	if got := requestCount(t, m, "/r", "GET", "404"); got != 1 {
		t.Fatalf("404s counted %v, want 1", got)
	}
	// Odd methods from clients all count as one series, OTHER.
	for i := range maxCachedObservers + 10 {
		m.observe("/r", "M"+strconv.Itoa(i), 200, 0)
	}
	if got := requestCount(t, m, "/r", "OTHER", "200"); got != maxCachedObservers+10 {
		t.Fatalf("odd methods counted %v under OTHER, want %d", got, maxCachedObservers+10)
	}
	if got := requestCount(t, m, "/r", "M7", "200"); got != 0 {
		t.Fatalf("a client-chosen method got its own series (%v requests)", got)
	}
	// Beyond the cache's bound, series are still counted.
	for i := range maxCachedObservers + 10 {
		m.observe("/r"+strconv.Itoa(i), "GET", 200, 0)
	}
	m.observe("/r"+strconv.Itoa(maxCachedObservers+5), "GET", 200, 0)
	if got := requestCount(t, m, "/r"+strconv.Itoa(maxCachedObservers+5), "GET", "200"); got != 2 {
		t.Fatalf("uncached series counted %v, want 2", got)
	}
	if n := m.cached.Load(); n > maxCachedObservers {
		t.Fatalf("cache holds %d, bound %d", n, maxCachedObservers)
	}
}

// requestCount reads pi_history_http_requests_total{route,method,code} from
// the registry, as a scrape would.
func requestCount(t *testing.T, m *metrics, route, method, code string) float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"route": route, "method": method, "code": code}
	for _, mf := range mfs {
		if mf.GetName() != "pi_history_http_requests_total" {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}
