package rollover

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// jb builds a journal in memory, line by line through journal.Parser, so the
// entries are exactly what the API layer would hand over.
type jb struct {
	t       testing.TB
	p       journal.Parser
	entries []*journal.Entry
	leaf    string
	n       int
	calls   int
}

func newJB(t testing.TB) *jb {
	b := &jb{t: t}
	if _, _, err := b.p.Line([]byte(`{"type":"session","version":3,"id":"0190test-0000-7000-8000-000000000000","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/w"}`)); err != nil {
		t.Fatal(err)
	}
	return b
}

// add appends an entry of the given type and fields as a child of the leaf.
func (b *jb) add(typ string, fields map[string]any) string {
	b.n++
	id := fmt.Sprintf("e%07d", b.n)
	m := map[string]any{"type": typ, "id": id, "timestamp": fmt.Sprintf("2026-11-01T10:%02d:%02d.000Z", b.n/60%60, b.n%60)}
	if b.leaf != "" {
		m["parentId"] = b.leaf
	} else {
		m["parentId"] = nil
	}
	for k, v := range fields {
		m[k] = v
	}
	line, err := json.Marshal(m)
	if err != nil {
		b.t.Fatal(err)
	}
	_, e, err := b.p.Line(line)
	if err != nil {
		b.t.Fatal(err)
	}
	b.entries = append(b.entries, e)
	b.leaf = id
	return id
}

func (b *jb) msg(m map[string]any) string {
	m["timestamp"] = 1772442000000 + b.n*1000
	return b.add("message", map[string]any{"message": m})
}

func (b *jb) user(text string) string { return b.msg(map[string]any{"role": "user", "content": text}) }

func (b *jb) userImages(text string, images int) string {
	c := []any{map[string]any{"type": "text", "text": text}}
	for i := 0; i < images; i++ {
		c = append(c, map[string]any{"type": "image", "data": "AAAA", "mimeType": "image/png"})
	}
	return b.msg(map[string]any{"role": "user", "content": c})
}

// assistant adds an assistant message with text, reporting usage when > 0,
// and one tool call per name in tools; it returns its id and the call ids.
func (b *jb) assistant(text string, usage int, tools ...string) (string, []string) {
	c := []any{map[string]any{"type": "text", "text": text}}
	var ids []string
	for _, name := range tools {
		b.calls++
		id := fmt.Sprintf("call_%d", b.calls)
		ids = append(ids, id)
		c = append(c, map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": map[string]any{"path": "x.go"}})
	}
	m := map[string]any{"role": "assistant", "content": c, "provider": "faux", "model": "faux-1", "stopReason": "stop"}
	if len(tools) > 0 {
		m["stopReason"] = "toolUse"
	}
	if usage > 0 {
		m["usage"] = map[string]any{"input": usage, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": usage}
	}
	return b.msg(m), ids
}

func (b *jb) toolResult(callID, name, text string) string {
	return b.msg(map[string]any{"role": "toolResult", "toolCallId": callID, "toolName": name,
		"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false})
}

// turn adds a user message, an assistant tool call with a result of size
// chars, and a closing assistant message. It returns the user entry id.
func (b *jb) turn(question string, chars int) string {
	u := b.user(question)
	_, ids := b.assistant("looking", 0, "read")
	b.toolResult(ids[0], "read", strings.Repeat("x", chars))
	b.assistant("done: "+question, 0)
	return u
}

// notes adds a notes call (assistant + notebook entry + result) and returns
// the Notebook as the API layer would report it.
func (b *jb) notes(rev int, sections ...notebook.Section) *notebook.State {
	a, ids := b.assistant("writing notes", 0, "notes")
	secs := map[string]any{}
	for _, s := range sections {
		secs[s.Name] = s.Text
	}
	nid := b.add("custom", map[string]any{"customType": journal.NotebookType,
		"data": map[string]any{"version": 1, "revision": rev, "sections": secs, "reviewedThrough": a}})
	b.toolResult(ids[0], "notes", fmt.Sprintf(`{"revision":%d}`, rev))
	n := 0
	for _, s := range sections {
		n += len(s.Text)
	}
	return &notebook.State{Revision: rev, Sections: sections, ReviewedThrough: a, EntryID: nid, Bytes: n}
}

func (b *jb) compaction(firstKept string, window int) string {
	return b.add("compaction", map[string]any{"summary": fmt.Sprintf("Context window #%d started", window),
		"firstKeptEntryId": firstKept, "tokensBefore": 1000, "fromHook": true,
		"details": map[string]any{"windowNumber": window, "notebookRevision": 1, "reason": "model"}})
}

func (b *jb) path() []*journal.Entry {
	tree := journal.NewTree(b.entries)
	p, err := tree.Path(tree.Leaf())
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

var testSections = notebook.Sections{
	{Name: "Task", Text: "Fix the checkout bug; do not touch the payment code."},
	{Name: "State", Text: "Cause found in cart.go:40 (untested fix)."},
	{Name: "Next", Text: "Run go test ./cart/."},
}

// testConfig is the default configuration scaled down so small journals
// reach the thresholds.
func testConfig() Config {
	c := DefaultConfig()
	c.MinReclaimTokens = 1000
	return c
}

var testPi = PiSettings{KeepRecentTokens: 500, ReserveTokens: 16384}
