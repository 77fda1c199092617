package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// agentJournal writes a journal of sid whose branch is one user message
// (holding "marker <sid>") followed by custom entries of the given types
// and data, in order. forkOf, when set, is the file it was forked from.
func agentJournal(t *testing.T, dir, sid, forkOf string, records ...any) string {
	t.Helper()
	hdr := map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
	if forkOf != "" {
		hdr["parentSession"] = forkOf
	}
	lines := []any{hdr, map[string]any{"type": "message", "id": sid + "-u", "parentId": nil, "timestamp": "2026-01-01T00:00:01.000Z",
		"message": map[string]any{"role": "user", "content": "marker " + sid}}}
	parent := sid + "-u"
	for i := 0; i+1 < len(records); i += 2 {
		id := fmt.Sprintf("%s-r%d", sid, i)
		lines = append(lines, map[string]any{"type": "custom", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
			"customType": records[i], "data": records[i+1]})
		parent = id
	}
	var b strings.Builder
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func up(parent, agent, parentAgent string) map[string]any {
	return map[string]any{"version": 1, "parentSession": parent, "agent": agent, "parentAgent": parentAgent}
}

func down(child, agent string) map[string]any {
	return map[string]any{"version": 1, "childSession": child, "agent": agent}
}

// TestLineageFollowsAgentsNotSiblings: the lineage scope reaches the agents
// that spawned a session and those it spawned, at any depth and through
// forks, never its siblings; records naming a session that is not stored,
// naming no session, or closing a cycle are passed over; each member
// names its owning agent.
//
//	root ─┬─ worker (c1) ─┬─ helper (g, names its parent by file)
//	      │               └─ fork of c1 (f)
//	      └─ sib (c2)
func TestLineageFollowsAgentsNotSiblings(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	const P, C = journal.AgentParentType, journal.AgentChildType
	c1 := agentJournal(t, dir, "c1", "", P, up("r", "worker", "root"), C, down("g", "helper"))
	for _, path := range []string{
		agentJournal(t, dir, "r", "", C, down("c1", "worker"), C, down("c2", "sib"), C, down("missing-session", "ghost")),
		c1,
		agentJournal(t, dir, "g", "", P, map[string]any{"version": 1, "parentSessionFile": "/elsewhere/c1.jsonl", "agent": "helper", "parentAgent": "worker"},
			C, down("c1", "loop"), C, map[string]any{"version": 1, "agent": "nameless"}),
		agentJournal(t, dir, "c2", "", P, up("r", "sib", "root")),
		// A fork copies its source's path, the parent record included.
		agentJournal(t, dir, "f", c1, P, up("r", "worker", "root")),
	} {
		e.importFile(t, path)
	}
	e.catchUp(t)
	cases := []struct {
		sid  string
		want []string // session:agent, the session first, the rest by id
	}{
		{"r", []string{"r:root", "c1:worker", "c2:sib", "f:worker", "g:helper"}},
		{"c1", []string{"c1:worker", "f:worker", "g:helper", "r:root"}},
		{"g", []string{"g:helper", "c1:worker", "r:root"}},
		{"c2", []string{"c2:sib", "r:root"}},
		{"f", []string{"f:worker", "c1:worker", "r:root"}},
	}
	for _, c := range cases {
		ms, err := e.eng.LineageMembers(c.sid)
		if err != nil {
			t.Fatalf("lineage of %s: %v", c.sid, err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Session+":"+m.Agent)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("lineage of %s: %v, want %v", c.sid, got, c.want)
		}
	}

	// A lineage search finds the text of the lineage's sessions, each hit
	// naming its session and agent, and nothing of the sibling.
	res, err := e.eng.Search(context.Background(), &Request{Needle: "marker", Scope: ScopeLineage, Session: "g", All: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Session+":"+h.Agent)
	}
	slices.Sort(got)
	if want := []string{"c1:worker", "g:helper", "r:root"}; !slices.Equal(got, want) {
		t.Errorf("lineage search from g: hits %v, want %v", got, want)
	}
	if _, err := e.eng.LineageMembers("nope"); err == nil {
		t.Error("lineage of a session that is not stored: no error")
	}
}

// TestAgentLinkRecords: both record types are read, and a record without a
// version or a session is refused with what to set.
func TestAgentLinkRecords(t *testing.T) {
	for _, c := range []struct {
		typ, raw, want, err string
	}{
		{journal.AgentParentType, `{"data":{"version":1,"parentSession":"p","agent":"a","parentAgent":"root"}}`, "up p  a root", ""},
		{journal.AgentChildType, `{"data":{"version":2,"childSessionFile":"/x/c.jsonl","agent":"k","extra":1}}`, "down  /x/c.jsonl k ", ""},
		{journal.AgentChildType, `{"data":{"version":1,"agent":"k"}}`, "", "set childSession"},
		{journal.AgentParentType, `{"data":{"parentSession":"p"}}`, "", "version"},
		{"note-context/note", `{"data":{}}`, "", "not an agent lineage record"},
	} {
		l, err := journal.ParseAgentLink(c.typ, []byte(c.raw))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: error %v, want one saying %q", c.typ, c.raw, err, c.err)
			}
			continue
		}
		dir := "down"
		if l.Up {
			dir = "up"
		}
		if got := strings.Join([]string{dir, l.Session, l.File, l.Agent, l.ParentAgent}, " "); err != nil || got != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.typ, c.raw, got, err, c.want)
		}
	}
}

// TestLineageReadsMinimalSubagentsRecords: minimal-subagents' identity
// records (in each child) and registry (in the root) give the same
// lineage: up to the parent agent's session, down to the agents whose
// parent is this one, not siblings, not agents the registry deleted.
func TestLineageReadsMinimalSubagentsRecords(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	const I, R = journal.SubagentIdentityType, journal.SubagentRegistryType
	ident := func(agent, parent string) map[string]any {
		return map[string]any{"version": 1, "original_root_session_id": "ms-root", "canonical_agent_id": agent, "direct_parent_id": parent, "created_at": "2026-01-01T00:00:00Z"}
	}
	created := func(agent, parent, session string) map[string]any {
		return map[string]any{"version": 2, "root_session_id": "ms-root", "timestamp": "2026-01-01T00:00:00Z", "event": "agent-created",
			"agent": map[string]any{"agent_id": agent, "parent_id": parent, "session_id": session, "friendly_id": agent}}
	}
	for _, path := range []string{
		agentJournal(t, dir, "ms-root", "", R, created("a1", "root", "ms-a1"), R, created("a2", "root", "ms-a2"),
			R, map[string]any{"version": 2, "root_session_id": "ms-root", "event": "turn-started", "agent_id": "a1"},
			R, created("a1.1", "a1", "ms-g"), R, created("a9", "root", "ms-del"),
			R, map[string]any{"version": 2, "root_session_id": "ms-root", "event": "agent-deleted", "agent_ids": []string{"a9"}}),
		agentJournal(t, dir, "ms-a1", "", I, ident("a1", "root")),
		agentJournal(t, dir, "ms-a2", "", I, ident("a2", "root")),
		agentJournal(t, dir, "ms-g", "", I, ident("a1.1", "a1")),
		agentJournal(t, dir, "ms-del", "", I, ident("a9", "root")),
	} {
		e.importFile(t, path)
	}
	for sid, want := range map[string][]string{
		"ms-root": {"ms-root:root", "ms-a1:a1", "ms-a2:a2", "ms-g:a1.1"},
		"ms-a1":   {"ms-a1:a1", "ms-g:a1.1", "ms-root:root"},
		"ms-g":    {"ms-g:a1.1", "ms-a1:a1", "ms-root:root"},
		"ms-a2":   {"ms-a2:a2", "ms-root:root"},
	} {
		ms, err := e.eng.LineageMembers(sid)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Session+":"+m.Agent)
		}
		if !slices.Equal(got, want) {
			t.Errorf("lineage of %s: %v, want %v", sid, got, want)
		}
	}
}
