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

// TestAnswersAreExactUnderEveryMemoryBudget: over a history of several
// sketch chunks, every page and every count is the brute-force answer
// whatever the server's memory budget holds of it: nothing (each chunk is
// tested from disk), some chunks (the newest), or everything, with the
// first-occurrence lists over their bound or built. The store is opened
// and warmed as a server opens and warms it under that budget.
func TestAnswersAreExactUnderEveryMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	built := openBudget(t, dir, 0, 0)
	r := rand.New(rand.NewPCG(7, 8))
	src := t.TempDir()
	built.importFile(t, writeJournal(t, src, "aaaa-root", r, 2000, ""))
	built.importFile(t, writeJournal(t, src, "bbbb-fork", r, 600, "/elsewhere/aaaa-root.jsonl"))
	built.importFile(t, writeJournal(t, src, "cccc-other", r, 1600, ""))
	built.catchUp(t)
	if chunks := built.st.LastSeq()/1024 + 1; chunks < 4 {
		t.Fatalf("the history spans %d sketch chunks; the test wants several", chunks)
	}
	built.close()

	// What a chunk of this history takes in the cache, to hold some of
	// them only.
	perChunk := func() int {
		e := openBudget(t, dir, 1<<30, 1<<30)
		ws, err := e.st.WarmSketches(context.Background())
		if err != nil || ws.Chunks == 0 {
			t.Fatalf("WarmSketches = %+v, %v", ws, err)
		}
		e.close()
		return int(ws.Bytes) / ws.Chunks
	}()

	// The warm-up loads a chunk only with room for one of larger-than-average
	// sketches (the store's warmChunkBytes): half a megabyte more than two and
	// a half of this test's chunks holds one or two; held checks that it did.
	for _, b := range []struct {
		name          string
		sketch, heads int64
		wantFull      bool
		held          func(chunks int) bool // of the chunks WarmSketches kept
	}{
		{"nothing held", 1, 1, true, func(n int) bool { return n == 0 }},
		{"the newest two chunks held, no first occurrences", int64(perChunk*5/2) + 512<<10, 1, true, func(n int) bool { return n >= 1 && n <= 2 }},
		{"everything held", 1 << 30, 1 << 30, false, func(n int) bool { return n >= 4 }},
	} {
		t.Run(b.name, func(t *testing.T) {
			e := openBudget(t, dir, b.sketch, b.heads)
			defer e.close()
			ctx := context.Background()
			ws, err := e.st.WarmSketches(ctx)
			if err != nil || ws.Full != b.wantFull || !b.held(ws.Chunks) {
				t.Fatalf("WarmSketches = %+v, %v; want the bound reached: %v, and the chunks held as the case is named", ws, err, b.wantFull)
			}
			if _, err := e.st.WarmFilters(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := e.st.WarmHotTexts(ctx); err != nil {
				t.Fatal(err)
			}
			hs, err := e.st.WarmHeads(ctx)
			if err != nil || hs.OverBound != (b.heads == 1) {
				t.Fatalf("WarmHeads = %+v, %v", hs, err)
			}
			for _, needle := range []string{"alpha", "é", "pha beta", "zzzz-nothing", "ErrCartEmpty"} {
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

// openBudget opens the store and index in dir as a server would with
// sketch bytes for its sketch cache and heads bytes for its
// first-occurrence lists.
func openBudget(t *testing.T, dir string, sketch, heads int64) budgetEnv {
	t.Helper()
	st, err := store.OpenWith(filepath.Join(dir, "store"), store.Options{SketchCacheBytes: int(sketch), HeadsBytes: heads})
	if err != nil {
		t.Fatal(fmt.Errorf("open the store under a budget: %w", err))
	}
	ix, err := index.Open(filepath.Join(dir, "index"), st, nil)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return budgetEnv{&env{st: st, ix: ix, eng: New(st, ix), dir: dir}}
}
