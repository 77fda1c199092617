package api

// This file serves package export over HTTP: one session's export and an
// archive of many. Package export writes the formats; the parameters, the
// headers and the problem documents are this package's, as on every route.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/store"
)

// serveExport answers
//
//	GET /v1/sessions/{id}/export?format=jsonl|md|html&leaf=ID&window=N&zstd=1&inline=1
//
// from src. The response streams as it is read, with Content-Type and a
// Content-Disposition file name (attachment; inline=1 for viewing HTML or
// Markdown in the browser). Bad requests are refused through fail before
// anything is sent. An error in the middle of the stream aborts the
// connection (http.ErrAbortHandler), so the client sees a truncated
// transfer, never a response that looks complete.
func serveExport(src export.Source, fail func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		x, inline, err := exportFromRequest(src, r)
		if err != nil {
			fail(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", x.ContentType())
		disp := "attachment"
		if inline {
			disp = "inline"
		}
		h.Set("Content-Disposition", mime.FormatMediaType(disp, map[string]string{"filename": x.Name()}))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		// An exported page never needs to run anything, wherever it is shown.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		if _, err := x.WriteTo(w); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
}

// unknownParam refuses a query parameter the route does not know.
func unknownParam(param, format string, args ...any) *apiError {
	return newProblem(http.StatusBadRequest, ProblemUnknownParam, "Unknown parameter", param, format, args...)
}

// exportFromRequest reads an export's parameters: the session id from the
// path value "id" (else the "session" query parameter), the rest from the
// query. Each is given at most once.
func exportFromRequest(src export.Source, r *http.Request) (*export.Export, bool, error) {
	q := r.URL.Query()
	inPath := r.PathValue("id") != ""
	for k, vs := range q {
		switch k {
		case "format", "leaf", "window", "zstd", "inline":
		case "session":
			if inPath {
				return nil, false, badParam(k, "the session is named in the path; drop the session parameter")
			}
		default:
			return nil, false, unknownParam(k, "unknown parameter %q (known: format, leaf, window, zstd, inline)", k)
		}
		if len(vs) > 1 {
			// The first of two values is not what the caller meant either.
			return nil, false, badParam(k, "parameter %q is given %d times; give it once", k, len(vs))
		}
	}
	sid := r.PathValue("id")
	if sid == "" {
		sid = q.Get("session")
	}
	if sid == "" {
		return nil, false, badParam("id", "no session id in the path")
	}
	o := export.Options{Format: export.JSONL, Leaf: q.Get("leaf")}
	if v := q.Get("format"); v != "" {
		f, err := export.ParseFormat(v)
		if err != nil {
			return nil, false, badParam("format", "format %q: want jsonl, md or html", v)
		}
		o.Format = f
	}
	if v := q.Get("window"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, false, badParam("window", "window %q: want a window number from 1", v)
		}
		o.Window = n
	}
	var err error
	if o.Zstd, err = exportBool(q.Get("zstd")); err != nil {
		return nil, false, badParam("zstd", "%s", err)
	}
	inline, err := exportBool(q.Get("inline"))
	if err != nil {
		return nil, false, badParam("inline", "%s", err)
	}
	x, err := export.New(src, sid, o)
	return x, inline, err
}

// exportBool reads a boolean as the /v1 routes do (strconv.ParseBool: 1,
// t, true, TRUE, 0, f, false...), and yes or no, which the export routes
// took first.
func exportBool(v string) (bool, error) {
	switch v {
	case "", "no":
		return false, nil
	case "yes":
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q: want true or false (or 1 or 0)", v)
	}
	return b, nil
}

// serveArchive answers
//
//	GET /v1/export/archive?all=1&project=DIR&since=TIME&until=TIME
//
// with an archive of the sessions of st the parameters select (see
// export.WriteArchive). The parameters combine as export.Selection's
// fields do: project must be an absolute directory, and since and until
// take what export.ParseTime does (an age such as 7d counts back from the
// server's clock). A request that selects nothing, or bad parameters, is
// refused through fail before anything is sent (400); a selection no
// stored session matches is a store.ErrNotFound (404). The archive streams
// with Content-Type application/zstd; its export.ArchiveStats follow in
// the client.ArchiveTrailer trailer, and an error in the middle of the stream
// aborts the connection.
func serveArchive(st *store.Store, fail func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sel, err := selectionFromQuery(r.URL.Query(), time.Now())
		if err != nil {
			fail(w, r, err)
			return
		}
		sessions, err := export.Select(st, sel)
		if err == nil && len(sessions) == 0 {
			err = fmt.Errorf("no stored session matches the selection; nothing to archive: %w", store.ErrNotFound)
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/zstd")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "pi-history-sessions.tar.zst"}))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set(client.ArchiveSessionsHeader, strconv.Itoa(len(sessions)))
		h.Set("Trailer", client.ArchiveTrailer)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		stats, err := export.WriteArchive(r.Context(), w, st, sessions, nil)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		b, _ := json.Marshal(stats)
		h.Set(client.ArchiveTrailer, string(b))
	}
}

// selectionFromQuery reads an archive's selection from query parameters.
func selectionFromQuery(q url.Values, now time.Time) (export.Selection, error) {
	var sel export.Selection
	for k := range q {
		switch k {
		case "all", "project", "since", "until":
		default:
			return sel, unknownParam(k, "unknown parameter %q (known: all, project, since, until)", k)
		}
	}
	var err error
	if sel.All, err = exportBool(q.Get("all")); err != nil {
		return sel, badParam("all", "%s", err)
	}
	if p := q.Get("project"); p != "" {
		if !filepath.IsAbs(p) {
			return sel, badParam("project", "project %q: give the directory's absolute path", p)
		}
		sel.Project = filepath.Clean(p)
	}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &sel.Since}, {"until", &sel.Until}} {
		if v := q.Get(t.name); v != "" {
			if *t.to, err = export.ParseTime(v, now); err != nil {
				return sel, badParam(t.name, "%s: %s", t.name, err)
			}
		}
	}
	if !sel.All && sel.Project == "" && sel.Since.IsZero() && sel.Until.IsZero() {
		return sel, badParam("all", "choose the sessions: all=1, a project or a time range (since, until)")
	}
	return sel, nil
}
