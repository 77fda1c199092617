package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/export"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

// Problem types (RFC 9457 "type" members). Each names one kind of failure;
// clients branch on the type or the status, people read title and detail.
const (
	ProblemInvalidJSON      = "urn:pi-history:problem:invalid-json"
	ProblemInvalidParam     = "urn:pi-history:problem:invalid-parameter"
	ProblemUnknownParam     = "urn:pi-history:problem:unknown-parameter"
	ProblemUnauthorized     = "urn:pi-history:problem:unauthorized"
	ProblemForbiddenHost    = "urn:pi-history:problem:forbidden-host"
	ProblemForbiddenOrigin  = "urn:pi-history:problem:forbidden-origin"
	ProblemForbiddenPath    = "urn:pi-history:problem:forbidden-path"
	ProblemNotFound         = "urn:pi-history:problem:not-found"
	ProblemMethod           = "urn:pi-history:problem:method-not-allowed"
	ProblemConflict         = "urn:pi-history:problem:conflict"
	ProblemTooLarge         = "urn:pi-history:problem:body-too-large"
	ProblemMediaType        = "urn:pi-history:problem:unsupported-media-type"
	ProblemTooManyRequests  = "urn:pi-history:problem:too-many-requests"
	ProblemShuttingDown     = "urn:pi-history:problem:shutting-down"
	ProblemWritesStopped    = "urn:pi-history:problem:writes-stopped"
	ProblemInternal         = "urn:pi-history:problem:internal"
	problemContentType      = "application/problem+json"
	internalErrorDetailText = "the server failed to answer; the cause is in its log"
)

// apiError is a failure with its problem document ready.
type apiError struct{ p client.Error }

func (e *apiError) Error() string { return e.p.Error() }

func newProblem(status int, typ, title, param, format string, args ...any) *apiError {
	return &apiError{client.Error{Type: typ, Title: title, Status: status, Detail: fmt.Sprintf(format, args...), Param: param}}
}

func badParam(param, format string, args ...any) *apiError {
	return newProblem(http.StatusBadRequest, ProblemInvalidParam, "A parameter is invalid", param, format, args...)
}

func notFound(param, format string, args ...any) *apiError {
	return newProblem(http.StatusNotFound, ProblemNotFound, "Not found", param, format, args...)
}

func forbidden(typ, param, format string, args ...any) *apiError {
	return newProblem(http.StatusForbidden, typ, "Forbidden", param, format, args...)
}

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *client.Error) {
	h := w.Header()
	h.Set("Content-Type", problemContentType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="pi-history"`)
	}
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	w.Write(append(b, '\n'))
}

// problemFor turns any handler error into a problem document. Errors the
// server does not expect become a 500 whose detail reveals nothing; the
// caller logs the cause.
func problemFor(err error) (p *client.Error, internal bool) {
	var ae *apiError
	var se *search.Error
	var ce *store.ConflictError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return &ae.p, false
	case errors.As(err, &se):
		if se.Kind == search.NotFound {
			return &client.Error{Type: ProblemNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: se.Msg, Param: se.Param}, false
		}
		return &client.Error{Type: ProblemInvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest, Detail: se.Msg, Param: se.Param}, false
	case errors.As(err, &ce):
		return &client.Error{Type: ProblemConflict, Title: "Entry already stored with different content", Status: http.StatusConflict,
			Detail: ce.Error(), Entry: ce.ID}, false
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit), false
	case errors.Is(err, export.ErrInvalid):
		p := &client.Error{Type: ProblemInvalidParam, Title: "A parameter is invalid", Status: http.StatusBadRequest, Detail: err.Error()}
		var pe interface {
			Param() string
			Unknown() bool
		}
		if errors.As(err, &pe) {
			p.Param = pe.Param()
			if pe.Unknown() {
				p.Type, p.Title = ProblemUnknownParam, "Unknown parameter"
			}
		}
		return p, false
	case errors.Is(err, store.ErrWritesStopped):
		return &client.Error{Type: ProblemWritesStopped, Title: "Writes are stopped", Status: http.StatusServiceUnavailable,
			Detail: err.Error() + "; send it again later (GET /healthz says when writes resume)"}, false
	case errors.Is(err, store.ErrNotFound):
		return &client.Error{Type: ProblemNotFound, Title: "Not found", Status: http.StatusNotFound, Detail: err.Error()}, false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &client.Error{Type: ProblemShuttingDown, Title: "Request canceled", Status: http.StatusServiceUnavailable,
			Detail: "the request was canceled before it finished (client gone or server shutting down); nothing partial was stored"}, false
	}
	return &client.Error{Type: ProblemInternal, Title: "Internal server error", Status: http.StatusInternalServerError, Detail: internalErrorDetailText}, true
}

func tooLarge(limit int64) *client.Error {
	return &client.Error{Type: ProblemTooLarge, Title: "Request body too large", Status: http.StatusRequestEntityTooLarge,
		Detail: fmt.Sprintf("the request body exceeds the limit of %s for this endpoint", humanBytes(limit))}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// quoteParam renders a JSON field path the way clients name it.
func quoteParam(field string) string { return strings.TrimPrefix(field, ".") }
