package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/store"
)

// TestAnswersAreExactUnderEveryMemoryBudget: over a history that spans
// several segments of the index and runs past them, every page and every
// count is the brute-force answer whatever the store's block cache holds
// (a few blocks, or the whole history), with the index's files written
// and closed, and reopened as a new process finds them.
func TestAnswersAreExactUnderEveryMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	spans := index.Options{RunSpan: 64, SegmentSpan: 1024}
	built := openBudget(t, dir, 0, spans)
	r := rand.New(rand.NewPCG(7, 8))
	src := t.TempDir()
	built.importFile(t, writeJournal(t, src, "aaaa-root", r, 2000, ""))
	built.importFile(t, writeJournal(t, src, "bbbb-fork", r, 600, "/elsewhere/aaaa-root.jsonl"))
	built.importFile(t, writeJournal(t, src, "cccc-other", r, 1600, ""))
	built.catchUp(t)
	if segs := built.st.LastSeq() / 1024; segs < 4 {
		t.Fatalf("the history spans %d segments; the test wants several", segs)
	}
	built.close()

	for _, b := range []struct {
		name  string
		cache int64
	}{
		{"a block cache of 256 KB", 256 << 10},
		{"a block cache larger than the history", 256 << 20},
	} {
		t.Run(b.name, func(t *testing.T) {
			e := openBudget(t, dir, b.cache, spans)
			defer e.close()
			ctx := context.Background()
			for _, needle := range []string{"alpha", "é", "pha beta", "zzzz-nothing", "ErrCartEmpty", "a", "\n"} {
				for _, req := range []Request{
					{Scope: ScopeAll, Limit: 7}, {Scope: ScopeAll, Limit: 50, NewestFirst: true},
					{Scope: ScopeLineage, Session: "bbbb-fork", Limit: 50},
				} {
					req.Needle = needle
					if got, want := twoPages(t, e.env, req), brute(t, e.env, req); !slices.Equal(got, want[:min(len(want), 2*req.Limit)]) {
						t.Fatalf("needle %q scope %s newest=%v limit %d:\n got %v\nwant %v", needle, req.Scope, req.NewestFirst, req.Limit, got, want)
					}
				}
				req := Request{Needle: needle, Scope: ScopeAll, All: true}
				if got, want := everyHit(t, e.env, req, 1000), brute(t, e.env, req); !slices.Equal(got, want) {
					t.Fatalf("every hit of %q: got %d hits, want %d", needle, len(got), len(want))
				}
				resp, err := e.eng.Search(ctx, &Request{Needle: needle, Scope: ScopeAll, Count: true, Limit: 1})
				if want := len(brute(t, e.env, Request{Needle: needle, Scope: ScopeAll, All: true})); err != nil || resp.Total == nil || *resp.Total != want {
					t.Fatalf("count of %q = %+v, %v; want %d", needle, resp, err, want)
				}
			}
		})
	}
}

// twoPages returns the seqs of the first two pages of req.
func twoPages(t *testing.T, e *env, req Request) []uint64 {
	t.Helper()
	var out []uint64
	for range 2 {
		resp, err := e.eng.Search(context.Background(), &req)
		if err != nil {
			t.Fatalf("search %+v: %v", req, err)
		}
		out = append(out, hitSeqs(resp.Hits)...)
		if resp.Cursor == "" {
			break
		}
		req.Cursor = resp.Cursor
	}
	return out
}

// budgetEnv is an env over a store opened with a memory budget.
type budgetEnv struct{ *env }

func (e budgetEnv) close() {
	e.ix.Close()
	e.st.Close()
}

// openBudget opens the store in dir with a block cache of cache bytes (0:
// the store's default) and its index with the spans o gives.
func openBudget(t *testing.T, dir string, cache int64, o index.Options) budgetEnv {
	t.Helper()
	st, err := store.OpenWith(filepath.Join(dir, "store"), store.Options{CacheBytes: cache})
	if err != nil {
		t.Fatal(fmt.Errorf("open the store under a budget: %w", err))
	}
	ix, err := index.OpenWith(filepath.Join(dir, "index"), st, o)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return budgetEnv{&env{st: st, ix: ix, eng: New(st, ix), dir: dir}}
}
