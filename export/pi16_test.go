package export

import (
	"bytes"
	"strings"
	"testing"
)

// TestPi16EntriesRenderAsWhatTheyAre exports the Pi 1.6.0 tree fixture as
// Markdown and HTML: system messages show the prompt and what changes,
// context edits say what the model reads instead, usage entries and
// timings are shown, and no new kind falls back to "unknown entry".
func TestPi16EntriesRenderAsWhatTheyAre(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "../journal/testdata/pi16/tree.jsonl")
	for _, f := range []Format{Markdown, HTML} {
		x, err := New(st, sid, Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := x.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		want := []string{"System prompt change", "You are a careful coding assistant.", "ection preamble", "tools removed: read",
			"is left out of the model&#39;s context from here on", "[cart_test.go: elided]", "1,801 tokens (1 out, 1,800 cache read)",
			"thinking high", "3 ms", "keeps no earlier entry", "the summary used 960 tokens (900 in, 60 out)",
			"the window starts from the system prompt checkpointed here: sections preamble, cwd"}
		if f == Markdown {
			want = append(want, "### System prompt ·", "cache\\_warm", "**Result (3 ms):**")
			want[4] = "is left out of the model's context from here on"
		} else {
			want = append(want, `<span class="who">System prompt</span>`, "cache_warm", `Result <span class="when">· 3 ms</span>`)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s export lacks %q", f, w)
			}
		}
		for _, bad := range []string{"Entry of type", "Unreadable entry", "### Message", ">Message<"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s export shows %q: a Pi 1.6 kind fell back to the unknown rendering", f, bad)
			}
		}
	}
}
