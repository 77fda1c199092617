package journal

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestSubagentRegistryReplay: a checkpoint replaces the agents (its
// tombstones left out), agent-created adds one, agent-deleted removes, other
// events change nothing, and an unreadable record is an error that leaves
// the agents as they were.
func TestSubagentRegistryReplay(t *testing.T) {
	agents := map[string]SubagentAgent{"old": {Agent: "old"}}
	steps := []struct {
		raw  string
		want string // agent ids after the step, sorted
		err  string
	}{
		{`{"data":{"event":"checkpoint","snapshot":{"agents":[{"agent_id":"a","parent_id":"root","session_id":"s-a"},{"agent_id":"b","parent_id":"a"},{"agent_id":"t","parent_id":"root"}],"tombstones":["t"]}}}`, "a b", ""},
		{`{"data":{"event":"agent-created","agent":{"agent_id":"c","parent_id":"b","session_id":"s-c"}}}`, "a b c", ""},
		{`{"data":{"event":"turn-settled","result":{"agent_id":"c"}}}`, "a b c", ""},
		{`{"data":{"event":"agent-deleted","agent_ids":["b"]}}`, "a c", ""},
		{`{"data":{"event":"agent-created"}}`, "a c", "names no agent"},
		{`{"data":{"event":"checkpoint"}}`, "a c", "no snapshot"},
		{`not json`, "a c", "not valid JSON"},
	}
	for _, s := range steps {
		err := ApplySubagentRegistry(agents, []byte(s.raw))
		if (err == nil) != (s.err == "") || (err != nil && !strings.Contains(err.Error(), s.err)) {
			t.Errorf("%s: error %v, want %q", s.raw, err, s.err)
		}
		if got := strings.Join(slices.Sorted(maps.Keys(agents)), " "); got != s.want {
			t.Errorf("%s: agents %q, want %q", s.raw, got, s.want)
		}
	}
	if agents["c"].Session != "s-c" || agents["c"].Parent != "b" {
		t.Errorf("agent c: %+v", agents["c"])
	}
	if _, err := ParseSubagentIdentity([]byte(`{"data":{"original_root_session_id":"r","canonical_agent_id":"a"}}`)); err == nil {
		t.Error("an identity record without its parent was read")
	}
}
