package api

// This file serves package export over HTTP: one session's export and an
// archive of many. Package export writes the formats; the parameters, the
// headers and the problem documents are this package's, as on every route.

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
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
// from src, its branch resolved by br (the one resolver). The response
// streams as it is read, with Content-Type and a Content-Disposition file
// name (attachment; inline=1 for viewing HTML or Markdown in the browser). Bad requests are refused through fail before
// anything is sent. An error in the middle of the stream aborts the
// connection (http.ErrAbortHandler), so the client sees a truncated
// transfer, never a response that looks complete.
func serveExport(src export.Source, br export.Branches, fail func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		x, inline, err := exportFromRequest(src, br, r)
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

// exportFromRequest reads an export's parameters: the session id from the
// path value "id" (else the "session" query parameter), the rest from the
// query, strictly as every /v1 route reads its query (see query).
func exportFromRequest(src export.Source, br export.Branches, r *http.Request) (*export.Export, bool, error) {
	q := newQuery(r)
	sid := r.PathValue("id")
	if sid == "" {
		sid = q.str("session")
	} else if _, ok := q.v["session"]; ok {
		return nil, false, badParam("session", "the session is named in the path; drop the session parameter")
	}
	o := export.Options{Format: export.JSONL, Leaf: q.str("leaf"), Window: q.int("window", 1), Zstd: q.yesNo("zstd")}
	format := q.str("format")
	inline := q.yesNo("inline")
	if err := q.done(); err != nil {
		return nil, false, err
	}
	if sid == "" {
		return nil, false, badParam("id", "no session id in the path")
	}
	if format != "" {
		f, err := export.ParseFormat(format)
		if err != nil {
			return nil, false, badParam("format", "format %q: want jsonl, md or html", format)
		}
		o.Format = f
	}
	x, err := export.New(src, br, sid, o)
	return x, inline, err
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
		sel, err := selectionFromQuery(r, time.Now())
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

// selectionFromQuery reads an archive's selection from the query, strictly
// as every /v1 route reads its query (see query).
func selectionFromQuery(r *http.Request, now time.Time) (export.Selection, error) {
	var sel export.Selection
	q := newQuery(r)
	sel.All = q.yesNo("all")
	project, since, until := q.str("project"), q.str("since"), q.str("until")
	if err := q.done(); err != nil {
		return sel, err
	}
	if project != "" {
		if !filepath.IsAbs(project) {
			return sel, badParam("project", "project %q: give the directory's absolute path", project)
		}
		sel.Project = filepath.Clean(project)
	}
	for _, t := range []struct {
		name, v string
		to      *time.Time
	}{{"since", since, &sel.Since}, {"until", until, &sel.Until}} {
		if t.v != "" {
			var err error
			if *t.to, err = export.ParseTime(t.v, now); err != nil {
				return sel, badParam(t.name, "%s: %s", t.name, err)
			}
		}
	}
	if !sel.All && sel.Project == "" && sel.Since.IsZero() && sel.Until.IsZero() {
		return sel, badParam("all", "choose the sessions: all=1, a project or a time range (since, until)")
	}
	return sel, nil
}
