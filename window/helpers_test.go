package window

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil/growing"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

const testSession = "0199b000-0000-7000-8000-000000000001"

// fixture is a real store on disk holding one session that a test grows
// entry by entry, the way the extension pushes them, and a Service over it.
type fixture struct {
	*growing.Session
	t   *testing.T
	dir string
	st  *store.Store
	svc *Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, dir: dir, st: st}
	f.restart()
	f.Session = growing.New(t, st, testSession)
	return f
}

// restart gives the fixture a fresh Service over the same store and data
// directory, as after a server restart: the volatile state is gone.
func (f *fixture) restart() {
	f.svc = New(search.New(f.st, nil), nil, f.dir, nil)
}

// compaction appends a compaction this plugin wrote (fromHook, with its
// details) that keeps firstKept onwards.
func (f *fixture) compaction(firstKept string, window int, reason string) string {
	return f.Add(fmt.Sprintf(`{"type":"compaction","summary":"Context window #%d started","firstKeptEntryId":%q,"tokensBefore":1000,"fromHook":true,"details":{"windowNumber":%d,"notebookRevision":1,"reason":%q}}`,
		window, firstKept, window, reason))
}

// kindOf is the kind of a refused request's error, 0 when err is not an
// *Error.
func kindOf(err error) (Kind, string) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, e.Param
	}
	return 0, ""
}

func ptr[T any](v T) *T { return &v }
