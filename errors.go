// Package pihistory holds the words every layer of pi-history shares: the
// History every client asks (history.go: search, list, read, windows,
// sessions, branch path) with its requests and answers, the wire types of
// the HTTP API (wire.go), and how a request fails (this file): an Error
// names the operation that failed and its Kind, and every HTTP route (the
// API, the web UI's data routes, export) turns the kind into the same
// problem document through internal/problem. It imports only the standard
// library, so every package of the module, and a program that only talks
// to a running server (api/client), may import it.
package pihistory

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is what sort of failure an error is, as a client needs to know it:
// whether to fix the request, look elsewhere, retry later or report a bug.
type Kind int

// The kinds of failure. Internal, the zero Kind, is the server's own fault;
// the others refuse a request and say why.
const (
	Internal    Kind = iota // the server failed; the cause belongs in its log, not in the answer
	NotFound                // the session, leaf, window or note asked for is not stored
	Invalid                 // a parameter or field is malformed, out of range or missing
	Conflict                // the request contradicts what is stored (a stale revision, other content under the same id)
	TooLarge                // the request or what it would store is over a size limit
	Unavailable             // the server cannot do it now (writes stopped, shutting down); try again later
)

var kindNames = [...]string{"internal", "not found", "invalid", "conflict", "too large", "unavailable"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Error is a failure with its operation and kind. Msg says what failed and
// what to do about it; it is what a problem document's detail carries.
type Error struct {
	Op    string // the operation that failed, such as "export" or "notebook write"; "" when the caller adds none
	Kind  Kind
	Param string // the parameter, field or line at fault; "" when none in particular
	Msg   string
	Err   error // the cause, if any (errors.Is and errors.As see it)
}

// Errorf returns an *Error of kind k for operation op, its message
// formatted as fmt.Sprintf does.
func Errorf(op string, k Kind, param, format string, args ...any) *Error {
	return &Error{Op: op, Kind: k, Param: param, Msg: fmt.Sprintf(format, args...)}
}

// Error reads "op: param: msg: cause", leaving out the parts that are empty.
func (e *Error) Error() string {
	parts := make([]string, 0, 4)
	for _, s := range []string{e.Op, e.Param, e.Msg} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if e.Err != nil {
		parts = append(parts, e.Err.Error())
	}
	if len(parts) == 0 {
		return e.Kind.String()
	}
	return strings.Join(parts, ": ")
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Detail is the message a problem document carries: Msg, or the cause's
// text when there is no Msg. It leaves out Op and Param, which a client
// already knows (its own request) or finds in the document's own member.
func (e *Error) Detail() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

// Kinded is an error of another type that knows its kind, so that KindOf
// classifies it without its package depending on Error.
type Kinded interface {
	error
	ErrorKind() Kind
}

// KindOf returns the kind of the first *Error or Kinded in err's chain,
// and Internal when there is none (or err is nil).
func KindOf(err error) Kind {
	var e *Error
	var k Kinded
	switch {
	case err == nil:
		return Internal
	case errors.As(err, &e):
		return e.Kind
	case errors.As(err, &k):
		return k.ErrorKind()
	}
	return Internal
}

// Sentinel returns a distinct error value of kind k whose text is msg, for
// a package to export and its callers to test with errors.Is (the store's
// ErrNotFound is one); wrapping it with %w keeps the kind.
func Sentinel(msg string, k Kind) error { return &sentinel{msg: msg, kind: k} }

type sentinel struct {
	msg  string
	kind Kind
}

func (s *sentinel) Error() string   { return s.msg }
func (s *sentinel) ErrorKind() Kind { return s.kind }

// ErrWritesStopped is wrapped by every write the store refuses because it
// stopped taking writes (a disk that failed or is nearly full). Its kind is
// Unavailable: the write may succeed later; reads go on meanwhile.
var ErrWritesStopped = Sentinel("store writes stopped", Unavailable)

// ErrConflict is what a ConflictError unwraps to.
var ErrConflict = Sentinel("conflict", Conflict)

// ConflictError says an entry id is already stored with other content:
// entries are immutable. Its kind is Conflict; a problem document names
// the id in its entry member.
type ConflictError struct{ Session, ID string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("entry %q of session %q is already stored with different content; entries are immutable, so push the same bytes or a new id", e.ID, e.Session)
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ErrorKind is Conflict.
func (e *ConflictError) ErrorKind() Kind { return Conflict }
