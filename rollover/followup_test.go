package rollover

import (
	"fmt"
	"testing"
)

// followUp builds a session with one rollover whose summary pins the first
// user message, then the given turns after it: "h:<id>" is a history call
// reading entry id, "h?" a history search whose result names the pinned
// entry, "r" a read, "" a turn without tool calls.
func followUp(t *testing.T, fromHook bool, turns ...string) (Row, bool, string) {
	b := newJB(t)
	pin := b.user("fix the checkout bug")
	b.assistant("on it", 0)
	summary := "Context window #2 started (previous #1, rollover reason: host).\n\n## Task context preserved from earlier in this window (historical; already acted on)\n[history entry=" + pin + "] user: fix the checkout bug\n"
	b.add("compaction", map[string]any{"summary": summary, "firstKeptEntryId": pin, "tokensBefore": 1000, "fromHook": fromHook,
		"details": map[string]any{"windowNumber": 2, "notebookRevision": 1, "reason": "host"}})
	for i, turn := range turns {
		b.calls++
		call := fmt.Sprintf("call_%d", b.calls)
		switch {
		case turn == "":
			b.assistant(fmt.Sprintf("turn %d", i), 0)
		case turn == "r":
			b.msg(map[string]any{"role": "assistant", "stopReason": "toolUse", "content": []any{map[string]any{"type": "toolCall", "id": call, "name": "read", "arguments": map[string]any{"path": "x"}}}})
			b.toolResult(call, "read", "text")
		case turn == "h?":
			b.msg(map[string]any{"role": "assistant", "stopReason": "toolUse", "content": []any{map[string]any{"type": "toolCall", "id": call, "name": "history", "arguments": map[string]any{"query": "checkout"}}}})
			b.toolResult(call, "history", "[history entry="+pin+"] w1 user: fix the checkout bug")
		default: // h:<id>
			id := turn[2:]
			if id == "pin" {
				id = pin
			}
			b.msg(map[string]any{"role": "assistant", "stopReason": "toolUse", "content": []any{map[string]any{"type": "toolCall", "id": call, "name": "history", "arguments": map[string]any{"id": id}}}})
			b.toolResult(call, "history", "an entry")
		}
	}
	r, ok := FollowUpRow("s-1", b.path())
	return r, ok, pin
}

func TestFollowUpRowCountsHistoryCallsInTheFiveTurnsAfterARollover(t *testing.T) {
	cases := []struct {
		name     string
		fromHook bool
		turns    []string
		ok       bool
		calls    int
		hits     int
	}{
		{name: "fifth turn: calls and pinned hits counted", fromHook: true, turns: []string{"h:pin", "r", "h?", "h:e0000001x", ""}, ok: true, calls: 3, hits: 2},
		{name: "fifth turn without history calls", fromHook: true, turns: []string{"", "r", "", "r", ""}, ok: true},
		{name: "fourth turn: not yet", fromHook: true, turns: []string{"h:pin", "", "", ""}},
		{name: "sixth turn: already reported", fromHook: true, turns: []string{"h:pin", "", "", "", "", ""}},
		{name: "Pi's own compaction is not a rollover", turns: []string{"h:pin", "", "", "", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok, _ := followUp(t, c.fromHook, c.turns...)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v (row %+v)", ok, c.ok, r)
			}
			if !ok {
				return
			}
			if r.Kind != RowRolloverFollowUp || r.Window != 2 || r.Reason != ReasonHost || r.Calls != c.calls || r.PinnedHits != c.hits || r.EntryID == "" {
				t.Errorf("row %+v, want %d calls, %d pinned hits", r, c.calls, c.hits)
			}
			if err := checkRow(&r); err != nil {
				t.Errorf("the row would not be written: %v", err)
			}
		})
	}
}
