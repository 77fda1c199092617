// Package growing gives tests one session in a real store that they grow
// entry by entry, the way the Pi extension pushes them: each entry a child
// of the last (or of a parent the test names), with ids and times in order.
package growing

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// Session is a session a test grows in St.
type Session struct {
	T      *testing.T
	St     *store.Store
	ID     string
	Last   string // the id of the entry added last: the next one's parent
	parser journal.Parser
	n      int
}

// New stores the header of session id in st and returns the session.
func New(t *testing.T, st *store.Store, id string) *Session {
	t.Helper()
	s := &Session{T: t, St: st, ID: id}
	hdr := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-05-01T10:00:00.000Z","cwd":"/tmp/p"}`, id)
	h, _, err := s.parser.Line([]byte(hdr))
	if err != nil || h == nil {
		t.Fatalf("header: %v", err)
	}
	if _, err := st.Push(id, h, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// Add appends one entry (its JSON without id, parentId and timestamp) as a
// child of the last one and returns its id.
func (s *Session) Add(body string) string {
	s.T.Helper()
	return s.AddAt(s.Last, body)
}

// AddAt appends one entry as a child of parent ("" for a root).
func (s *Session) AddAt(parent, body string) string {
	s.T.Helper()
	s.n++
	id := fmt.Sprintf("e%07d", s.n)
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	line := fmt.Sprintf(`{"id":%q,"parentId":%s,"timestamp":"2026-05-01T10:%02d:%02d.000Z",%s`, id, p, s.n/60, s.n%60, strings.TrimPrefix(body, "{"))
	_, e, err := s.parser.Line([]byte(line))
	if err != nil {
		s.T.Fatalf("line %s: %v", line, err)
	}
	if _, err := s.St.Push(s.ID, nil, []*journal.Entry{e}); err != nil {
		s.T.Fatal(err)
	}
	s.Last = id
	return id
}

// User appends a user message.
func (s *Session) User(text string) string {
	b, _ := json.Marshal(text)
	return s.Add(fmt.Sprintf(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":%s}],"timestamp":1}}`, b))
}

// Assistant appends an assistant message whose usage says totalTokens.
func (s *Session) Assistant(text string, totalTokens int) string {
	b, _ := json.Marshal(text)
	return s.Add(fmt.Sprintf(`{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":%s}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":%d,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop","timestamp":2}}`, b, totalTokens, totalTokens))
}

// Custom appends another extension's (or this one's) custom entry.
func (s *Session) Custom(customType string, data json.RawMessage) string {
	return s.Add(fmt.Sprintf(`{"type":"custom","customType":%q,"data":%s}`, customType, data))
}
