package rollover

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-history/pi-history/notebook"
)

// handoff adds a Handoff entry as the extension appends it.
func (b *jb) handoff(text string) string {
	data, err := NewHandoffRecord(text)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.add("custom", map[string]any{"customType": HandoffType, "data": json.RawMessage(data)})
}

// note adds a named-note write as the extension appends it.
func (b *jb) note(name, content string) string {
	return b.add("custom", map[string]any{"customType": notebook.NoteType,
		"data": map[string]any{"version": notebook.NoteVersion, "op": notebook.OpWrite, "name": name, "content": content}})
}

func TestCheckHandoffLimit(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		wantErr    string
	}{
		{"at the limit", strings.Repeat("é", MaxHandoffChars), ""},
		{"one over", strings.Repeat("é", MaxHandoffChars+1), "over the limit of 12000 by 1"},
		{"blank", " \n\t", "blank"},
		{"invalid UTF-8", "ok \xff", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := NewHandoffRecord(tc.text)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				var r HandoffRecord
				if json.Unmarshal(data, &r) != nil || r.Text != tc.text || r.Version != HandoffVersion {
					t.Fatalf("record %s", data)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
			}
			if data != nil {
				t.Fatal("a refused handoff still made a record")
			}
		})
	}
}

func TestRolloverSummaryCarriesHandoffAndNoteIndex(t *testing.T) {
	// A Handoff of an earlier window, named notes and a Handoff of the
	// current window.
	b := newJB(t)
	b.turn("Start the cart work.", 2000)
	b.notes(1, testSections...)
	b.handoff("OLD handoff of window 1")
	kept := b.turn("next", 100)
	b.compaction(kept, 2)
	b.turn("Make the error clearer.", 3000)
	b.note("design", "the cart design")
	b.note("api", "error codes")
	b.turn("More work.", 3000)
	nb := b.notes(2, testSections...)
	hid := b.handoff("Done: error message names the cart id.\nNext: keep code 4xx for API clients.")
	b.turn("what is left?", 50)
	path := b.path()
	c, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonUser, Pi: testPi, Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if c.Details.HandoffEntryID != hid {
		t.Errorf("details name handoff %q, want %q", c.Details.HandoffEntryID, hid)
	}
	if strings.Contains(c.Summary, "OLD handoff") {
		t.Error("the summary carries a Handoff of an earlier window")
	}
	for _, want := range []string{
		"## Handoff (written by the agent for this rollover, entry " + hid + ")\nDone: error message names the cart id.\nNext: keep code 4xx for API clients.\n",
		"## Note Index (this session's named notes, newest first",
		"Continue from the Handoff",
	} {
		if !strings.Contains(c.Summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if a, d := strings.Index(c.Summary, "- api ("), strings.Index(c.Summary, "- design ("); a < 0 || d < 0 || a > d {
		t.Errorf("note index not newest first:\n%s", c.Summary)
	}
	golden(t, "summary/handoff-and-note-index.golden", c.Summary)
}

func TestRolloverSummaryWithoutCurrentHandoff(t *testing.T) {
	b := newJB(t)
	b.turn("Start.", 2000)
	b.notes(1, testSections...)
	b.handoff("OLD handoff of window 1")
	kept := b.turn("next", 100)
	b.compaction(kept, 2)
	b.turn("Work.", 3000)
	nb := b.notes(2, testSections...)
	b.turn("left?", 50)
	c, err := Rollover(RolloverInput{Path: b.path(), Notebook: nb, Reason: ReasonHost, Pi: testPi, Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Summary, "## Handoff") || c.Details.HandoffEntryID != "" {
		t.Errorf("a stale Handoff was used:\n%s", c.Summary)
	}
	if !strings.Contains(c.Summary, "## Note Index") || !strings.Contains(c.Summary, "(none)") {
		t.Errorf("no empty Note Index:\n%s", c.Summary)
	}
}

func TestNoteIndexCutRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		notes int
	}{{"few fit", 3}, {"many are cut", 128}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newJB(t)
			for i := range tc.notes {
				b.note(fmt.Sprintf("note-%03d-%s", i, strings.Repeat("n", 40)), "x")
			}
			lines := noteIndex(b.path())
			total := utf8.RuneCountInString(noteIndexHeading)
			for _, l := range lines {
				total += utf8.RuneCountInString(l) + 1
			}
			if total > NoteIndexMaxChars {
				t.Fatalf("note index is %d characters, over %d", total, NoteIndexMaxChars)
			}
			if !strings.HasPrefix(lines[0], fmt.Sprintf("- note-%03d-", tc.notes-1)) {
				t.Errorf("the newest note is not first: %q", lines[0])
			}
			last := lines[len(lines)-1]
			if tc.notes == 3 {
				if len(lines) != 3 {
					t.Errorf("lines %q", lines)
				}
				return
			}
			listed := len(lines) - 1
			if want := fmt.Sprintf("(%d more named notes not listed;", tc.notes-listed); !strings.HasPrefix(last, want) {
				t.Errorf("last line %q, want %q…", last, want)
			}
		})
	}
}
