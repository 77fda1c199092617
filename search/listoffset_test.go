package search

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestListPagesByOffsetAsByCursor: paging a list by offset answers the same
// pages as its cursors, with the next page's offset, and refuses an offset
// beside a cursor or past the end.
func TestListPagesByOffsetAsByCursor(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(9, 9))
	sid := e.importFile(t, writeJournal(t, t.TempDir(), "page-0000", r, 300, ""))
	ctx := context.Background()
	var byCursor, byOffset []string
	for req := (&ListRequest{Session: sid, Limit: 20, AllBranches: true}); ; {
		p, err := e.eng.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			byCursor = append(byCursor, it.Entry)
		}
		if p.Cursor == "" {
			break
		}
		req = &ListRequest{Session: sid, Limit: 20, Cursor: p.Cursor, AllBranches: true}
	}
	pages := 0
	for off := 0; ; pages++ {
		p, err := e.eng.List(ctx, &ListRequest{Session: sid, Limit: 20, Offset: off, AllBranches: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			byOffset = append(byOffset, it.Entry)
		}
		if p.NextOffset == nil {
			break
		}
		if *p.NextOffset != off+20 {
			t.Fatalf("next offset %d after offset %d, want %d", *p.NextOffset, off, off+20)
		}
		off = *p.NextOffset
	}
	if len(byCursor) < 41 || !slices.Equal(byCursor, byOffset) {
		t.Errorf("by offset %d items %v, by cursor %d items %v", len(byOffset), byOffset, len(byCursor), byCursor)
	}
	first, _ := e.eng.List(ctx, &ListRequest{Session: sid, Limit: 20, AllBranches: true})
	for _, bad := range []ListRequest{
		{Session: sid, Offset: 20, Cursor: first.Cursor, AllBranches: true},
		{Session: sid, Offset: len(byCursor) + 1, AllBranches: true},
		{Session: sid, Offset: -1},
	} {
		if _, err := e.eng.List(ctx, &bad); err == nil || !strings.Contains(err.Error(), "offset") {
			t.Errorf("list %+v: error %v, want one about the offset", bad, err)
		}
	}
}
