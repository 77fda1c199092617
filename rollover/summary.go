package rollover

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
)

// RolloverInput is what Rollover needs to write a compaction.
type RolloverInput struct {
	Path     []*journal.Entry // the active branch, root first, Raw populated
	Notebook *notebook.State  // the notebook on that branch; nil when none
	Reason   Reason
	// FirstKeptEntryID is the cut Pi actually makes (preparation.firstKeptEntryId
	// in session_before_compact, or the boundary projection). When empty the
	// cut is projected with Pi.KeepRecentTokens, as the boundary path does.
	FirstKeptEntryID string
	Pi               PiSettings
	Config           Config
}

// Compaction is the compaction this package proposes: the object the
// extension returns from session_before_compact or appends as a boundary
// entry. Pi writes it with fromHook: true.
type Compaction struct {
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId"`
	TokensBefore     int     `json:"tokensBefore"`
	Details          Details `json:"details"`
}

// Details are the compaction's details: which window it starts, from which
// notebook revision, and why.
type Details struct {
	WindowNumber     int    `json:"windowNumber"`
	NotebookRevision int    `json:"notebookRevision"`
	Reason           Reason `json:"reason"`
	// HandoffEntryID is the Handoff entry the summary carries; absent
	// when the rollover had none.
	HandoffEntryID string `json:"handoffEntryId,omitempty"`
}

// ErrCutNotOnBranch is returned when the proposed cut is not an entry of the
// droppable part of the path (a stale id, or one from another branch or
// session).
var ErrCutNotOnBranch = errors.New("the cut point is not on the active branch")

// Refusal is returned when a rollover may not run: the gate's blocker, with
// the text the model is shown.
type Refusal struct {
	Blocker Blocker
	Text    string
}

func (r *Refusal) Error() string { return "rollover refused (" + string(r.Blocker) + "): " + r.Text }

func refuse(b Blocker) *Refusal { return &Refusal{Blocker: b, Text: blockerText[b]} }

// plan is a cut with what it drops, shared by the gate and the summary.
type plan struct {
	prep        Preparation
	lastDropped int // index of the last message-producing entry before the cut; -1 when none
	window      int // current window number
}

// makePlan locates the cut: Pi's projection, or the given entry id.
func makePlan(path []*journal.Entry, firstKept string, pi PiSettings) (*plan, error) {
	pi = pi.withDefaults()
	prep, err := PrepareCut(path, pi.KeepRecentTokens)
	if err != nil {
		return nil, err
	}
	if firstKept == "" && pi.TailTokens != nil {
		// Seed B's Tail instead of Pi's keepRecentTokens (tail.go).
		prep.Cut = tailCut(path, prep.BoundaryStart, max(*pi.TailTokens, 0))
		prep.FirstKeptEntryID = path[prep.Cut.FirstKeptIndex].ID
	}
	if firstKept != "" && firstKept != prep.FirstKeptEntryID {
		i := indexOf(path, firstKept)
		if i < prep.BoundaryStart || i >= len(path) {
			return nil, fmt.Errorf("%w: %q", ErrCutNotOnBranch, firstKept)
		}
		cut := CutPoint{FirstKeptIndex: i, TurnStartIndex: -1}
		if !(path[i].Type == "message" && path[i].Role == "user") {
			cut.TurnStartIndex = FindTurnStartIndex(path, i, prep.BoundaryStart)
			cut.IsSplitTurn = cut.TurnStartIndex != -1
		}
		prep.Cut, prep.FirstKeptEntryID = cut, firstKept
	}
	p := &plan{prep: prep, lastDropped: -1, window: windowNumber(path)}
	for i := prep.Cut.FirstKeptIndex - 1; i >= prep.BoundaryStart; i-- {
		if e := path[i]; producesMessage(e) {
			p.lastDropped = i
			break
		}
	}
	return p, nil
}

// producesMessage reports whether an entry adds a message to Pi's context
// (a compaction's own summary is not something a cut drops).
func producesMessage(e *journal.Entry) bool {
	switch e.Type {
	case "message", "custom_message", "branch_summary":
		return true
	}
	return false
}

// fresh reports whether the notebook was reviewed at or after the last
// entry the cut drops.
func (p *plan) fresh(path []*journal.Entry, nb *notebook.State) bool {
	if p.lastDropped < 0 {
		return true
	}
	r := indexOf(path, nb.ReviewedThrough)
	if r < 0 {
		return false
	}
	// The review covers what follows it directly without adding anything
	// to read: the results of its own calls and entries outside the
	// context (the notebook record). A Tail that cuts right after a notes
	// call drops just those.
	for r+1 < len(path) && (!producesMessage(path[r+1]) || path[r+1].Type == "message" && path[r+1].Role == "toolResult") {
		r++
	}
	return r >= p.lastDropped
}

// notebookOnBranch reports whether nb is a notebook of this branch.
func notebookOnBranch(path []*journal.Entry, nb *notebook.State) bool {
	return nb != nil && (nb.EntryID == "" || indexOf(path, nb.EntryID) >= 0)
}

// Rollover writes the template compaction for a rollover: the checks that
// must hold at the actual cut (a notebook on the branch, reviewed through
// the last dropped entry, and something to drop) and the summary of docs/spec-notes.md, "The rollover summary".
// A failed check returns a *Refusal; a bad cut returns ErrCutNotOnBranch.
func Rollover(in RolloverInput) (Compaction, error) {
	if !notebookOnBranch(in.Path, in.Notebook) {
		return Compaction{}, refuse(BlockNoNotebook)
	}
	p, err := makePlan(in.Path, in.FirstKeptEntryID, in.Pi)
	if errors.Is(err, ErrNothingToCompact) {
		return Compaction{}, refuse(BlockNothingToDrop)
	}
	if err != nil {
		return Compaction{}, err
	}
	if !p.fresh(in.Path, in.Notebook) {
		return Compaction{}, refuse(BlockStaleNotebook)
	}
	if p.lastDropped < 0 {
		return Compaction{}, refuse(BlockNothingToDrop)
	}
	return compose(in.Path, p, in.Notebook, in.Reason, in.Config), nil
}

func compose(path []*journal.Entry, p *plan, nb *notebook.State, reason Reason, cfg Config) Compaction {
	var b strings.Builder
	fmt.Fprintf(&b, "Context window #%d started (previous #%d, rollover reason: %s).\n", p.window+1, p.window, reason)
	b.WriteString("The raw transcript before this point remains in the session and is readable with `history`.\n")
	emergency := reason == ReasonEmergency
	if emergency {
		b.WriteString(emergencyNotice)
	}

	revision := 0
	switch {
	case nb != nil:
		revision = nb.Revision
		stale := ""
		if emergency {
			stale = ", may be stale"
		}
		fmt.Fprintf(&b, "\n## Notebook (revision %d, reviewed through entry %s%s)\n", nb.Revision, nb.ReviewedThrough, stale)
		if text := nb.Sections.Render(); text != "" {
			b.WriteString(text)
			b.WriteByte('\n')
		}
	default:
		b.WriteString("\n## Notebook\n(none on this branch)\n")
	}

	handoff, hasHandoff := CurrentHandoff(path, p.prep.BoundaryStart)
	switch {
	case emergency:
		// The last saved Handoff, whichever window it was written in,
		// always marked stale: it was written before the overflow.
		handoff, hasHandoff = LastHandoff(path)
		if hasHandoff {
			fmt.Fprintf(&b, "\n## Handoff (STALE: saved before the context overflowed, entry %s; check it against `history`)\n", handoff.EntryID)
			b.WriteString(strings.TrimRight(handoff.Text, "\n"))
			b.WriteByte('\n')
		} else {
			b.WriteString("\n## Handoff\n(none saved before the context overflowed)\n")
		}
	case hasHandoff:
		fmt.Fprintf(&b, "\n## Handoff (written by the agent for this rollover, entry %s)\n", handoff.EntryID)
		b.WriteString(strings.TrimRight(handoff.Text, "\n"))
		b.WriteByte('\n')
	}

	b.WriteString(noteIndexHeading)
	if notes := noteIndex(path); len(notes) > 0 {
		for _, l := range notes {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("(none)\n")
	}

	if idx := sessionIndex(path, p.prep.BoundaryStart, cfg.SessionIndexMaxTokens); len(idx) > 0 {
		b.WriteString("\n## Earlier user messages in this session (index, oldest first; wN = window — a topic listed here was already worked on, read its entry before redoing it)\n")
		for _, l := range idx {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	if pins := pinned(path, p.prep.BoundaryStart, p.prep.Cut.FirstKeptIndex, cfg); len(pins) > 0 {
		b.WriteString("\n## Task context preserved from earlier in this window (historical; already acted on)\n")
		for _, l := range pins {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	switch {
	case emergency:
		b.WriteString("\n" + emergencyClosingInstruction)
	case hasHandoff:
		b.WriteString("\n" + handoffClosingInstruction)
	default:
		b.WriteString("\n" + closingInstruction)
	}
	return Compaction{
		Summary:          b.String(),
		FirstKeptEntryID: p.prep.FirstKeptEntryID,
		TokensBefore:     p.prep.TokensBefore,
		Details:          Details{WindowNumber: p.window + 1, NotebookRevision: revision, Reason: reason, HandoffEntryID: handoff.EntryID},
	}
}

const closingInstruction = "Continue with the notebook's Next action. Before investigating, evaluating or recommending something, check `history` for an earlier result on that topic (an entry from the index above, or a query on its key term) and build on it instead of redoing the work.\n"

const handoffClosingInstruction = "Continue from the Handoff, with the notebook's Next action as the plan. Before investigating, evaluating or recommending something, check `history` for an earlier result on that topic (an entry from the index above, or a query on its key term) and build on it instead of redoing the work.\n"

// userMessage returns the text blocks (joined by newlines) and the number of
// image blocks of a user message entry; ok is false for other entries.
func userMessage(e *journal.Entry) (text string, images int, ok bool) {
	if e.Type != "message" || e.Role != "user" {
		return "", 0, false
	}
	var r struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(e.Raw, &r) != nil {
		return "", 0, true
	}
	bs, _ := blocks(r.Message.Content)
	for i := range bs {
		if bs[i].typ() == "image" {
			images++
		}
	}
	return journal.ContentText(r.Message.Content), images, true
}

// lineTokens is what one summary line costs: Pi's estimate of the line and
// its newline.
func lineTokens(s string) int { return (jsUTF16Len(s) + 1 + 3) / 4 }

// sessionIndex builds the index lines of the user messages before end (those
// that left the window in earlier rollovers), within budget tokens. Over
// budget every line's text is cut to IndexLineCutChars, then the oldest lines
// are dropped behind a count line; the newest line always stays. Each line's
// cost is computed once per form, so this is linear in the messages.
func sessionIndex(path []*journal.Entry, end, budget int) []string {
	win := journal.WindowOf(path)
	type entry struct {
		prefix, text string
		cost         int
	}
	var es []entry
	total := 0
	for i := 0; i < end && i < len(path); i++ {
		text, images, ok := userMessage(path[i])
		if !ok {
			continue
		}
		e := entry{prefix: fmt.Sprintf("w%d [history entry=%s] ", win[i], path[i].ID), text: ExtractIndexLine(text, images)}
		e.cost = lineTokens(e.prefix + e.text)
		total += e.cost
		es = append(es, e)
	}
	if len(es) == 0 {
		return nil
	}
	if total > budget {
		total = 0
		for i := range es {
			es[i].text = clip(es[i].text, IndexLineCutChars)
			es[i].cost = lineTokens(es[i].prefix + es[i].text)
			total += es[i].cost
		}
	}
	first := 0
	var count string
	if total > budget {
		count = olderLine(len(es))
		used := lineTokens(count) + es[len(es)-1].cost
		first = len(es) - 1
		for first > 0 && used+es[first-1].cost <= budget {
			first--
			used += es[first].cost
		}
		count = olderLine(first)
	}
	out := make([]string, 0, len(es)-first+1)
	if count != "" {
		out = append(out, count)
	}
	for _, e := range es[first:] {
		out = append(out, e.prefix+e.text)
	}
	return out
}

func olderLine(k int) string {
	noun := "messages"
	if k == 1 {
		noun = "message"
	}
	return fmt.Sprintf("(%d older user %s not listed; `history({ list: true })` shows them)", k, noun)
}

// pinned returns the pinned lines for the user messages in path[start:end],
// the part the cut drops: the first verbatim, the rest cut to
// PinnedMessageMaxChars, within PinnedTotalMaxTokens. Over budget the first
// keeps its text and the rest keep their first line; if that is still over,
// the oldest of the rest are dropped behind a count line, newest kept.
func pinned(path []*journal.Entry, start, end int, cfg Config) []string {
	type pin struct {
		id, text string
		images   int
	}
	var ps []pin
	for i := max(start, 0); i < end && i < len(path); i++ {
		if text, images, ok := userMessage(path[i]); ok {
			ps = append(ps, pin{id: path[i].ID, text: text, images: images})
		}
	}
	if len(ps) == 0 {
		return nil
	}
	render := func(p pin, text string) string {
		if p.images > 0 {
			text = strings.TrimRight(text+" "+imageTag(p.images), " ")
		}
		return "[history entry=" + p.id + "] user: " + text
	}
	lines := make([]string, len(ps))
	costs := make([]int, len(ps))
	total := 0
	for i, p := range ps {
		t := p.text
		if i > 0 {
			t = clip(t, cfg.PinnedMessageMaxChars)
		}
		lines[i] = render(p, t)
		costs[i] = lineTokens(lines[i])
		total += costs[i]
	}
	if total <= cfg.PinnedTotalMaxTokens {
		return lines
	}
	total = costs[0]
	for i := 1; i < len(ps); i++ {
		first, _, _ := strings.Cut(ps[i].text, "\n")
		lines[i] = render(ps[i], clip(strings.TrimRight(first, "\r"), cfg.PinnedMessageMaxChars))
		costs[i] = lineTokens(lines[i])
		total += costs[i]
	}
	if total <= cfg.PinnedTotalMaxTokens || len(ps) == 1 {
		return lines
	}
	// Keep the first and as many of the newest as fit.
	used := costs[0] + lineTokens(morePinnedLine(len(ps)))
	from := len(ps)
	for from > 1 && used+costs[from-1] <= cfg.PinnedTotalMaxTokens {
		from--
		used += costs[from]
	}
	out := []string{lines[0]}
	if from > 1 {
		out = append(out, morePinnedLine(from-1))
	}
	return append(out, lines[from:]...)
}

func morePinnedLine(k int) string {
	noun := "messages"
	if k == 1 {
		noun = "message"
	}
	return fmt.Sprintf("(%d more user %s from this window not shown; `history({ list: true })` shows them)", k, noun)
}
