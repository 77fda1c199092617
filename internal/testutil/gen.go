package testutil

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// GenOptions shape a generated journal.
type GenOptions struct {
	Session    string  // session id (required)
	Entries    int     // entries after the header
	Seed       uint64  // same seed, same bytes
	BranchRate float64 // chance that an entry starts a new branch from an earlier entry
	Compaction float64 // chance that an entry is a compaction
	Cwd        string
	Parent     string // parentSession (a journal path), for forks
	Tokens     bool   // add a unique token "tok-<session>-<n>" to each searchable entry
}

var genWords = strings.Fields(`the store keeps every entry byte for byte and the index finds candidates fast
func return nil err error context window rollover notebook branch leaf compaction summary search literal
ErrCartEmpty Checkout cart handler deploy kubernetes pod restart timeout retry 日本語 naïve délai 🙂 🚀
"quoted" back\slash path/to/file.go:42 TODO FIXME panic: runtime error: index out of range`)

// Journal returns the text of a realistic Pi v3 journal: user and
// assistant messages with tool calls, tool results, shell commands, custom
// entries, labels, compactions and branches.
func Journal(o GenOptions) string {
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	cwd := o.Cwd
	if cwd == "" {
		cwd = "/home/dev/" + o.Session
	}
	var b strings.Builder
	line := func(v map[string]any) {
		enc, _ := json.Marshal(v)
		b.Write(enc)
		b.WriteByte('\n')
	}
	hdr := map[string]any{"type": "session", "version": 3, "id": o.Session, "timestamp": "2026-03-01T09:00:00.000Z", "cwd": cwd}
	if o.Parent != "" {
		hdr["parentSession"] = o.Parent
	}
	line(hdr)
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = genWords[r.IntN(len(genWords))]
		}
		return strings.Join(w, " ")
	}
	var ids []string
	var parent any
	for i := 0; i < o.Entries; i++ {
		id := fmt.Sprintf("%08x", r.Uint32())
		if len(ids) > 4 && r.Float64() < o.BranchRate {
			parent = ids[r.IntN(len(ids))]
		}
		tok := ""
		if o.Tokens {
			tok = fmt.Sprintf(" tok-%s-%d ", o.Session, i)
		}
		ts := fmt.Sprintf("2026-03-01T%02d:%02d:%02d.%03dZ", 9+i/3600%12, i/60%60, i%60, r.IntN(1000))
		e := map[string]any{"id": id, "parentId": parent, "timestamp": ts}
		switch k := r.IntN(10); {
		case len(ids) > 2 && r.Float64() < o.Compaction:
			e["type"], e["summary"], e["firstKeptEntryId"], e["tokensBefore"] = "compaction", "## Goal\n"+text(20)+tok, ids[len(ids)-2], 50000
		case k < 3:
			e["type"], e["message"] = "message", map[string]any{"role": "user", "content": text(5+r.IntN(40)) + tok, "timestamp": 1772442001500 + i}
		case k < 5:
			e["type"], e["message"] = "message", map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": text(10)},
				map[string]any{"type": "text", "text": text(10+r.IntN(60)) + tok},
				map[string]any{"type": "toolCall", "id": "call_" + id, "name": "bash", "arguments": map[string]any{"command": "grep -rn " + text(2)}},
			}, "stopReason": "toolUse", "timestamp": 1772442001500 + i}
		case k < 8:
			e["type"], e["message"] = "message", map[string]any{"role": "toolResult", "toolName": "bash", "toolCallId": "call_x",
				"content": []any{map[string]any{"type": "text", "text": text(20+r.IntN(300)) + tok}}, "isError": r.IntN(20) == 0, "timestamp": 1772442001500 + i}
		case k == 8:
			e["type"], e["message"] = "message", map[string]any{"role": "bashExecution", "command": "go test ./...", "output": text(30) + tok, "exitCode": 0, "timestamp": 1772442001500 + i}
		default:
			e["type"], e["customType"], e["content"], e["display"] = "custom_message", "pi-todo", "Reminder: "+text(8)+tok, true
		}
		line(e)
		ids = append(ids, id)
		parent = id
	}
	return b.String()
}

// WriteJournal writes Journal(o) to dir/name.
func WriteJournal(t testing.TB, dir, name string, o GenOptions) string {
	t.Helper()
	return WriteFile(t, dir, name, Journal(o))
}
