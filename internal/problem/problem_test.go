package problem

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	pihistory "github.com/pi-history/pi-history"
)

// TestOfMapsEveryKindToTheAPIsProblemTypes: each kind of failure becomes
// the problem type, status and title the /v1 routes have always sent, with
// the error's message and parameter; an error of no kind stays internal
// and reveals nothing.
func TestOfMapsEveryKindToTheAPIsProblemTypes(t *testing.T) {
	for _, c := range []struct {
		err    error
		want   Doc
		wantOK bool
	}{
		{pihistory.Errorf("export", pihistory.NotFound, "", "no session %q", "s1"),
			Doc{Type: NotFound, Title: "Not found", Status: 404, Detail: `no session "s1"`}, true},
		{fmt.Errorf("reading: %w", pihistory.Errorf("notes", pihistory.Invalid, "offset", "offset -1: want 0 or more")),
			Doc{Type: InvalidParam, Title: "A parameter is invalid", Status: 400, Detail: "offset -1: want 0 or more", Param: "offset"}, true},
		{pihistory.Errorf("", pihistory.Conflict, "", "stale"), Doc{Type: Conflict, Title: "Conflict", Status: 409, Detail: "stale"}, true},
		{pihistory.Errorf("", pihistory.TooLarge, "", "big"), Doc{Type: TooLarge, Title: "Over a size limit", Status: 413, Detail: "big"}, true},
		{pihistory.Errorf("", pihistory.Unavailable, "", "later"), Doc{Type: Unavailable, Title: "Service unavailable", Status: 503, Detail: "later"}, true},
		{errors.New("secret path /home/x failed"), Doc{Type: Internal, Title: "Internal server error", Status: 500, Detail: InternalDetail}, false},
		// The store's failures carry their kinds; two have words of their own.
		{fmt.Errorf("session %q: %w", "s9", pihistory.Sentinel("not found", pihistory.NotFound)),
			Doc{Type: NotFound, Title: "Not found", Status: 404, Detail: `session "s9": not found`}, true},
		{fmt.Errorf("push: %w", &pihistory.ConflictError{Session: "s1", ID: "e7"}),
			Doc{Type: Conflict, Title: "Entry already stored with different content", Status: 409,
				Detail: (&pihistory.ConflictError{Session: "s1", ID: "e7"}).Error(), Entry: "e7"}, true},
		{fmt.Errorf("%w: the disk is full", pihistory.ErrWritesStopped),
			Doc{Type: WritesStopped, Title: "Writes are stopped", Status: 503,
				Detail: "store writes stopped: the disk is full; send it again later (GET /healthz says when writes resume)"}, true},
	} {
		got, ok := Of(c.err)
		if got != c.want || ok != c.wantOK {
			t.Errorf("Of(%v) = %+v, %v; want %+v, %v", c.err, got, ok, c.want, c.wantOK)
		}
	}
}

// TestWriteSendsOneShapeOfDocument: the bytes are json.Marshal's and a
// newline, with extra members of an embedding struct, and the headers
// forbid caching (and challenge for a token on a 401).
func TestWriteSendsOneShapeOfDocument(t *testing.T) {
	type withHint struct {
		Doc
		Hint string `json:"hint,omitempty"`
	}
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Length", "99")
	Write(rec, withHint{Doc{Type: NotFound, Title: "Not found", Status: 404, Detail: "no <note>"}, "list the notes"})
	want := `{"type":"urn:pi-history:problem:not-found","title":"Not found","status":404,"detail":"no \u003cnote\u003e","hint":"list the notes"}` + "\n"
	if rec.Code != 404 || rec.Body.String() != want {
		t.Errorf("got %d %q, want 404 %q", rec.Code, rec.Body.String(), want)
	}
	h := rec.Header()
	if h.Get("Content-Type") != ContentType || h.Get("Cache-Control") != "no-store" || h.Get("Content-Length") != "" || h.Get("WWW-Authenticate") != "" {
		t.Errorf("headers %v", h)
	}
	rec = httptest.NewRecorder()
	Write(rec, Doc{Type: Internal, Title: "no status"})
	if rec.Code != 500 {
		t.Errorf("a document without a status went out as %d, want 500", rec.Code)
	}
	rec = httptest.NewRecorder()
	Write(rec, Doc{Type: Unauthorized, Title: "Unauthorized", Status: 401})
	if rec.Header().Get("WWW-Authenticate") != `Bearer realm="pi-history"` {
		t.Errorf("a 401 without a challenge: %v", rec.Header())
	}
}
