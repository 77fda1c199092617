package journal

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Agent lineage records: which session spawned which, for the lineage scope
// of notes and history (decision 320). A subagent extension writes two
// custom entries when an agent starts a child agent in a session of its own:
//
//   - in the child's journal, AgentParentType naming the session (and agent)
//     that spawned it: {"version":1, "parentSession":"<id>", "agent":"<the
//     child's agent id>", "parentAgent":"<the spawning agent's id, or root>"};
//   - in the parent's journal, AgentChildType naming the child:
//     {"version":1, "childSession":"<id>", "agent":"<the child's agent id>"}.
//
// A session may be named by its journal file instead of its id
// (parentSessionFile, childSessionFile), matched by base name as a fork's
// parentSession is. The walk goes up through the child's record and down
// through the parent's, so a session never reaches its siblings.
//
// The records are metadata: they are not searchable text (only the
// notebook's custom entries are; see fillContent). Their ids and agent names
// say nothing a search for the session's work would want to find, and a
// literal search for a session id would otherwise match every child's
// record.
const (
	AgentParentType = "agent-lineage/parent" // in a child's journal: who spawned it
	AgentChildType  = "agent-lineage/child"  // in a parent's journal: a child it spawned
)

// AgentLink is one agent lineage record, read from either direction.
type AgentLink struct {
	Up          bool   // an AgentParentType record (Session is the parent); else AgentChildType (Session is the child)
	Session     string // the other session's id ("" when only File names it)
	File        string // the other session's journal file, when the record names one
	Agent       string // Up: this session's own agent id; else the child's agent id
	ParentAgent string // Up: the spawning agent's id ("root" when it is a root agent), if recorded
}

// agentLinkData is the data of either record, as written.
type agentLinkData struct {
	Version           int    `json:"version"`
	ParentSession     string `json:"parentSession"`
	ParentSessionFile string `json:"parentSessionFile"`
	ChildSession      string `json:"childSession"`
	ChildSessionFile  string `json:"childSessionFile"`
	Agent             string `json:"agent"`
	ParentAgent       string `json:"parentAgent"`
}

// IsAgentLinkType says whether a custom entry's customType is an agent
// lineage record.
func IsAgentLinkType(customType string) bool {
	return customType == AgentParentType || customType == AgentChildType
}

// ParseAgentLink reads an agent lineage record from the raw line of a custom
// entry of one of the two types. A record of a newer version is read for the
// fields this one knows; one that names no session is an error.
func ParseAgentLink(customType string, raw []byte) (AgentLink, error) {
	if !IsAgentLinkType(customType) {
		return AgentLink{}, fmt.Errorf("customType %q is not an agent lineage record (%s or %s)", customType, AgentParentType, AgentChildType)
	}
	var line struct {
		Data *agentLinkData `json:"data"`
	}
	if err := json.Unmarshal(raw, &line); err != nil {
		return AgentLink{}, fmt.Errorf("%s record is not valid JSON: %v", customType, err)
	}
	d := line.Data
	if d == nil || d.Version < 1 {
		return AgentLink{}, fmt.Errorf(`%s record has no data with a version (want {"version":1,…})`, customType)
	}
	l := AgentLink{Up: customType == AgentParentType, Agent: strings.TrimSpace(d.Agent), ParentAgent: strings.TrimSpace(d.ParentAgent)}
	if l.Up {
		l.Session, l.File = strings.TrimSpace(d.ParentSession), d.ParentSessionFile
	} else {
		l.Session, l.File = strings.TrimSpace(d.ChildSession), d.ChildSessionFile
	}
	if l.Session == "" && l.File == "" {
		other := "parentSession"
		if !l.Up {
			other = "childSession"
		}
		return AgentLink{}, fmt.Errorf("%s record names no session (set %s to its id)", customType, other)
	}
	return l, nil
}

// The records of the minimal-subagents extension (ian-pascoe/pi-extensions,
// packages/pi-minimal-subagents), read as lineage too (decision 320): each
// child session starts with an identity record naming its root session, its
// own agent id and its parent agent's id ("root" for the root agent), and
// the root session's registry records every agent of the tree with its
// parent agent and its session.
const (
	SubagentIdentityType = "minimal-subagents.identity"
	SubagentRegistryType = "minimal-subagents.registry"
	SubagentRootAgent    = "root" // the parent id minimal-subagents gives the root agent's children
)

// IsLineageType says whether a custom entry's customType is read for the
// lineage scope.
func IsLineageType(customType string) bool {
	return IsAgentLinkType(customType) || customType == SubagentIdentityType || customType == SubagentRegistryType
}

// SubagentIdentity is a child session's minimal-subagents identity record.
type SubagentIdentity struct {
	RootSession string `json:"original_root_session_id"`
	Agent       string `json:"canonical_agent_id"`
	Parent      string `json:"direct_parent_id"`
}

// ParseSubagentIdentity reads a minimal-subagents identity record.
func ParseSubagentIdentity(raw []byte) (SubagentIdentity, error) {
	var line struct {
		Data *SubagentIdentity `json:"data"`
	}
	if err := json.Unmarshal(raw, &line); err != nil {
		return SubagentIdentity{}, fmt.Errorf("%s record is not valid JSON: %v", SubagentIdentityType, err)
	}
	if line.Data == nil || line.Data.RootSession == "" || line.Data.Agent == "" || line.Data.Parent == "" {
		return SubagentIdentity{}, fmt.Errorf("%s record lacks original_root_session_id, canonical_agent_id or direct_parent_id", SubagentIdentityType)
	}
	return *line.Data, nil
}

// SubagentAgent is one agent of a minimal-subagents registry.
type SubagentAgent struct {
	Agent   string `json:"agent_id"`
	Parent  string `json:"parent_id"`
	Session string `json:"session_id"` // "" until its session exists
}

// ApplySubagentRegistry replays one minimal-subagents registry record onto
// agents (agent id → agent): a checkpoint replaces them, agent-created adds
// one, agent-deleted removes some; other events change nothing here. A
// record this cannot read is an error and leaves agents as they were.
func ApplySubagentRegistry(agents map[string]SubagentAgent, raw []byte) error {
	var line struct {
		Data *struct {
			Event    string         `json:"event"`
			Agent    *SubagentAgent `json:"agent"`
			AgentIDs []string       `json:"agent_ids"`
			Snapshot *struct {
				Agents     []SubagentAgent `json:"agents"`
				Tombstones []string        `json:"tombstones"`
			} `json:"snapshot"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &line); err != nil {
		return fmt.Errorf("%s record is not valid JSON: %v", SubagentRegistryType, err)
	}
	d := line.Data
	if d == nil {
		return fmt.Errorf("%s record has no data", SubagentRegistryType)
	}
	switch d.Event {
	case "checkpoint":
		if d.Snapshot == nil {
			return fmt.Errorf("%s checkpoint has no snapshot", SubagentRegistryType)
		}
		clear(agents)
		for _, a := range d.Snapshot.Agents {
			if a.Agent != "" {
				agents[a.Agent] = a
			}
		}
		for _, id := range d.Snapshot.Tombstones {
			delete(agents, id)
		}
	case "agent-created":
		if d.Agent == nil || d.Agent.Agent == "" {
			return fmt.Errorf("%s agent-created names no agent", SubagentRegistryType)
		}
		agents[d.Agent.Agent] = *d.Agent
	case "agent-deleted":
		for _, id := range d.AgentIDs {
			delete(agents, id)
		}
	}
	return nil
}
