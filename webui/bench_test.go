package webui

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// BenchmarkFirstPage is the server's share of a 10,000-entry session's
// first screen: one page of the last window with raw lines.
func BenchmarkFirstPage(b *testing.B) {
	st := openStore(b)
	p := filepath.Join(b.TempDir(), "big.jsonl")
	writeBig(b, p, 10000)
	importFile(b, st, p)
	l := NewLogins()
	h := Handler(Options{Store: st, Logins: l})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/login?code="+l.NewCode(), nil))
	c := rec.Result().Cookies()[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("GET", "/ui/data/sessions/"+bigID+"/entries?limit=40", nil)
		r.AddCookie(c)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
