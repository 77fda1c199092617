package search

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
)

func TestBroadBoundIsOneBlockInTwentyForLongNeedlesOrSixtyWithFilters(t *testing.T) {
	const million = 1_000_000 // 62,500 blocks of 16
	for _, c := range []struct {
		through  uint64
		runes    int
		filtered bool
		want     int
	}{
		{million, 20, false, 3125},
		{million, 9, false, 3125},
		{million, 20, true, 1041},
		{million, 9, true, 1041},
		{million, 8, false, 0},                // short needles keep the index
		{million, 8, true, 0},                 // with filters too
		{index.BlockSize * 4095, 20, true, 0}, // below the smallest index the rule applies to
		{index.BlockSize * 4096, 20, false, 204},
		{index.BlockSize * 4096, 20, true, 68},
	} {
		if got := broadBound(c.through, c.runes, c.filtered); got != c.want {
			t.Errorf("broadBound(mark %d, %d characters, filtered %v) = %d, want %d", c.through, c.runes, c.filtered, got, c.want)
		}
	}
}

// TestTooBroadPlansScanAndFindWhatTheIndexFinds: a needle in most blocks is
// answered by a scan of the sketches, with every hit the index plan and a
// brute-force scan find, in both orders, paged and counted.
func TestTooBroadPlansScanAndFindWhatTheIndexFinds(t *testing.T) {
	defer func(n uint64) { broadMinBlocks = n }(broadMinBlocks)
	e := newEnv(t)
	r := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	e.importFile(t, writeJournal(t, dir, "aaaa-broad", r, 600, ""))
	e.catchUp(t)
	broad := 0
	for _, needle := range []string{"alpha", "alpha beta", "naïve 日本語", "return nil", "ErrCartEmpty"} {
		for _, newest := range []bool{false, true} {
			for _, limit := range []int{0, 7} {
				req := Request{Needle: needle, Scope: ScopeAll, NewestFirst: newest, Limit: limit, Count: limit > 0}
				want := brute(t, e, req)
				var plans []string
				for _, floor := range []uint64{0, 1 << 62} { // the rule on, then off
					broadMinBlocks = floor
					resp, err := e.eng.Search(context.Background(), &req)
					if err != nil {
						t.Fatal(err)
					}
					plans = append(plans, resp.Stats.Plan)
					if limit > 0 && (resp.Total == nil || *resp.Total != len(want)) {
						t.Fatalf("%q, plan %q: total %v, want %d", needle, resp.Stats.Plan, resp.Total, len(want))
					}
					if got := pages(t, e, req); !slices.Equal(got, want) {
						t.Fatalf("%q newest=%v limit %d, plan %q:\n got %v\nwant %v", needle, newest, limit, resp.Stats.Plan, got, want)
					}
				}
				if strings.HasPrefix(plans[0], "scan through sketches, the index too broad") {
					if utf8.RuneCountInString(needle) < broadMinRunes {
						t.Errorf("%q is too short to scan instead of using the index: plan %q", needle, plans[0])
					}
					broad++
					if !strings.HasPrefix(plans[1], "index") {
						t.Errorf("%q: with the rule off, plan %q", needle, plans[1])
					}
				}
			}
		}
	}
	if broad < 8 {
		t.Fatalf("only %d searches were too broad for the index: the test shows little", broad)
	}
	t.Logf("%d searches scanned instead of using the index", broad)
}
