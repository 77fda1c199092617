package rollover

import "github.com/pi-history/pi-history/journal"

// The Tail (seed B): the raw history a rollover of this extension keeps,
// sized by contextManagement.tailTokens with Pi's own token estimate instead
// of by Pi's keepRecentTokens. Pi's cut points still decide where the kept
// part may start, so a tool call is never separated from its result.
//
// The newest cut point a rollover may use is the assistant message that
// asked for it (its new_context call): seed B's Tail of 0 is "the rollover
// call and its result", and here the rollover is carried out when the run
// settles, after that call's result and the agent's last words. Without
// such a call in the window (the host, the fallback), it is the newest cut
// point of the window.

// tailCut is where a rollover with a Tail of budget tokens cuts
// path[start:]: walking back from the newest entry it adds up Pi's
// estimate of each message entry until budget is reached and takes the
// nearest cut point at or after that entry (the newest cut point when there
// is none after it), never later than the rollover's own call; then
// settles it as Pi's findCutPoint does (settleCut).
func tailCut(path []*journal.Entry, start, budget int) CutPoint {
	start = max(start, 0)
	var cutPoints []int
	for i := start; i < len(path); i++ {
		if isCutPoint(path[i]) {
			cutPoints = append(cutPoints, i)
		}
	}
	if len(cutPoints) == 0 {
		return CutPoint{FirstKeptIndex: start, TurnStartIndex: -1}
	}
	newest := cutPoints[len(cutPoints)-1]
	if call := rolloverCall(path, start); call >= 0 {
		newest = call
	}
	// The whole window fits the budget: keep all of it.
	cutIndex := cutPoints[0]
	accumulated := 0
	for i := len(path) - 1; i >= start; i-- {
		e := path[i]
		if e.Type != "message" {
			continue
		}
		if m, ok := EntryMessage(e); ok {
			accumulated += EstimateTokens(m)
		}
		if accumulated >= budget {
			cutIndex = newest
			for _, c := range cutPoints {
				if c >= i {
					cutIndex = min(c, newest)
					break
				}
			}
			break
		}
	}
	return settleCut(path, cutIndex, start)
}

// rolloverCall is the index of the newest assistant message in path[start:]
// with a new_context call that was not refused (its result, when there is
// one yet, is not an error), or -1.
func rolloverCall(path []*journal.Entry, start int) int {
	refused := map[string]bool{}
	for i := len(path) - 1; i >= max(start, 0); i-- {
		e := path[i]
		if e.Type == "compaction" {
			break
		}
		if e.Type == "message" && e.Role == "toolResult" && e.IsError {
			refused[e.ToolCallID] = true
		}
		if e.Type != "message" || e.Role != "assistant" {
			continue
		}
		m, ok := EntryMessage(e)
		if !ok {
			continue
		}
		bs, _ := blocks(m.Content)
		for j := range bs {
			if bs[j].typ() == "toolCall" && jsonStr(bs[j].Name) == "new_context" && !refused[jsonStr(bs[j].ID)] {
				return i
			}
		}
	}
	return -1
}
