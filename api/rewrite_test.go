package api

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/search"
)

// TestAnEditedLineIsFoundByItsNewText: a journal rewritten with one line
// edited (as Pi's v2 to v3 migration edits lines) keeps its entries; the
// edited entry is found by its new text, not its old, once the index has
// caught up, and the entries no longer in the file are still found.
func TestAnEditedLineIsFoundByItsNewText(t *testing.T) {
	h := newHarness(t)
	lines := fixtureLines("s1")
	parent := "l1"
	for i := range 20 { // more than a block: the index holds them
		id := fmt.Sprintf("e%d", i)
		lines = append(lines, userLine(id, parent, fmt.Sprintf("filler line %d", i)))
		parent = id
	}
	lines = append(lines, userLine("last", parent, "the dropped tail zebracorn"))
	write := func(ls []string) {
		if err := os.WriteFile(h.journal, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.Index.CatchUp(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	write(lines)
	edited := append([]string(nil), lines[:len(lines)-1]...) // the tail cut off
	edited[1] = strings.Replace(edited[1], "ErrCartEmpty", "ErrBasketVoid", 1)
	write(edited)
	found := func(needle string) int {
		var r search.Response
		h.ok(h.do(req{Path: "/v1/search?needle=" + needle + "&session=s1"}), &r)
		return len(r.Hits)
	}
	if n := found("ErrBasketVoid"); n != 1 {
		t.Errorf("the edited line's new text: %d hits, want 1", n)
	}
	if n := found("find+out+why"); n != 1 {
		t.Errorf("the edited line's unchanged text: %d hits, want 1 (not doubled)", n)
	}
	if n := found("zebracorn"); n != 1 {
		t.Errorf("the entry cut off the file: %d hits, want 1 (kept as history)", n)
	}
}
