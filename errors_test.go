package pihistory

import (
	"errors"
	"fmt"
	"testing"
)

type kindedError struct{ k Kind }

func (e kindedError) Error() string   { return "kinded" }
func (e kindedError) ErrorKind() Kind { return e.k }

// TestKindOfFindsTheKindThroughWrapping: a kind survives fmt.Errorf's %w,
// a foreign error type gives its own through ErrorKind, and anything else
// is the server's fault.
func TestKindOfFindsTheKindThroughWrapping(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, Internal},
		{"plain", errors.New("disk on fire"), Internal},
		{"direct", Errorf("export", NotFound, "", "no session %q", "s1"), NotFound},
		{"wrapped", fmt.Errorf("serving: %w", Errorf("notes", TooLarge, "content", "over 64000 characters")), TooLarge},
		{"kinded", fmt.Errorf("x: %w", kindedError{Unavailable}), Unavailable},
		{"cause kept", &Error{Kind: Conflict, Err: kindedError{Invalid}}, Conflict},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("%s: KindOf = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestErrorTextNamesOperationParameterAndCause: the text reads from the
// operation to the cause and skips empty parts; Detail keeps to the message.
func TestErrorTextNamesOperationParameterAndCause(t *testing.T) {
	cause := errors.New("read-only file system")
	for _, c := range []struct {
		err          *Error
		text, detail string
	}{
		{Errorf("export", Invalid, "window", "window %d: windows are numbered from 1", 0),
			"export: window: window 0: windows are numbered from 1", "window 0: windows are numbered from 1"},
		{&Error{Kind: Invalid, Param: "leaf", Msg: "leaf must be a string"}, "leaf: leaf must be a string", "leaf must be a string"},
		{&Error{Op: "ledger write", Kind: Unavailable, Err: cause}, "ledger write: read-only file system", "read-only file system"},
		{&Error{Kind: NotFound}, "not found", ""},
	} {
		if got := c.err.Error(); got != c.text {
			t.Errorf("Error() = %q, want %q", got, c.text)
		}
		if got := c.err.Detail(); got != c.detail {
			t.Errorf("Detail() = %q, want %q", got, c.detail)
		}
	}
	if !errors.Is(&Error{Kind: Unavailable, Err: cause}, cause) {
		t.Error("the cause is not reachable through errors.Is")
	}
}
