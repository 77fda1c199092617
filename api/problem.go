package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/problem"
)

// Problem types (RFC 9457 "type" members), those of package
// internal/problem, which writes the documents of every route.
const (
	ProblemInvalidJSON      = problem.InvalidJSON
	ProblemInvalidParam     = problem.InvalidParam
	ProblemUnknownParam     = problem.UnknownParam
	ProblemUnauthorized     = problem.Unauthorized
	ProblemForbiddenHost    = problem.ForbiddenHost
	ProblemForbiddenOrigin  = problem.ForbiddenOrigin
	ProblemForbiddenPath    = problem.ForbiddenPath
	ProblemNotFound         = problem.NotFound
	ProblemMethod           = problem.Method
	ProblemConflict         = problem.Conflict
	ProblemTooLarge         = problem.TooLarge
	ProblemMediaType        = problem.MediaType
	ProblemTooManyRequests  = problem.TooManyRequests
	ProblemShuttingDown     = problem.ShuttingDown
	ProblemWritesStopped    = problem.WritesStopped
	ProblemUnavailable      = problem.Unavailable
	ProblemInternal         = problem.Internal
	internalErrorDetailText = problem.InternalDetail
)

// apiError is a failure with its problem document ready.
type apiError struct{ p client.Error }

func (e *apiError) Error() string { return e.p.Error() }

func newProblem(status int, typ, title, param, format string, args ...any) *apiError {
	return &apiError{client.Error{Type: typ, Title: title, Status: status, Detail: fmt.Sprintf(format, args...), Param: param}}
}

// badParam refuses a parameter: a pihistory.Error of kind Invalid, which
// every route answers with the same problem document.
func badParam(param, format string, args ...any) error {
	return pihistory.Errorf("", pihistory.Invalid, param, format, args...)
}

// notFound says what a request names is not stored: kind NotFound.
func notFound(param, format string, args ...any) error {
	return pihistory.Errorf("", pihistory.NotFound, param, format, args...)
}

func forbidden(typ, param, format string, args ...any) *apiError {
	return newProblem(http.StatusForbidden, typ, "Forbidden", param, format, args...)
}

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *client.Error) { problem.Write(w, p) }

// problemFor turns any handler error into a problem document: its kind's
// (see internal/problem.Of), or the API's own refusal. Errors the server
// does not expect become a 500 whose detail reveals nothing; the caller
// logs the cause.
func problemFor(err error) (p *client.Error, internal bool) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return &ae.p, false
	case errors.As(err, &mbe):
		return tooLarge(mbe.Limit), false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &client.Error{Type: ProblemShuttingDown, Title: "Request canceled", Status: http.StatusServiceUnavailable,
			Detail: "the request was canceled before it finished (client gone or server shutting down); nothing partial was stored"}, false
	}
	d, ok := problem.Of(err)
	return &d, !ok
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
