package search

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/index"
)

// TestCountsFromCompleteFirstOccurrenceListsEqualTheScan: a count the
// index cannot narrow confirms the list of one of its needle's grams
// when that list holds every entry with the gram (see searchAll). Each
// count, from the first page, a later one, in both orders and through
// the request's filters, equals the brute-force count and the count the
// sketch scan gives; rare needles take the lists, common ones (whose
// lists are full) still scan.
func TestCountsFromCompleteFirstOccurrenceListsEqualTheScan(t *testing.T) {
	defer index.SetCommonAfterForTest(20)()
	e := newEnv(t)
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	e.importFile(t, writeJournal(t, dir, "ffff-one", r, 400, ""))
	e.importFile(t, writeJournal(t, dir, "gggg-two", r, 300, ""))
	e.catchUp(t)
	checkCommon(t, e, true)
	if hs, err := e.st.WarmHeads(context.Background()); err != nil || hs.Full == 0 {
		t.Fatalf("WarmHeads = %+v, %v; want lists, some full", hs, err)
	}
	// Entries stored after the lists were built are listed by their
	// writes, and are not indexed: the count must find them too.
	e.importFile(t, writeJournal(t, dir, "hhhh-tail", r, 60, ""))

	needles := []string{"ErrCartEmpty errcartempty", "errcartempty ErrCartEmpty", "naïve 日本語", "🚀x 🙂", "gamma délta",
		"alpha", "return nil", "beta gamma", "nowhere-at-all", `"quoted" back\slash`}
	filters := []Request{{}, {Roles: []string{"user", "toolResult"}},
		{Since: time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC), Until: time.Date(2026, 1, 1, 0, 4, 0, 0, time.UTC)}}
	fromLists, scanned := 0, 0
	for _, needle := range needles {
		for _, f := range filters {
			want := len(brute(t, e, Request{Needle: needle, Scope: ScopeAll, Roles: f.Roles, Since: f.Since, Until: f.Until}))
			for _, newest := range []bool{false, true} {
				for _, limit := range []int{1, 3} {
					req := f
					req.Needle, req.Scope, req.Count, req.Limit, req.NewestFirst = needle, ScopeAll, true, limit, newest
					for page := 0; ; page++ {
						countFromHeads = false
						off, _ := searchOnce(t, e, &req)
						countFromHeads = true
						on, _ := searchOnce(t, e, &req)
						if totalOf(on) != want || totalOf(off) != want {
							t.Fatalf("count of %q (roles %v, since %v), limit %d newest=%v, page %d: %d from the lists (plan %q), %d by the scan; want %d",
								needle, f.Roles, f.Since, limit, newest, page, totalOf(on), on.Stats.Plan, totalOf(off), want)
						}
						switch {
						case strings.Contains(on.Stats.Plan, "count: counted from the first occurrences"):
							fromLists++
						case on.Cursor != "": // the count went on past the page, not from the lists
							scanned++
						}
						if on.Cursor == "" || page == 2 {
							break
						}
						req.Cursor = on.Cursor
					}
				}
			}
		}
	}
	if fromLists == 0 || scanned == 0 {
		t.Fatalf("%d counts from the lists, %d otherwise: want both", fromLists, scanned)
	}
	t.Logf("%d counts from the lists, %d otherwise", fromLists, scanned)
}
