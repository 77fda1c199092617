package rollover

import (
	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"

	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// The ledger (docs/spec-notes.md, "The ledger") is an append-only JSONL file of counts and ids,
// never content: it locates sessions worth reading, it does not replace
// them. A Row has no free-text field, ids are checked against an id
// pattern and categories against a category pattern before a row is
// written, so no message, notebook or error text can reach the file.

// LedgerFile is the ledger's file name inside the data directory.
const LedgerFile = "note-context-ledger.jsonl"

// LedgerDisabledEnv turns the ledger off when set to "1".
const LedgerDisabledEnv = "NOTE_CONTEXT_LEDGER_DISABLED"

// Row kinds.
const (
	RowGate              = "gate"               // a gate verdict (accepted or refused)
	RowRollover          = "rollover"           // a template rollover reached the branch
	RowRolloverCancelled = "rollover_cancelled" // a schedule was cancelled (why: blocker, external_owner, user_abort, other_compaction)
	RowRolloverFailed    = "rollover_failed"    // a rollover's compaction failed (why: one of FailureWhys)
	RowRolloverDeclined  = "rollover_declined"  // the template was declined (why: a Decline* category)
	RowMaintenance       = "maintenance"        // a fallback stage was reached (stage, attempt)
	RowNotes             = "notes"              // a notebook write or review (revision, bytes)
	RowWindowCache       = "window_cache"       // provider cache figures summed over a window
)

// Row is one ledger line. Only the fields of its kind are set (see
// pihistory.LedgerRow).
type Row = pihistory.LedgerRow

var (
	idPattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$`)
	categoryPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)
)

// ErrBadRow is returned for a row that would carry something other than
// counts, ids and categories.
var ErrBadRow = errors.New("ledger row rejected")

// checkRow validates a row before it is written.
func checkRow(r *Row) error {
	for name, v := range map[string]string{"kind": r.Kind, "why": r.Why, "blocker": string(r.Blocker), "reason": string(r.Reason), "stage": string(r.Stage)} {
		if v != "" && !categoryPattern.MatchString(v) {
			return fmt.Errorf("%w: %s is not a category", ErrBadRow, name)
		}
	}
	if r.Kind == "" {
		return fmt.Errorf("%w: no kind", ErrBadRow)
	}
	for name, v := range map[string]string{"session": r.Session, "firstKeptEntryId": r.FirstKeptEntryID, "entryId": r.EntryID} {
		if v != "" && !idPattern.MatchString(v) {
			return fmt.Errorf("%w: %s is not an id", ErrBadRow, name)
		}
	}
	return nil
}

// Ledger appends rows to the ledger file of one data directory. It is safe
// for concurrent use; each row is one write on a file opened for appending,
// so rows from several processes do not interleave within a line.
type Ledger struct {
	path     string
	disabled bool
	now      func() time.Time
	mu       sync.Mutex
}

// OpenLedger returns the ledger of dir. With NOTE_CONTEXT_LEDGER_DISABLED=1
// in the environment it is disabled: Append does nothing and Enabled is
// false. The file is created on the first Append.
func OpenLedger(dir string) *Ledger {
	return &Ledger{path: filepath.Join(dir, LedgerFile), disabled: os.Getenv(LedgerDisabledEnv) == "1", now: time.Now}
}

// Enabled reports whether rows are written.
func (l *Ledger) Enabled() bool { return !l.disabled }

// Path is the ledger file.
func (l *Ledger) Path() string { return l.path }

// Append writes one row, stamping its time when empty. A row carrying
// anything but counts, ids and categories is refused with ErrBadRow.
func (l *Ledger) Append(r Row) error {
	if l.disabled {
		return nil
	}
	if r.Time == "" {
		r.Time = l.now().UTC().Format(time.RFC3339Nano)
	}
	if err := checkRow(&r); err != nil {
		return err
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	// Private, as the data directory it sits in: it names sessions.
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("ledger: appending to %s: %w", l.path, err)
	}
	return f.Close()
}

// LedgerFilter selects rows when reading.
type LedgerFilter = pihistory.LedgerFilter

// Read returns the rows of the ledger that match f, oldest first, and how
// many lines were skipped as unreadable (a torn last line, say). A missing
// file is an empty ledger.
func (l *Ledger) Read(f LedgerFilter) ([]Row, int, error) {
	file, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %w", err)
	}
	defer file.Close()
	return ReadLedger(file, f)
}

// ReadLedger reads ledger rows from r; see Ledger.Read.
func ReadLedger(r io.Reader, f LedgerFilter) ([]Row, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var rows []Row
	skipped := 0
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var row Row
		if json.Unmarshal(sc.Bytes(), &row) != nil || row.Kind == "" {
			skipped++
			continue
		}
		if (f.Kind != "" && row.Kind != f.Kind) || (f.Session != "" && row.Session != f.Session) {
			continue
		}
		rows = append(rows, row)
		if f.Limit > 0 && len(rows) > 2*f.Limit {
			rows = append(rows[:0], rows[len(rows)-f.Limit:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return rows, skipped, fmt.Errorf("ledger: %w", err)
	}
	if f.Limit > 0 && len(rows) > f.Limit {
		rows = rows[len(rows)-f.Limit:]
	}
	return rows, skipped, nil
}

// GateRow is the ledger row of a gate verdict.
func GateRow(session string, v Verdict) Row {
	ok := v.OK
	return Row{Kind: RowGate, Session: session, Window: v.Window, Reason: v.Reason, Auto: v.Auto, OK: &ok,
		Blocker: v.Blocker, ReclaimTokens: v.Projection.Reclaim, FirstKeptEntryID: v.FirstKeptEntryID}
}

// RolloverRow is the ledger row of a rollover that reached the branch.
func RolloverRow(session string, c Compaction, nb *notebook.State, reclaim int) Row {
	r := Row{Kind: RowRollover, Session: session, Window: c.Details.WindowNumber, EndedWindow: max(c.Details.WindowNumber-1, 1), Reason: c.Details.Reason,
		NotebookRevision: c.Details.NotebookRevision, TokensBefore: c.TokensBefore, ReclaimTokens: reclaim,
		FirstKeptEntryID: c.FirstKeptEntryID}
	if nb != nil {
		r.NotebookBytes = nb.Bytes
	}
	return r
}

// WindowCacheRow sums what the provider reported for the assistant messages
// of one window (entries, in path order): calls, tokens read from its prompt
// cache, and input tokens not read from it. Pi's usage counts input, cache
// reads and cache writes apart, so the uncached input is input plus cache
// writes: a prefix that keeps changing is written to the cache on every
// call, and counting only input would show that window as well cached. The
// cache writes are also given alone. docs/spec-notes.md, "Entry-id trailers and the window cache row" asks for one at each
// rollover, to check that trailers keep the cached prefix stable.
func WindowCacheRow(session string, window int, entries []*journal.Entry) Row {
	r := Row{Kind: RowWindowCache, Session: session, Window: window}
	for _, e := range entries {
		if e.Type != "message" || e.Role != "assistant" {
			continue
		}
		m, ok := EntryMessage(e)
		if !ok || m.Usage == nil {
			continue
		}
		r.Calls++
		r.CacheReadTokens += int(m.Usage.CacheRead)
		r.UncachedTokens += int(m.Usage.Input + m.Usage.CacheWrite)
		r.CacheWriteTokens += int(m.Usage.CacheWrite)
	}
	return r
}

// DecisionRows are the ledger rows a state-machine decision implies.
func DecisionRows(session string, s State, d Decision) []Row {
	var rows []Row
	if d.Gate != nil {
		rows = append(rows, GateRow(session, *d.Gate))
	}
	if d.Cancel != "" {
		rows = append(rows, Row{Kind: RowRolloverCancelled, Session: session, Window: s.Window, Reason: d.Cancelled, Why: d.Cancel})
	}
	if d.SteerType == MaintenanceType {
		rows = append(rows, Row{Kind: RowMaintenance, Session: session, Window: s.Window, Stage: StageRequested, Attempt: d.Attempt})
	}
	if d.RollOver == ReasonFallback {
		rows = append(rows, Row{Kind: RowMaintenance, Session: session, Window: s.Window, Stage: StageCheckpointed, Attempt: s.Active})
	}
	if d.Failed != "" {
		rows = append(rows, Row{Kind: RowRolloverFailed, Session: session, Window: s.Window, Reason: d.Failed, Why: d.FailedWhy})
	}
	if d.GiveUp {
		rows = append(rows, Row{Kind: RowMaintenance, Session: session, Window: s.Window, Stage: "gave_up"})
	}
	return rows
}
