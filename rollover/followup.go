package rollover

import (
	"encoding/json"
	"regexp"

	"github.com/pi-history/pi-history/journal"
)

// FollowUpTurns is how many assistant turns after a rollover its history use
// is counted over (docs/spec-notes.md, "The ledger").
const FollowUpTurns = 5

// RowRolloverFollowUp is the ledger row of a rollover's first FollowUpTurns
// turns: the history calls made in them (Calls) and how many of those named
// or returned an entry the rollover summary pinned (PinnedHits).
const RowRolloverFollowUp = "rollover_followup"

// pinnedLine matches a pinned user message of a rollover summary (see
// pinned); index lines start with their window number instead.
var pinnedLine = regexp.MustCompile(`(?m)^\[history entry=([A-Za-z0-9_-]+)\] user:`)

// idWord is a word that may be an entry id.
var idWord = regexp.MustCompile(`[A-Za-z0-9_-]+`)

// FollowUpRow returns the follow-up row of this plugin's last rollover on
// path when path ends in the FollowUpTurns-th assistant turn after it, so
// that a turn_end reports each rollover once; ok is false otherwise (no
// rollover of this plugin, Pi's own compaction last, or another turn).
func FollowUpRow(session string, path []*journal.Entry) (Row, bool) {
	at := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == "compaction" {
			at = i
			break
		}
	}
	if at < 0 || !path[at].FromHook {
		return Row{}, false
	}
	var c struct {
		Summary string  `json:"summary"`
		Details Details `json:"details"`
	}
	if json.Unmarshal(path[at].Raw, &c) != nil || !ValidReason(c.Details.Reason) || c.Details.WindowNumber == 0 {
		return Row{}, false
	}
	pins := map[string]bool{}
	for _, m := range pinnedLine.FindAllStringSubmatch(c.Summary, -1) {
		pins[m[1]] = true
	}
	// A pinned id as a whole word of the text (an id inside a longer one
	// is not it).
	mentionsPin := func(s string) bool {
		for _, w := range idWord.FindAllString(s, -1) {
			if pins[w] {
				return true
			}
		}
		return false
	}
	turns := 0
	hit := map[string]bool{} // history call id → it named or returned a pinned entry
	for _, e := range path[at+1:] {
		switch {
		case e.Type == "message" && e.Role == "assistant":
			turns++
			m, ok := EntryMessage(e)
			if !ok {
				continue
			}
			bs, _ := blocks(m.Content)
			for i := range bs {
				if bs[i].typ() == "toolCall" && jsonStr(bs[i].Name) == "history" {
					id := jsonStr(bs[i].ID)
					hit[id] = hit[id] || mentionsPin(string(bs[i].Arguments))
				}
			}
		case e.Type == "message" && e.Role == "toolResult":
			if _, ours := hit[e.ToolCallID]; ours && !hit[e.ToolCallID] {
				hit[e.ToolCallID] = mentionsPin(string(e.Raw))
			}
		}
	}
	if turns != FollowUpTurns {
		return Row{}, false
	}
	r := Row{Kind: RowRolloverFollowUp, Session: session, Window: c.Details.WindowNumber, Reason: c.Details.Reason,
		EntryID: path[at].ID, Calls: len(hit)}
	for _, h := range hit {
		if h {
			r.PinnedHits++
		}
	}
	return r, true
}
