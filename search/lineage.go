package search

import (
	"path/filepath"
	"sort"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/journal"
)

// RootAgent is the agent name of a session no agent lineage record says
// was spawned by another (pihistory.RootAgent).
const RootAgent = pihistory.RootAgent

// LineageMember is one session of a lineage with the agent that owns it
// (pihistory.LineageMember).
type LineageMember = pihistory.LineageMember

// Lineage returns the sessions of a session's lineage (see LineageMembers),
// the session itself first.
func (e *Engine) Lineage(id string) ([]string, error) {
	ms, err := e.LineageMembers(id)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Session
	}
	return out, nil
}

// LineageMembers returns a session with its ancestors and its descendants,
// at any depth, through forks (a journal's parentSession) and through agent
// lineage records (journal.AgentParentType, journal.AgentChildType, and
// minimal-subagents' identity and registry records, read on each session's
// current branch): upward from a session to what it was
// forked from or spawned by, downward to its forks and to the children its
// records name. Siblings and cousins (reached only through an ancestor's
// other children) are not its lineage. A record that names an unknown
// session, or one already reached (a cycle), is passed over. The session
// comes first, the rest in id order.
func (e *Engine) LineageMembers(id string) ([]LineageMember, error) {
	infos, err := e.st.Sessions()
	if err != nil {
		return nil, err
	}
	w := lineageWalk{e: e, byFile: fileIndex(infos), known: map[string]bool{}, forkParent: map[string]string{},
		forkChildren: map[string][]string{}, own: map[string]string{}, hint: map[string]string{}, read: map[string]*agentLinks{},
		registries: map[string]map[string]journal.SubagentAgent{}}
	for _, si := range infos {
		w.known[si.ID] = true
	}
	for _, si := range infos {
		if si.ParentSession != "" {
			if p, ok := w.byFile[filepath.Base(si.ParentSession)]; ok && p != si.ID {
				w.forkParent[si.ID] = p
				w.forkChildren[p] = append(w.forkChildren[p], si.ID)
			}
		}
	}
	if !w.known[id] {
		return nil, notFoundf("session", "no session %q; list sessions to find its id", id)
	}
	seen := map[string]bool{id: true}
	out := []string{id}
	for _, up := range []bool{true, false} {
		for queue := []string{id}; len(queue) > 0; {
			s := queue[0]
			queue = queue[1:]
			for _, n := range w.next(s, up) {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
					queue = append(queue, n)
				}
			}
		}
	}
	sort.Strings(out[1:])
	ms := make([]LineageMember, len(out))
	for i, s := range out {
		ms[i] = LineageMember{Session: s, Agent: w.agentOf(s)}
	}
	return ms, nil
}

// lineageWalk holds what LineageMembers learns about the sessions it visits.
type lineageWalk struct {
	e            *Engine
	byFile       map[string]string // journal base name → session id
	known        map[string]bool
	forkParent   map[string]string
	forkChildren map[string][]string
	own          map[string]string // a session's own agent id, from its newest parent record
	hint         map[string]string // a session's agent id as named by the record that reached it
	read         map[string]*agentLinks
	registries   map[string]map[string]journal.SubagentAgent // a root session's minimal-subagents registry
}

// agentLinks are the sessions one session's agent lineage records name.
type agentLinks struct{ up, down []string }

// next returns the sessions one step up (parents) or down (children) from s.
func (w *lineageWalk) next(s string, up bool) []string {
	l := w.links(s)
	if up {
		if p := w.forkParent[s]; p != "" {
			return append([]string{p}, l.up...)
		}
		return l.up
	}
	return append(append([]string(nil), w.forkChildren[s]...), l.down...)
}

// links reads s's agent lineage records on its current branch (once). A
// session whose tree cannot be read has none.
func (w *lineageWalk) links(s string) *agentLinks {
	if l := w.read[s]; l != nil {
		return l
	}
	l := &agentLinks{}
	w.read[s] = l
	t, err := w.e.st.Tree(s)
	if err != nil {
		return l
	}
	var ident *journal.SubagentIdentity
	var registry map[string]journal.SubagentAgent
	for _, m := range t.Metas {
		if m.Type != "custom" || !journal.IsLineageType(m.Extra.CustomType) || !t.OnCurrentBranch(m.ID) {
			continue
		}
		raw, err := w.e.st.Raw(m.Seq)
		if err != nil {
			continue
		}
		switch m.Extra.CustomType {
		case journal.SubagentIdentityType:
			if id, err := journal.ParseSubagentIdentity(raw); err == nil {
				ident = &id // the newest one: a fork clone appends its own
			}
			continue
		case journal.SubagentRegistryType:
			if registry == nil {
				registry = map[string]journal.SubagentAgent{}
			}
			_ = journal.ApplySubagentRegistry(registry, raw) // an unreadable event changes nothing
			continue
		}
		rec, err := journal.ParseAgentLink(m.Extra.CustomType, raw)
		if err != nil {
			continue
		}
		if rec.Up && rec.Agent != "" {
			w.own[s] = rec.Agent // the newest one wins
		}
		other := w.resolve(rec)
		if other == "" || other == s {
			continue
		}
		if rec.Up {
			l.up = append(l.up, other)
			if rec.ParentAgent != "" && w.hint[other] == "" {
				w.hint[other] = rec.ParentAgent
			}
		} else {
			l.down = append(l.down, other)
			if rec.Agent != "" && w.hint[other] == "" {
				w.hint[other] = rec.Agent
			}
		}
	}
	if registry != nil {
		w.registries[s] = registry
	}
	w.subagentLinks(s, l, ident, registry)
	return l
}

// subagentLinks adds the links minimal-subagents records give: a child's
// parent (the root session, or the parent agent's session from the root's
// registry) and children (the registry's agents whose parent is this
// session's agent, or the root agent's for the root session).
func (w *lineageWalk) subagentLinks(s string, l *agentLinks, ident *journal.SubagentIdentity, registry map[string]journal.SubagentAgent) {
	add := func(to *[]string, sid, agent string) {
		if sid != "" && sid != s && w.known[sid] {
			*to = append(*to, sid)
			if agent != "" && w.hint[sid] == "" {
				w.hint[sid] = agent
			}
		}
	}
	me := journal.SubagentRootAgent
	if ident != nil {
		if w.own[s] == "" {
			w.own[s] = ident.Agent
		}
		me = ident.Agent
		registry = nil
		if root := ident.RootSession; root != s && w.known[root] {
			w.links(root)
			registry = w.registries[root]
		}
		if ident.Parent == journal.SubagentRootAgent {
			add(&l.up, ident.RootSession, RootAgent)
		} else if p, ok := registry[ident.Parent]; ok {
			add(&l.up, p.Session, p.Agent)
		}
	}
	for _, a := range registry {
		if a.Parent == me {
			add(&l.down, a.Session, a.Agent)
		}
	}
}

// resolve is the stored session a record names: by id, else by its
// journal's base name; "" when the store has no such session.
func (w *lineageWalk) resolve(rec journal.AgentLink) string {
	if rec.Session != "" && w.known[rec.Session] {
		return rec.Session
	}
	if rec.File != "" {
		return w.byFile[filepath.Base(rec.File)]
	}
	return ""
}

// agentOf is the agent owning s: its own record's, else the one the record
// that reached it named, else RootAgent. A fork copies its source's path,
// parent record included, so a child's fork belongs to the same agent.
func (w *lineageWalk) agentOf(s string) string {
	w.links(s)
	if a := w.own[s]; a != "" {
		return a
	}
	if a := w.hint[s]; a != "" {
		return a
	}
	return RootAgent
}
