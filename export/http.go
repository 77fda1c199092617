package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pi-history/pi-history/store"
)

// Problem types this handler reports; they are the API's (package api) own.
const (
	problemNotFound     = "urn:pi-history:problem:not-found"
	problemInvalidParam = "urn:pi-history:problem:invalid-parameter"
	problemUnknownParam = "urn:pi-history:problem:unknown-parameter"
	problemInternal     = "urn:pi-history:problem:internal"
)

// ErrorFunc reports an error found before anything was sent. Errors wrap
// store.ErrNotFound (unknown session, leaf or window: 404) or ErrInvalid
// (bad parameter: 400); anything else is the server's fault.
type ErrorFunc func(w http.ResponseWriter, r *http.Request, err error)

// Handler serves one session's export, meant for
//
//	GET /v1/sessions/{id}/export?format=jsonl|md|html&leaf=ID&window=N&zstd=1&inline=1
//
// The session id is the request's path value "id" (net/http patterns and
// chi both set it), else the "session" query parameter. The response
// streams as it is read from the store, with Content-Type and a
// Content-Disposition file name (attachment; inline=1 for viewing HTML or
// Markdown in the browser). Bad requests are refused before anything is
// sent, through onError (nil: an application/problem+json document like
// the rest of the API's). An error in the middle of the stream aborts the
// connection (http.ErrAbortHandler), so the client sees a truncated
// transfer, never a response that looks complete.
func Handler(st *store.Store, onError ErrorFunc) http.HandlerFunc {
	return handler(st, onError)
}

func handler(src source, onError ErrorFunc) http.HandlerFunc {
	onError = orProblem(onError)
	return getOnly(func(w http.ResponseWriter, r *http.Request) {
		x, inline, err := exportFromRequest(src, r)
		if err != nil {
			onError(w, r, err)
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
	})
}

// getOnly serves GET and HEAD with h and refuses other methods.
func getOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h(w, r)
	}
}

// orProblem is onError, or writeProblem when it is nil.
func orProblem(onError ErrorFunc) ErrorFunc {
	if onError == nil {
		return writeProblem
	}
	return onError
}

func exportFromRequest(src source, r *http.Request) (*Export, bool, error) {
	q := r.URL.Query()
	inPath := r.PathValue("id") != ""
	for k, vs := range q {
		switch k {
		case "format", "leaf", "window", "zstd", "inline":
		case "session":
			if inPath {
				return nil, false, &paramError{param: k, msg: "the session is named in the path; drop the session parameter"}
			}
		default:
			return nil, false, &paramError{param: k, unknown: true, msg: fmt.Sprintf("unknown parameter %q (known: format, leaf, window, zstd, inline)", k)}
		}
		if len(vs) > 1 {
			// The first of two values is not what the caller meant either.
			return nil, false, &paramError{param: k, msg: fmt.Sprintf("parameter %q is given %d times; give it once", k, len(vs))}
		}
	}
	sid := r.PathValue("id")
	if sid == "" {
		sid = q.Get("session")
	}
	if sid == "" {
		return nil, false, &paramError{param: "id", msg: "no session id in the path"}
	}
	o := Options{Format: JSONL, Leaf: q.Get("leaf")}
	if v := q.Get("format"); v != "" {
		f, err := ParseFormat(v)
		if err != nil {
			return nil, false, &paramError{param: "format", msg: fmt.Sprintf("format %q: want jsonl, md or html", v)}
		}
		o.Format = f
	}
	if v := q.Get("window"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, false, &paramError{param: "window", msg: fmt.Sprintf("window %q: want a window number from 1", v)}
		}
		o.Window = n
	}
	var err error
	if o.Zstd, err = boolParam(q.Get("zstd")); err != nil {
		return nil, false, &paramError{param: "zstd", msg: err.Error()}
	}
	inline, err := boolParam(q.Get("inline"))
	if err != nil {
		return nil, false, &paramError{param: "inline", msg: err.Error()}
	}
	x, err := newExport(src, sid, o)
	return x, inline, err
}

// boolParam reads a boolean as the /v1 routes do (strconv.ParseBool: 1, t,
// true, TRUE, 0, f, false...), and yes or no, which these routes took first.
func boolParam(v string) (bool, error) {
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

// paramError is a bad query parameter; it wraps ErrInvalid.
type paramError struct {
	param   string
	msg     string
	unknown bool
}

func (e *paramError) Error() string { return e.msg }
func (e *paramError) Unwrap() error { return ErrInvalid }

// Param names the offending parameter.
func (e *paramError) Param() string { return e.param }

// Unknown reports whether the parameter is not one the handler knows.
func (e *paramError) Unknown() bool { return e.unknown }

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Param  string `json:"param,omitempty"`
}

func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := problem{Type: problemInternal, Title: "Internal server error", Status: http.StatusInternalServerError,
		Detail: "the export failed; pass an ErrorFunc to log the cause"}
	var pe *paramError
	switch {
	case errors.As(err, &pe):
		p = problem{Type: problemInvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest, Detail: pe.msg, Param: pe.param}
		if pe.unknown {
			p.Type, p.Title = problemUnknownParam, "Unknown parameter"
		}
	case errors.Is(err, store.ErrNotFound):
		p = problem{Type: problemNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: err.Error()}
	case errors.Is(err, ErrInvalid):
		p = problem{Type: problemInvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest, Detail: err.Error()}
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	w.Write(append(b, '\n'))
}

// ArchiveTrailer is the HTTP trailer in which ArchiveHandler sends the
// archive's ArchiveStats (JSON) once the last byte is written: a client
// that gets the body without it got a truncated archive.
const ArchiveTrailer = "Pi-History-Archive"

// ArchiveSessionsHeader tells, before the body, how many sessions the
// archive will hold (for progress).
const ArchiveSessionsHeader = "Pi-History-Archive-Sessions"

// ArchiveHandler serves an archive of many sessions (see WriteArchive),
// meant for
//
//	GET /v1/export/archive?all=1&project=DIR&since=TIME&until=TIME
//
// The parameters select sessions as Selection does and combine: project
// must be an absolute directory, and since and until take what ParseTime
// does (an age such as 7d counts back from the server's clock). A request
// that selects nothing, or bad parameters, is refused through onError
// before anything is sent (ErrInvalid: 400); a selection no stored session
// matches is a store.ErrNotFound (404). The archive streams with
// Content-Type application/zstd; its ArchiveStats follow in the
// ArchiveTrailer trailer, and an error in the middle of the stream aborts
// the connection.
func ArchiveHandler(st *store.Store, onError ErrorFunc) http.HandlerFunc {
	onError = orProblem(onError)
	return getOnly(func(w http.ResponseWriter, r *http.Request) {
		sel, err := selectionFromQuery(r.URL.Query(), time.Now())
		if err != nil {
			onError(w, r, err)
			return
		}
		sessions, err := Select(st, sel)
		if err == nil && len(sessions) == 0 {
			err = fmt.Errorf("no stored session matches the selection; nothing to archive: %w", store.ErrNotFound)
		}
		if err != nil {
			onError(w, r, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/zstd")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "pi-history-sessions.tar.zst"}))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set(ArchiveSessionsHeader, strconv.Itoa(len(sessions)))
		h.Set("Trailer", ArchiveTrailer)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		stats, err := WriteArchive(r.Context(), w, st, sessions, nil)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		b, _ := json.Marshal(stats)
		h.Set(ArchiveTrailer, string(b))
	})
}

// selectionFromQuery reads an archive's selection from query parameters.
func selectionFromQuery(q url.Values, now time.Time) (Selection, error) {
	var sel Selection
	for k := range q {
		switch k {
		case "all", "project", "since", "until":
		default:
			return sel, &paramError{param: k, unknown: true, msg: fmt.Sprintf("unknown parameter %q (known: all, project, since, until)", k)}
		}
	}
	var err error
	if sel.All, err = boolParam(q.Get("all")); err != nil {
		return sel, &paramError{param: "all", msg: err.Error()}
	}
	if p := q.Get("project"); p != "" {
		if !filepath.IsAbs(p) {
			return sel, &paramError{param: "project", msg: fmt.Sprintf("project %q: give the directory's absolute path", p)}
		}
		sel.Project = filepath.Clean(p)
	}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &sel.Since}, {"until", &sel.Until}} {
		if v := q.Get(t.name); v != "" {
			if *t.to, err = ParseTime(v, now); err != nil {
				return sel, &paramError{param: t.name, msg: t.name + ": " + err.Error()}
			}
		}
	}
	if sel.empty() {
		return sel, &paramError{param: "all", msg: "choose the sessions: all=1, a project or a time range (since, until)"}
	}
	return sel, nil
}
