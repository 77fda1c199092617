package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

// The export routes are tested here on their own, over a real store
// holding package export's test journals.

func exportStore(t *testing.T, journals ...string) (*store.Store, []string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var sids []string
	for _, j := range journals {
		rep, err := ingest.File(st, filepath.Join("..", "export", "testdata", "journals", j), nil)
		if err != nil || rep.Session == "" {
			t.Fatalf("import %s: %v (problems %v)", j, err, rep.Problems)
		}
		sids = append(sids, rep.Session)
	}
	return st, sids
}

// answerProblem answers as Server.fail does, without a server.
func answerProblem(w http.ResponseWriter, r *http.Request, err error) {
	p, _ := problemFor(err)
	writeProblem(w, p)
}

// TestExportHandlerServesWhatWriteToWrites: the body is the export's, with
// its type and file name, and each bad request is refused with the API's
// problem document before anything is sent.
func TestExportHandlerServesWhatWriteToWrites(t *testing.T) {
	st, sids := exportStore(t, "branches.jsonl")
	sid := sids[0]
	mux := http.NewServeMux()
	mux.Handle("GET /v1/sessions/{id}/export", serveExport(st, search.New(st, nil), answerProblem))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(q string) (*http.Response, []byte) {
		t.Helper()
		res, err := http.Get(srv.URL + "/v1/sessions/" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	res, body := get(sid + "/export?format=html&leaf=b0000002")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("status %d, type %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename=`+sid+`-b0000002.html` {
		t.Errorf("Content-Disposition %q", cd)
	}
	if !strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Error("no sandboxing CSP on the HTML")
	}
	x, _ := export.New(st, search.New(st, nil), sid, export.Options{Format: export.HTML, Leaf: "b0000002"})
	var want bytes.Buffer
	x.WriteTo(&want)
	if !bytes.Equal(body, want.Bytes()) {
		t.Error("the handler's body differs from WriteTo")
	}
	res, _ = get(sid + "/export?window=2&zstd=1")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/zstd" ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "-w2.jsonl.zst") {
		t.Errorf("zstd window export: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	for _, c := range []struct {
		q          string
		status     int
		typ, title string
		param      string
	}{
		{"nope/export", 404, ProblemNotFound, "Not found", ""},
		{sid + "/export?leaf=nope", 404, ProblemNotFound, "Not found", "leaf"},
		{sid + "/export?window=9", 404, ProblemNotFound, "Not found", ""},
		{sid + "/export?window=x", 400, ProblemInvalidParam, "A parameter is invalid", "window"},
		{sid + "/export?format=pdf", 400, ProblemInvalidParam, "A parameter is invalid", "format"},
		{sid + "/export?zstd=maybe", 400, ProblemInvalidParam, "A parameter is invalid", "zstd"},
		{sid + "/export?frmat=md", 400, ProblemUnknownParam, "Unknown query parameter", "frmat"},
		{sid + "/export?zstd=yes&inline=no&window=0", 400, ProblemInvalidParam, "A parameter is invalid", "window"},
		{sid + "/export?format=md&format=bogus", 400, ProblemInvalidParam, "A parameter is invalid", "format"},
		{sid + "/export?session=other", 400, ProblemInvalidParam, "A parameter is invalid", "session"},
	} {
		res, body := get(c.q)
		var p client.Error
		json.Unmarshal(body, &p)
		if res.StatusCode != c.status || p.Type != c.typ || p.Title != c.title || p.Param != c.param || p.Detail == "" ||
			res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %+v", c.q, res.StatusCode, res.Header.Get("Content-Type"), p)
		}
	}
}

// TestExportHandlerAbortsOnAMidStreamFailure: an error after the headers
// were sent aborts the response instead of ending it as if complete.
func TestExportHandlerAbortsOnAMidStreamFailure(t *testing.T) {
	st, sids := exportStore(t, "branches.jsonl")
	mux := http.NewServeMux()
	mux.Handle("GET /v1/sessions/{id}/export", serveExport(&brokenSource{Store: st, failAfter: 5}, search.New(st, nil), answerProblem))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/v1/sessions/" + sids[0] + "/export")
	if err != nil {
		return // the connection was dropped before the headers: fine too
	}
	defer res.Body.Close()
	if _, err = io.ReadAll(res.Body); err == nil {
		t.Fatal("the body ended cleanly although the export failed")
	}
}

// brokenSource fails raw reads after a number of them.
type brokenSource struct {
	*store.Store
	failAfter int
}

func (b *brokenSource) Raw(seq uint64) ([]byte, error) {
	if b.failAfter <= 0 {
		return nil, fmt.Errorf("simulated read failure")
	}
	b.failAfter--
	return b.Store.Raw(seq)
}

// TestArchiveHandlerServesWhatWriteArchiveWrites: the body is the archive
// export.WriteArchive makes, its account follows in the trailer, and bad
// or empty selections are refused with a problem document before anything
// is sent.
func TestArchiveHandlerServesWhatWriteArchiveWrites(t *testing.T) {
	st, _ := exportStore(t, "branches.jsonl", "hostile.jsonl")
	srv := httptest.NewServer(serveArchive(st, answerProblem))
	defer srv.Close()

	sel := export.Selection{Since: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)}
	ss, err := export.Select(st, sel)
	if err != nil {
		t.Fatal(err)
	}
	var wantBody bytes.Buffer
	wantStats, err := export.WriteArchive(context.Background(), &wantBody, st, ss, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "?since=2026-03-05")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("archive: %d, %v", resp.StatusCode, err)
	}
	if !bytes.Equal(body, wantBody.Bytes()) {
		t.Errorf("the served archive (%d bytes) is not what WriteArchive writes (%d bytes)", len(body), wantBody.Len())
	}
	var got export.ArchiveStats
	if err := json.Unmarshal([]byte(resp.Trailer.Get(client.ArchiveTrailer)), &got); err != nil || got != wantStats || got.Written != int64(len(body)) {
		t.Errorf("trailer %q (%v), want %+v", resp.Trailer.Get(client.ArchiveTrailer), err, wantStats)
	}
	if resp.Header.Get(client.ArchiveSessionsHeader) != "1" || resp.Header.Get("Content-Type") != "application/zstd" {
		t.Errorf("headers: %v", resp.Header)
	}

	for _, c := range []struct {
		query  string
		status int
		param  string
	}{
		{"", 400, "all"},
		{"all=maybe", 400, "all"},
		{"all=1&color=red", 400, "color"},
		{"project=relative/dir", 400, "project"},
		{"since=yesterday", 400, "since"},
		{"until=2026-13-99", 400, "until"},
		{"project=/nowhere", 404, ""},
		{"until=2020-01-01", 404, ""},
	} {
		resp, err := http.Get(srv.URL + "?" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		var p client.Error
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != c.status || err != nil || p.Param != c.param || p.Detail == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("?%s: %d %+v (%v), want %d naming %q", c.query, resp.StatusCode, p, err, c.status, c.param)
		}
	}
}

// FuzzArchiveQuery: any query string either selects sessions (at least one
// condition set, a project absolute and clean) or is refused as a bad
// parameter naming one of the query's keys; it never panics.
func FuzzArchiveQuery(f *testing.F) {
	for _, s := range []string{"all=1", "project=/home/dev/shop&since=7d", "since=2026-01-01&until=2026-02-01T10:00:00Z",
		"", "all=2", "project=rel", "until=%zz", "all=1&all=0", "since=-5d", "x=1"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/export/archive", nil)
		r.URL.RawQuery = q.Encode()
		sel, err := selectionFromQuery(r, now)
		if err != nil {
			p, internal := problemFor(err)
			if internal || p.Status != http.StatusBadRequest || p.Detail == "" {
				t.Fatalf("%q: error %v is not a bad parameter", raw, err)
			}
			if _, ok := q[p.Param]; !ok && p.Param != "all" {
				t.Fatalf("%q: the error names %q, not a parameter of the query", raw, p.Param)
			}
			return
		}
		if !sel.All && sel.Project == "" && sel.Since.IsZero() && sel.Until.IsZero() {
			t.Fatalf("%q: an empty selection was accepted", raw)
		}
		if sel.Project != "" && (!filepath.IsAbs(sel.Project) || filepath.Clean(sel.Project) != sel.Project) {
			t.Fatalf("%q: project %q is not a clean absolute path", raw, sel.Project)
		}
	})
}
