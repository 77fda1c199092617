package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// lineageJournal is a session whose branch is a user message, the given
// custom records (customType, data JSON, in turn) and a named note.
func lineageJournal(sid, note string, records ...string) []string {
	lines := []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/dev/shop"}`, sid),
		userLine(sid+"-u", "", "work of "+sid),
	}
	parent := sid + "-u"
	for i := 0; i+1 < len(records); i += 2 {
		id := fmt.Sprintf("%s-r%d", sid, i)
		lines = append(lines, fmt.Sprintf(`{"type":"custom","id":%q,"parentId":%q,"timestamp":"2026-01-01T10:00:01.000Z","customType":%q,"data":%s}`,
			id, parent, records[i], records[i+1]))
		parent = id
	}
	return append(lines, fmt.Sprintf(`{"type":"custom","id":%q,"parentId":%q,"timestamp":"2026-01-01T10:00:02.000Z","customType":%q,"data":{"version":1,"op":"write","name":%q,"content":"found by %s"}}`,
		sid+"-n", parent, notebook.NoteType, note, sid))
}

// TestLineageNotesReachSpawningAndSpawnedAgents: with agent lineage records
// in the journals, a child's lineage-scoped note list holds its parent's
// and its own child's notes with their agents and sessions, not its
// sibling's; a ref from that list reads and copies through the API.
func TestLineageNotesReachSpawningAndSpawnedAgents(t *testing.T) {
	h := newHarness(t)
	const P, C = journal.AgentParentType, journal.AgentChildType
	dir := "--home-dev-shop--"
	writeJournal(t, h.sessions, dir, "lp", lineageJournal("lp", "goal", C, `{"version":1,"childSession":"lc","agent":"worker"}`,
		C, `{"version":1,"childSession":"ls","agent":"sib"}`))
	writeJournal(t, h.sessions, dir, "lc", lineageJournal("lc", "findings", P, `{"version":1,"parentSession":"lp","agent":"worker","parentAgent":"root"}`,
		C, `{"version":1,"childSession":"lg","agent":"helper"}`))
	writeJournal(t, h.sessions, dir, "lg", lineageJournal("lg", "deep", P, `{"version":1,"parentSession":"lc","agent":"helper","parentAgent":"worker"}`))
	writeJournal(t, h.sessions, dir, "ls", lineageJournal("ls", "other", P, `{"version":1,"parentSession":"lp","agent":"sib","parentAgent":"root"}`))
	if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
		t.Fatal(err)
	}
	var list notebook.NoteList
	h.ok(h.do(req{Path: "/v1/sessions/lc/notes?scope=lineage"}), &list)
	var got []string
	refs := map[string]string{}
	for _, n := range list.Notes {
		got = append(got, n.Name+"@"+n.Session+":"+n.Agent)
		refs[n.Name] = n.Ref
	}
	if want := "findings@lc:worker deep@lg:helper goal@lp:root"; strings.Join(got, " ") != want {
		t.Fatalf("lineage notes of lc: %v, want %s", got, want)
	}
	var txt notebook.NoteText
	h.ok(h.do(req{Path: "/v1/sessions/lc/notes/read?ref=" + url.QueryEscape(refs["deep"])}), &txt)
	if txt.Content != "found by lg" || txt.Agent != "helper" || txt.Session != "lg" {
		t.Errorf("read by ref: %+v", txt)
	}
	w := h.do(req{Method: http.MethodPost, Path: "/v1/sessions/lc/notes", Body: map[string]any{"op": "copy", "ref": refs["goal"], "scope": "lineage"}})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"name":"goal"`) {
		t.Errorf("copy by ref from the parent: %d %s", w.Code, w.Body)
	}
	// The sibling's note is out of the lineage: neither listed nor readable by ref.
	h.ok(h.do(req{Path: "/v1/sessions/ls/notes?scope=lineage"}), &list)
	if len(list.Notes) != 2 {
		t.Errorf("lineage notes of ls: %+v, want its own and its parent's", list.Notes)
	}
	sib := list.Notes[0].Ref
	if list.Notes[0].Session != "ls" {
		sib = list.Notes[1].Ref
	}
	if w := h.do(req{Path: "/v1/sessions/lc/notes/read?ref=" + url.QueryEscape(sib)}); w.Code == http.StatusOK {
		t.Errorf("a sibling's note read by ref from lc: %s", w.Body)
	}
}
