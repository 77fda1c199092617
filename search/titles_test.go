package search

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

func TestFirstLineMakesAShortOneLineTitle(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", ""},
		{"\n  \n\t", ""},
		{"Fix the checkout test", "Fix the checkout test"},
		{"\n\n  Fix   the\tcheckout test  \nand more", "Fix the checkout test"},
		{"a\x1b[31mred\x1b[0m word", "a [31mred [0m word"},
		{strings.Repeat("x", 72), strings.Repeat("x", 72)},
		{strings.Repeat("x", 73), strings.Repeat("x", 71) + "…"},
		{strings.Repeat("é", 80), strings.Repeat("é", 71) + "…"},
		{strings.Repeat("ab ", 30), strings.TrimSpace(strings.Repeat("ab ", 24)) + "…"},
	} {
		if got := journal.TitleLine(c.text, TitleRunes); got != c.want {
			t.Errorf("TitleLine(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// TestSessionsAndHitsCarryTitleAndProject: a named session is titled by
// its name, an unnamed one by its first user message (past the model and
// thinking-level entries Pi writes first), one with no user message yet by
// nothing; hits carry their session's title and project.
func TestSessionsAndHitsCarryTitleAndProject(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	write := func(name string, lines ...string) {
		p := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.importFile(t, p)
	}
	hdr := func(id, cwd string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T10:00:00.000Z","cwd":"` + cwd + `"}`
	}
	user := func(id, parent, text string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":` + strconv.Quote(text) + `}}`
	}
	write("named", hdr("named", "/home/dev/shop"), user("a1", "", "the needle here"),
		`{"type":"session_info","id":"i1","parentId":"a1","timestamp":"2026-01-01T10:00:02.000Z","name":"Checkout fix"}`)
	write("plain", hdr("plain", "/home/dev/cli"),
		`{"type":"model_change","id":"m0","parentId":null,"timestamp":"2026-01-01T10:00:00.500Z","provider":"p","modelId":"m"}`,
		user("b1", "m0", "\n  Why does the needle   fail?\nMore detail"), user("b2", "b1", "second needle"))
	write("empty", hdr("empty", "/tmp"))
	ss, err := e.eng.Sessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, s := range ss {
		titles[s.ID] = s.Title
	}
	want := map[string]string{"named": "Checkout fix", "plain": "Why does the needle fail?", "empty": ""}
	for id, w := range want {
		if titles[id] != w {
			t.Errorf("session %s titled %q, want %q", id, titles[id], w)
		}
		if s, err := e.eng.Session(t.Context(), id); err != nil || s.Title != w {
			t.Errorf("Session(%s): %v, title %q, want %q", id, err, s.Title, w)
		}
	}
	resp, err := e.eng.Search(t.Context(), &Request{Needle: "needle", Scope: ScopeAll, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Hits) != 3 {
		t.Fatalf("%d hits, want 3", len(resp.Hits))
	}
	for _, h := range resp.Hits {
		wantCwd := map[string]string{"named": "/home/dev/shop", "plain": "/home/dev/cli"}[h.Session]
		if h.Title != want[h.Session] || h.Cwd != wantCwd {
			t.Errorf("hit %s/%s: title %q, cwd %q; want %q, %q", h.Session, h.Entry, h.Title, h.Cwd, want[h.Session], wantCwd)
		}
	}
	// A name given later (Pi's /name) is the title from then on: what is
	// remembered of a session lasts only until it is written to.
	write("plain", hdr("plain", "/home/dev/cli"),
		`{"type":"model_change","id":"m0","parentId":null,"timestamp":"2026-01-01T10:00:00.500Z","provider":"p","modelId":"m"}`,
		user("b1", "m0", "\n  Why does the needle   fail?\nMore detail"), user("b2", "b1", "second needle"),
		`{"type":"session_info","id":"i2","parentId":"b2","timestamp":"2026-01-01T10:00:03.000Z","name":"Renamed"}`)
	resp, err = e.eng.Search(t.Context(), &Request{Needle: "second needle", Scope: ScopeAll, Limit: 10})
	if err != nil || len(resp.Hits) != 1 || resp.Hits[0].Title != "Renamed" {
		t.Errorf("after a rename: %v, hits %+v; want the title Renamed", err, resp.Hits)
	}
}

// TestWarmTitlesKeepsEverySessionsTitle: after WarmTitles a fresh engine
// holds every session's title and project as Title would work them out,
// until the session is written to; a cancelled warm-up stops.
func TestWarmTitlesKeepsEverySessionsTitle(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	for i, text := range []string{"first needle session", "second one", ""} {
		id := "s" + strconv.Itoa(i)
		lines := []string{`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p/` + id + `"}`}
		if text != "" {
			lines = append(lines, `{"type":"message","id":"u`+id+`","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":`+strconv.Quote(text)+`}}`)
		}
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.importFile(t, p)
	}
	eng := New(e.st, e.ix)
	n, err := eng.WarmTitles(t.Context())
	if err != nil || n != 3 {
		t.Fatalf("WarmTitles = %d, %v; want 3 sessions", n, err)
	}
	want := map[string]string{"s0": "first needle session", "s1": "second one", "s2": ""}
	for id, title := range want {
		a, ok := eng.cachedAbout(id, e.st.SessionGeneration(id))
		if !ok || a.title != title || a.cwd != "/p/"+id {
			t.Errorf("session %s after the warm-up: cached %v, %+v; want title %q, project /p/%s", id, ok, a, title, id)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := New(e.st, e.ix).WarmTitles(ctx); n != 0 || err == nil {
		t.Errorf("WarmTitles with its context ended = %d, %v; want 0 and the context's error", n, err)
	}
}

// TestHitsAreTitledFromARecordReadOnlyWhileItIsCurrent: describeHits takes
// a session's title from the record fillHits read (reads) while the
// session's generation is the one it was read under, and reads the record
// again when it is not.
func TestHitsAreTitledFromARecordReadOnlyWhileItIsCurrent(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(t.TempDir(), "s0.jsonl")
	lines := `{"type":"session","version":3,"id":"s0","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p/s0"}` + "\n" +
		`{"type":"message","id":"u0","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":"the stored title"}}` + "\n"
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	e.importFile(t, p)
	gen := e.st.SessionGeneration("s0")
	planted := &store.SessionInfo{ID: "s0", Cwd: "/planted", Name: "a planted record"}
	for _, c := range []struct {
		gen        uint64
		title, cwd string
	}{
		{gen, "a planted record", "/planted"},
		{gen + 1, "the stored title", "/p/s0"},
	} {
		hits := []Hit{{Session: "s0"}}
		New(e.st, e.ix).describeHits(hits, map[string]*store.SessionRead{"s0": {Info: planted, Generation: c.gen}})
		if hits[0].Title != c.title || hits[0].Cwd != c.cwd {
			t.Errorf("a record read under generation %d (the session's is %d): hit titled %q in %q; want %q in %q", c.gen, gen, hits[0].Title, hits[0].Cwd, c.title, c.cwd)
		}
	}
}
