package notebook

import (
	"fmt"
	"strings"

	pihistory "github.com/pi-history/pi-history"
)

// LimitError reports a write that would exceed a size ceiling. The write is
// rejected whole: the previous state stands. Every ceiling the write would
// exceed is listed, so one repair can fix them all.
type LimitError struct {
	Subject string   // what was being written: "notebook", `note "plan"`, "notes on this branch"
	Excess  []Excess // each ceiling exceeded, in the order checked
}

// Excess is one exceeded ceiling.
type Excess struct {
	What   string `json:"what"`   // "bytes", "tokens", "characters" or "notes"
	Limit  int    `json:"limit"`  // the ceiling
	Actual int    `json:"actual"` // what the write would have produced
}

// Over is how far the write goes past the ceiling.
func (x Excess) Over() int { return x.Actual - x.Limit }

func (e *LimitError) Error() string {
	parts := make([]string, len(e.Excess))
	for i, x := range e.Excess {
		parts[i] = fmt.Sprintf("%d %s, limit %d (over by %d)", x.Actual, x.What, x.Limit, x.Over())
	}
	hint := "shorten it and write again"
	if e.Subject == "notebook" {
		hint = "prune sections and add in one call"
	} else if strings.HasPrefix(e.Subject, "notes on") {
		hint = "delete a note you no longer need first"
	}
	return fmt.Sprintf("%s too large: %s; nothing was written, the previous state stands; %s",
		e.Subject, strings.Join(parts, ", "), hint)
}

// StaleError reports a notebook write made against a revision that is no
// longer current: someone wrote since. An HTTP layer answers it with 409.
type StaleError struct {
	Expected int // the revision the writer believed current
	Current  int // the revision actually current on the branch (0: no notebook)
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("notebook changed since revision %d: revision %d is current; read it and write again against revision %d",
		e.Expected, e.Current, e.Current)
}

// InvalidError reports a request that is malformed, whatever the current
// state: a bad name, a non-string section, invalid UTF-8, a ninth section,
// conflicting options.
type InvalidError struct {
	Field  string // the offending field or name, e.g. `section "x"`, "name", "request"
	Reason string // what is wrong
	Hint   string // what to do instead
}

func (e *InvalidError) Error() string {
	s := e.Field + ": " + e.Reason
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// NotFoundError reports a named note, reference or entry that does not exist
// on the branch (or branches) given.
type NotFoundError struct {
	What string // e.g. `note "plan"`, `reference "context:…"`
	Hint string
}

func (e *NotFoundError) Error() string {
	s := e.What + " not found"
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// ErrorKind makes each error above a pihistory.Kinded, so that every HTTP
// route answers it with the same kind of problem document.
func (e *LimitError) ErrorKind() pihistory.Kind { return pihistory.TooLarge }

// ErrorKind is Conflict: the write is well formed but the notebook moved on.
func (e *StaleError) ErrorKind() pihistory.Kind { return pihistory.Conflict }

// ErrorKind is Invalid.
func (e *InvalidError) ErrorKind() pihistory.Kind { return pihistory.Invalid }

// ErrorKind is NotFound.
func (e *NotFoundError) ErrorKind() pihistory.Kind { return pihistory.NotFound }
