package rollover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pi-history/pi-history/journal"
)

// This file ports the cut-point choice and token estimate of Pi 0.73.1
// (dist/core/compaction/compaction.js and buildSessionContext in
// dist/core/session-manager.js). Where Pi would throw on a malformed entry
// (a missing content array, a tool call without arguments), the port counts
// nothing for that part instead; such entries cannot come from Pi's own
// writers.

// PiVersion is the Pi release whose compaction code this file follows.
const PiVersion = "0.73.1"

// Message is one AgentMessage of Pi's LLM context, as produced from a journal
// entry. Only the fields Pi's estimate and cut-point code read are kept, raw,
// so that lengths can be measured the way JavaScript measures them.
type Message struct {
	Role       string // user, assistant, toolResult, bashExecution, custom, branchSummary, compactionSummary, …
	EntryID    string // the entry it came from
	Index      int    // position of that entry in the path it was built from
	CustomType string

	Content    json.RawMessage // user, assistant, toolResult, custom
	Command    json.RawMessage // bashExecution
	Output     json.RawMessage // bashExecution
	Summary    json.RawMessage // branchSummary, compactionSummary
	StopReason string          // assistant
	Usage      *AssistantUsage // assistant, when reported
	ToolCallID string          // toolResult

	ExcludeFromContext bool // bashExecution run with !!
}

// AssistantUsage is the token usage an assistant message reports.
type AssistantUsage struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CacheRead   float64 `json:"cacheRead"`
	CacheWrite  float64 `json:"cacheWrite"`
	TotalTokens float64 `json:"totalTokens"`
}

// ContextTokens is Pi's calculateContextTokens: totalTokens when non-zero,
// else the sum of the parts.
func (u AssistantUsage) ContextTokens() int {
	if u.TotalTokens != 0 {
		return int(u.TotalTokens)
	}
	return int(u.Input + u.Output + u.CacheRead + u.CacheWrite)
}

type rawMessage struct {
	Role               string          `json:"role"`
	Content            json.RawMessage `json:"content"`
	Command            json.RawMessage `json:"command"`
	Output             json.RawMessage `json:"output"`
	Summary            json.RawMessage `json:"summary"`
	StopReason         json.RawMessage `json:"stopReason"`
	Usage              json.RawMessage `json:"usage"`
	ToolCallID         json.RawMessage `json:"toolCallId"`
	CustomType         json.RawMessage `json:"customType"`
	ExcludeFromContext json.RawMessage `json:"excludeFromContext"`
}

type rawEntryFields struct {
	Message    json.RawMessage `json:"message"`
	Content    json.RawMessage `json:"content"`
	Summary    json.RawMessage `json:"summary"`
	Details    json.RawMessage `json:"details"`
	CustomType json.RawMessage `json:"customType"`
}

// EntryMessage returns the message an entry contributes to Pi's context, as
// Pi's compaction code sees it (getMessageFromEntry): message entries give
// their message, custom_message gives a custom message, branch_summary a
// branchSummary and compaction a compactionSummary. Other entries give
// false.
func EntryMessage(e *journal.Entry) (Message, bool) {
	m := Message{EntryID: e.ID, CustomType: e.CustomType}
	var r rawEntryFields
	switch e.Type {
	case "message", "custom_message", "branch_summary", "compaction":
	default:
		return m, false
	}
	if err := json.Unmarshal(e.Raw, &r); err != nil {
		return m, false
	}
	switch e.Type {
	case "message":
		var rm rawMessage
		if json.Unmarshal(r.Message, &rm) != nil {
			return m, false
		}
		m.Role = e.Role // already migrated (hookMessage → custom)
		m.Content, m.Command, m.Output, m.Summary = rm.Content, rm.Command, rm.Output, rm.Summary
		m.StopReason = jsonStr(rm.StopReason)
		m.ToolCallID = jsonStr(rm.ToolCallID)
		m.ExcludeFromContext = bytes.Equal(bytes.TrimSpace(rm.ExcludeFromContext), []byte("true"))
		if u := bytes.TrimSpace(rm.Usage); len(u) > 0 && u[0] == '{' {
			var us AssistantUsage
			if json.Unmarshal(u, &us) == nil {
				m.Usage = &us
			}
		}
	case "custom_message":
		m.Role, m.Content = "custom", r.Content
	case "branch_summary":
		m.Role, m.Summary = "branchSummary", r.Summary
	case "compaction":
		m.Role, m.Summary = "compactionSummary", r.Summary
	}
	return m, true
}

func jsonStr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// rawBlock is a content block with every field kept raw.
type rawBlock struct {
	Type      json.RawMessage `json:"type"`
	Text      json.RawMessage `json:"text"`
	Thinking  json.RawMessage `json:"thinking"`
	Name      json.RawMessage `json:"name"`
	ID        json.RawMessage `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
}

func (b *rawBlock) typ() string { return jsonStr(b.Type) }

func strLen(raw json.RawMessage) int {
	n, _ := jsStringLen(bytes.TrimSpace(raw))
	return n
}

func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

func blocks(raw json.RawMessage) ([]rawBlock, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var bs []rawBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil, false
	}
	return bs, true
}

// imageChars is what Pi counts for an image block of a tool result or
// custom message.
const imageChars = 4800

// EstimateTokens is Pi's estimateTokens: the message's characters (UTF-16
// code units) divided by four, rounded up.
func EstimateTokens(m Message) int {
	chars := 0
	switch m.Role {
	case "user":
		if isJSONString(m.Content) {
			chars = strLen(m.Content)
		} else if bs, ok := blocks(m.Content); ok {
			for i := range bs {
				if bs[i].typ() == "text" {
					chars += strLen(bs[i].Text) // an empty text adds nothing either way
				}
			}
		}
	case "assistant":
		bs, _ := blocks(m.Content)
		for i := range bs {
			switch bs[i].typ() {
			case "text":
				chars += strLen(bs[i].Text)
			case "thinking":
				chars += strLen(bs[i].Thinking)
			case "toolCall":
				n, _ := jsStringifyLen(bytes.TrimSpace(bs[i].Arguments))
				chars += strLen(bs[i].Name) + n
			}
		}
	case "custom", "toolResult":
		if isJSONString(m.Content) {
			chars = strLen(m.Content)
		} else if bs, ok := blocks(m.Content); ok {
			for i := range bs {
				switch bs[i].typ() {
				case "text":
					chars += strLen(bs[i].Text)
				case "image":
					chars += imageChars
				}
			}
		}
	case "bashExecution":
		chars = strLen(m.Command) + strLen(m.Output)
	case "branchSummary", "compactionSummary":
		chars = strLen(m.Summary)
	default:
		return 0
	}
	return (chars + 3) / 4
}

// CutPoint is the result of FindCutPoint; indices are into the path.
type CutPoint struct {
	FirstKeptIndex int  `json:"firstKeptEntryIndex"`
	TurnStartIndex int  `json:"turnStartIndex"` // -1 when the cut is at a turn start
	IsSplitTurn    bool `json:"isSplitTurn"`
}

// isCutPoint is Pi's findValidCutPoints test for one entry: a user,
// assistant, bashExecution, custom, branchSummary or compactionSummary
// message, or a branch_summary or custom_message entry. Never a tool result.
func isCutPoint(e *journal.Entry) bool {
	switch e.Type {
	case "message":
		switch e.Role {
		case "bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant":
			return true
		}
	case "branch_summary", "custom_message":
		return true
	}
	return false
}

// FindTurnStartIndex is Pi's findTurnStartIndex: the user message,
// bashExecution, branch_summary or custom_message at or before entryIndex
// (not before startIndex) that starts its turn, or -1.
func FindTurnStartIndex(path []*journal.Entry, entryIndex, startIndex int) int {
	for i := entryIndex; i >= startIndex; i-- {
		e := path[i]
		if e.Type == "branch_summary" || e.Type == "custom_message" {
			return i
		}
		if e.Type == "message" && (e.Role == "user" || e.Role == "bashExecution") {
			return i
		}
	}
	return -1
}

// FindCutPoint is Pi's findCutPoint over path[startIndex:endIndex]: walking
// back from the newest entry it adds up the estimate of every message entry
// until keepRecentTokens is reached, cuts at the nearest valid cut point at
// or after that entry, then moves the cut back over any non-message entries
// (settings, labels, custom entries) that directly precede it, stopping at a
// compaction.
func FindCutPoint(path []*journal.Entry, startIndex, endIndex, keepRecentTokens int) CutPoint {
	return findCutPoint(path, nil, startIndex, endIndex, keepRecentTokens)
}

// findCutPoint takes optional precomputed estimates (one per path entry).
func findCutPoint(path []*journal.Entry, est []int, startIndex, endIndex, keepRecentTokens int) CutPoint {
	startIndex = max(startIndex, 0)
	endIndex = min(endIndex, len(path))
	var cutPoints []int
	for i := startIndex; i < endIndex; i++ {
		if isCutPoint(path[i]) {
			cutPoints = append(cutPoints, i)
		}
	}
	if len(cutPoints) == 0 {
		return CutPoint{FirstKeptIndex: startIndex, TurnStartIndex: -1}
	}
	accumulated := 0
	cutIndex := cutPoints[0]
	for i := endIndex - 1; i >= startIndex; i-- {
		e := path[i]
		if e.Type != "message" {
			continue
		}
		var t int
		if est != nil {
			t = est[i]
		} else if m, ok := EntryMessage(e); ok {
			t = EstimateTokens(m)
		}
		accumulated += t
		if accumulated >= keepRecentTokens {
			for _, c := range cutPoints {
				if c >= i {
					cutIndex = c
					break
				}
			}
			break
		}
	}
	return settleCut(path, cutIndex, startIndex)
}

// settleCut finishes a cut at path[cutIndex] as Pi's findCutPoint does: the
// cut moves back over the non-message entries just before it (not past a
// compaction or startIndex), and a cut that is not a user message splits
// the turn that began at its turn start.
func settleCut(path []*journal.Entry, cutIndex, startIndex int) CutPoint {
	for cutIndex > startIndex {
		prev := path[cutIndex-1]
		if prev.Type == "compaction" || prev.Type == "message" {
			break
		}
		cutIndex--
	}
	cut := path[cutIndex]
	turnStart := -1
	if !(cut.Type == "message" && cut.Role == "user") {
		turnStart = FindTurnStartIndex(path, cutIndex, startIndex)
	}
	return CutPoint{FirstKeptIndex: cutIndex, TurnStartIndex: turnStart, IsSplitTurn: turnStart != -1}
}

// BuildContext is Pi's buildSessionContext for a path given root first: the
// messages of the LLM context, with the last compaction on the path applied
// (its summary, then the entries from its firstKeptEntryId up to it, then
// everything after it). Each message records the entry it came from.
func BuildContext(path []*journal.Entry) []Message {
	var out []Message
	add := func(i int) {
		if m, ok := contextMessage(path[i]); ok {
			m.Index = i
			out = append(out, m)
		}
	}
	comp := -1
	for i, e := range path {
		if e.Type == "compaction" {
			comp = i
		}
	}
	if comp < 0 {
		for i := range path {
			add(i)
		}
		return out
	}
	if m, ok := EntryMessage(path[comp]); ok {
		m.Index = comp
		out = append(out, m)
	}
	firstKept := path[comp].FirstKeptEntryID
	found := false
	for i := 0; i < comp; i++ {
		if path[i].ID == firstKept {
			found = true
		}
		if found {
			add(i)
		}
	}
	for i := comp + 1; i < len(path); i++ {
		add(i)
	}
	return out
}

// contextMessage is buildSessionContext's appendMessage: the message an
// entry adds to the context outside a compaction summary. Message and
// custom_message entries always add one, a branch_summary only when its
// summary is not empty.
func contextMessage(e *journal.Entry) (Message, bool) {
	switch e.Type {
	case "message", "custom_message":
	case "branch_summary":
		if m, ok := EntryMessage(e); !ok || strLen(m.Summary) == 0 {
			return Message{}, false
		}
	default:
		return Message{}, false
	}
	return EntryMessage(e)
}

// ContextEstimate is Pi's estimateContextTokens result.
type ContextEstimate struct {
	Tokens         int `json:"tokens"`
	UsageTokens    int `json:"usageTokens"`
	TrailingTokens int `json:"trailingTokens"`
	LastUsageIndex int `json:"lastUsageIndex"` // -1 when no assistant message reported usage
}

// usable is Pi's getAssistantUsage test.
func (m *Message) usable() bool {
	return m.Role == "assistant" && m.Usage != nil && m.StopReason != "aborted" && m.StopReason != "error"
}

// EstimateContextTokens is Pi's estimateContextTokens: the usage the last
// assistant message reported (skipping aborted and failed ones) plus the
// estimate of every message after it; the plain sum of estimates when no
// message reported usage.
func EstimateContextTokens(msgs []Message) ContextEstimate {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].usable() {
			last = i
			break
		}
	}
	if last < 0 {
		n := 0
		for _, m := range msgs {
			n += EstimateTokens(m)
		}
		return ContextEstimate{Tokens: n, TrailingTokens: n, LastUsageIndex: -1}
	}
	u := msgs[last].Usage.ContextTokens()
	t := 0
	for _, m := range msgs[last+1:] {
		t += EstimateTokens(m)
	}
	return ContextEstimate{Tokens: u + t, UsageTokens: u, TrailingTokens: t, LastUsageIndex: last}
}

// Preparation is the part of Pi's prepareCompaction this package needs:
// where the droppable range starts, where the cut falls, and Pi's
// tokensBefore.
type Preparation struct {
	BoundaryStart    int      `json:"boundaryStart"`  // first entry a compaction may drop (the previous compaction's kept tail)
	PrevCompaction   int      `json:"prevCompaction"` // index of the last compaction on the path, -1 if none
	Cut              CutPoint `json:"cut"`
	FirstKeptEntryID string   `json:"firstKeptEntryId"`
	TokensBefore     int      `json:"tokensBefore"`
}

// ErrNothingToCompact is returned by PrepareCut where Pi's prepareCompaction
// returns undefined: an empty path, or one whose last entry is a compaction.
var ErrNothingToCompact = errors.New("nothing to compact: the path is empty or already ends in a compaction")

// PrepareCut computes where Pi would cut the path (root first) with the given
// keepRecentTokens, exactly as prepareCompaction does.
func PrepareCut(path []*journal.Entry, keepRecentTokens int) (Preparation, error) {
	if len(path) == 0 || path[len(path)-1].Type == "compaction" {
		return Preparation{}, ErrNothingToCompact
	}
	p := Preparation{PrevCompaction: -1}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == "compaction" {
			p.PrevCompaction = i
			break
		}
	}
	if p.PrevCompaction >= 0 {
		p.BoundaryStart = p.PrevCompaction + 1
		want := path[p.PrevCompaction].FirstKeptEntryID
		for i, e := range path {
			if e.ID == want {
				p.BoundaryStart = i
				break
			}
		}
	}
	p.TokensBefore = EstimateContextTokens(BuildContext(path)).Tokens
	p.Cut = FindCutPoint(path, p.BoundaryStart, len(path), keepRecentTokens)
	p.FirstKeptEntryID = path[p.Cut.FirstKeptIndex].ID
	if p.FirstKeptEntryID == "" {
		return p, fmt.Errorf("entry at path index %d has no id", p.Cut.FirstKeptIndex)
	}
	return p, nil
}

// HistoryEnd is the index where the summarised history ends: the turn start
// for a split turn, else the first kept entry (Pi's historyEnd).
func (p Preparation) HistoryEnd() int {
	if p.Cut.IsSplitTurn {
		return p.Cut.TurnStartIndex
	}
	return p.Cut.FirstKeptIndex
}
