package api

import (
	"bytes"
	"io"
	"mime"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestExportRoute(t *testing.T) {
	h := newHarness(t)
	journal, err := os.ReadFile(h.journal)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("whole session is the journal byte for byte", func(t *testing.T) {
		h := h.on(t)
		w := h.do(req{Path: "/v1/sessions/s1/export"})
		if w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/jsonl; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		disp, params, err := mime.ParseMediaType(w.Header().Get("Content-Disposition"))
		if err != nil || disp != "attachment" || params["filename"] != "s1.jsonl" {
			t.Errorf("Content-Disposition %q", w.Header().Get("Content-Disposition"))
		}
		if !bytes.Equal(w.Body.Bytes(), journal) {
			t.Errorf("export differs from the journal:\n%s\n---\n%s", w.Body, journal)
		}
	})

	t.Run("an id escaped more than Go escapes it", func(t *testing.T) {
		// encodeURIComponent (the web UI's export links) escapes characters
		// Go leaves; chi then routes on the raw path.
		h := h.on(t)
		w := h.do(req{Path: "/v1/sessions/%73%31/export"})
		if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), journal) {
			t.Errorf("export of s1 escaped as %%73%%31: status %d: %.200s", w.Code, w.Body)
		}
	})

	t.Run("a branch is the header and the path from the root", func(t *testing.T) {
		h := h.on(t)
		w := h.do(req{Path: "/v1/sessions/s1/export?format=jsonl&leaf=m3&inline=1"})
		if w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		lines := fixtureLines("s1")
		want := strings.Join([]string{lines[0], lines[1], lines[2], lines[3]}, "\n") + "\n"
		if w.Body.String() != want {
			t.Errorf("branch export:\n%s\nwant:\n%s", w.Body, want)
		}
		if d := w.Header().Get("Content-Disposition"); !strings.HasPrefix(d, "inline") || !strings.Contains(d, "s1-m3.jsonl") {
			t.Errorf("Content-Disposition %q", d)
		}
	})

	t.Run("zstd and html", func(t *testing.T) {
		h := h.on(t)
		w := h.do(req{Path: "/v1/sessions/s1/export?format=html&window=2&zstd=1"})
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/zstd" {
			t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		zr, err := zstd.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		page, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "fix it please") || strings.Contains(string(page), "find out why") {
			t.Errorf("window 2 as HTML should hold window 2's entries only:\n%s", page)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	})

	t.Run("problems", func(t *testing.T) {
		h := h.on(t)
		h.problem(h.do(req{Path: "/v1/sessions/nope/export"}), 404, "")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export?leaf=zz"}), 404, "")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export?window=9"}), 404, "")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export?format=pdf"}), 400, "format")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export?window=0"}), 400, "window")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export?zstd=maybe"}), 400, "zstd")
		if p := h.problem(h.do(req{Path: "/v1/sessions/s1/export?fmt=md"}), 400, "fmt"); p.Type != ProblemUnknownParam {
			t.Errorf("unknown parameter: type %q", p.Type)
		}
		h.problem(h.do(req{Path: "/v1/sessions/s1/export", NoAuth: true}), 401, "Authorization")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export", Header: map[string]string{"Host": "evil.example:7314"}}), 403, "Host")
		h.problem(h.do(req{Path: "/v1/sessions/s1/export", NoAuth: true, Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}), 403, "Sec-Fetch-Site")
		h.problem(h.do(req{Method: "POST", Path: "/v1/sessions/s1/export"}), 405, "")
	})
}
