package notebook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// sharedDir is the shared material beside the checkout (../shared from the
// repository root).
var sharedDir = filepath.Join("..", "..", "shared")

// session is a parsed journal: its header and tree.
type session struct {
	header *journal.Header
	tree   *journal.Tree
}

// loadJournal parses a journal file with the project's reader.
func loadJournal(t testing.TB, file string) session {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseJournal(t, data)
}

func parseJournal(t testing.TB, data []byte) session {
	t.Helper()
	var p journal.Parser
	var s session
	var entries []*journal.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		h, e, err := p.Line(sc.Bytes())
		if err != nil {
			t.Fatalf("line %d: %v", p.State.Line, err)
		}
		if h != nil {
			s.header = h
		}
		if e != nil {
			entries = append(entries, e)
		}
	}
	s.tree = journal.NewTree(entries)
	return s
}

// path is the ancestor chain of leaf ("" = the session's current leaf).
func (s session) path(t testing.TB, leaf string) []*journal.Entry {
	t.Helper()
	if leaf == "" {
		leaf = s.tree.Leaf()
	}
	p, err := s.tree.Path(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (s session) branch(t testing.TB, leaf string) Branch {
	return Branch{Session: s.header.ID, Path: s.path(t, leaf)}
}

// chain builds a path from scratch: a user message and an assistant message,
// so writes have a reviewedThrough.
func chain(t testing.TB) []*journal.Entry {
	t.Helper()
	s := parseJournal(t, []byte(`{"type":"session","version":3,"id":"s-test","timestamp":"2026-12-01T09:00:00.000Z","cwd":"/x"}
{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-12-01T09:00:01.000Z","message":{"role":"user","content":"go","timestamp":1}}
{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-12-01T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12},"stopReason":"stop","timestamp":2}}
`))
	return s.path(t, "")
}

var appendSeq int

// appendCustom appends a custom entry carrying data to path the way Pi's
// SessionManager.appendCustomEntry writes it, parses the line back with the
// journal reader and returns the extended path.
func appendCustom(t testing.TB, path []*journal.Entry, customType string, data any) []*journal.Entry {
	t.Helper()
	appendSeq++
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	parent := "null"
	if len(path) > 0 {
		parent = fmt.Sprintf("%q", path[len(path)-1].ID)
	}
	line := fmt.Sprintf(`{"type":"custom","customType":%q,"data":%s,"id":"f%07x","parentId":%s,"timestamp":"2026-12-01T12:00:00.000Z"}`,
		customType, raw, appendSeq, parent)
	p := journal.Parser{State: journal.State{SessionID: "s-test", Version: 3, Line: 1000}}
	_, e, err := p.Line([]byte(line))
	if err != nil {
		t.Fatalf("appended line does not parse: %v\n%s", err, line)
	}
	return append(append([]*journal.Entry{}, path...), e)
}

// mustWrite applies a notebook write and appends its record.
func mustWrite(t testing.TB, path []*journal.Entry, req WriteRequest) []*journal.Entry {
	t.Helper()
	_, rec, err := Write(path, req, Limits{})
	if err != nil {
		t.Fatalf("write %+v: %v", req, err)
	}
	return appendCustom(t, path, NotebookType, rec)
}

func secs(kv ...string) Sections {
	out := Sections{}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Section{Name: kv[i], Text: kv[i+1]})
	}
	return out
}

func intp(n int) *int { return &n }
