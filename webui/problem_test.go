package webui

import (
	"net/http/httptest"
	"testing"
)

// TestDataRoutesAnswerWithTheAPIsProblemDocuments: a refused data request
// gets the document the /v1 routes send for the same failure (their type,
// title, members in their order, no caching), not one of the web UI's own.
func TestDataRoutesAnswerWithTheAPIsProblemDocuments(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/ui/data/sessions/" + shopID + "/entries?limit=0", 400,
			`{"type":"urn:pi-history:problem:invalid-parameter","title":"A parameter is invalid","status":400,"detail":"limit: want an integer in 1..500"}`},
		{"/ui/data/sessions/" + shopID + "/entries?window=9", 404,
			`{"type":"urn:pi-history:problem:not-found","title":"Not found","status":404,"detail":"window 9 does not exist: this branch has 3 window(s)"}`},
	} {
		rec := f.get(t, c.path, nil)
		if rec.Code != c.status || rec.Body.String() != c.body+"\n" {
			t.Errorf("%s: %d %s\nwant %d %s", c.path, rec.Code, rec.Body, c.status, c.body)
		}
		if h := rec.Header(); h.Get("Content-Type") != "application/problem+json" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", c.path, h)
		}
	}
	rec := f.do(httptest.NewRequest("GET", "/ui/data/sessions/"+shopID+"/entries", nil))
	want := `{"type":"urn:pi-history:problem:unauthorized","title":"Authentication required","status":401,"detail":"log in first: open the URL 'pi-history serve' printed, or run 'pi-history open'"}` + "\n"
	if rec.Code != 401 || rec.Body.String() != want {
		t.Errorf("no cookie: %d %s\nwant 401 %s", rec.Code, rec.Body, want)
	}
}
