package window

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

const testSession = "0199b000-0000-7000-8000-000000000001"

// fixture is a real store on disk holding one session that a test grows
// entry by entry, the way the extension pushes them, and a Service over it.
type fixture struct {
	t      *testing.T
	dir    string
	st     *store.Store
	svc    *Service
	parser journal.Parser
	last   string // the id of the entry added last: the next one's parent
	n      int
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
	hdr := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-05-01T10:00:00.000Z","cwd":"/tmp/p"}`, testSession)
	h, _, err := f.parser.Line([]byte(hdr))
	if err != nil || h == nil {
		t.Fatalf("header: %v", err)
	}
	if _, err := st.Push(testSession, h, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// restart gives the fixture a fresh Service over the same store and data
// directory, as after a server restart: the volatile state is gone.
func (f *fixture) restart() {
	f.svc = New(search.New(f.st, nil), nil, f.dir, nil)
}

// add appends one entry (its JSON without id, parentId and timestamp) as a
// child of the last one and returns its id.
func (f *fixture) add(body string) string {
	f.t.Helper()
	return f.addAt(f.last, body)
}

// addAt appends one entry as a child of parent ("" for a root).
func (f *fixture) addAt(parent, body string) string {
	f.t.Helper()
	f.n++
	id := fmt.Sprintf("e%07d", f.n)
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	line := fmt.Sprintf(`{"id":%q,"parentId":%s,"timestamp":"2026-05-01T10:%02d:%02d.000Z",%s`, id, p, f.n/60, f.n%60, strings.TrimPrefix(body, "{"))
	_, e, err := f.parser.Line([]byte(line))
	if err != nil {
		f.t.Fatalf("line %s: %v", line, err)
	}
	if _, err := f.st.Push(testSession, nil, []*journal.Entry{e}); err != nil {
		f.t.Fatal(err)
	}
	f.last = id
	return id
}

func (f *fixture) user(text string) string {
	b, _ := json.Marshal(text)
	return f.add(fmt.Sprintf(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":%s}],"timestamp":1}}`, b))
}

func (f *fixture) assistant(text string, totalTokens int) string {
	b, _ := json.Marshal(text)
	return f.add(fmt.Sprintf(`{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":%s}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":%d,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop","timestamp":2}}`, b, totalTokens, totalTokens))
}

func (f *fixture) custom(customType string, data json.RawMessage) string {
	return f.add(fmt.Sprintf(`{"type":"custom","customType":%q,"data":%s}`, customType, data))
}

// compaction appends a compaction this plugin wrote (fromHook, with its
// details) that keeps firstKept onwards.
func (f *fixture) compaction(firstKept string, window int, reason string) string {
	return f.add(fmt.Sprintf(`{"type":"compaction","summary":"Context window #%d started","firstKeptEntryId":%q,"tokensBefore":1000,"fromHook":true,"details":{"windowNumber":%d,"notebookRevision":1,"reason":%q}}`,
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
