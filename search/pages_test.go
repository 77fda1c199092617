package search

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestListAllGivesEachPageItsOwnBudget: ListAll hands over the hits
// SearchPages does, in the same pages, but each page gets the budget that
// its hits asked for MaxLimit at a time would have had, so the last page's
// hits get snippets as the first's do.
func TestListAllGivesEachPageItsOwnBudget(t *testing.T) {
	e := oneSessionEnv(t, 3)
	const size, budget = 5, 100000
	perPage := budget * size / MaxLimit
	req := Request{Needle: "a", Scope: ScopeAll, All: true, Budget: budget}
	want := everyHit(t, e, req, size)
	e.eng.opts.PageHits = size
	var got []uint64
	var perPageChars []int
	err := e.eng.ListAll(context.Background(), &req, func(page *Response) error {
		got = append(got, hitSeqs(page.Hits)...)
		chars := 0
		for _, h := range page.Hits {
			for _, sn := range h.Snippets {
				chars += utf8.RuneCountInString(sn.Text)
			}
		}
		perPageChars = append(perPageChars, chars)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListAll handed over %d hits, SearchPages %d: want the same hits in the same order", len(got), len(want))
	}
	if len(perPageChars) < 10 {
		t.Fatalf("%d pages; the test needs many", len(perPageChars))
	}
	for i, c := range perPageChars {
		if c == 0 || c > perPage {
			t.Errorf("page %d of %d: %d snippet characters; want some, at most its own budget of %d", i+1, len(perPageChars), c, perPage)
		}
	}
}

// TestListAllDescribesHitsAsSearchPagesDoes: in every scope, ListAll's
// hits come out in the same order and described the same (title,
// project, branch, leaves, matches) as SearchPages' pages.
func TestListAllDescribesHitsAsSearchPagesDoes(t *testing.T) {
	e := newEnv(t)
	importFamily(t, e, rand.New(rand.NewPCG(7, 8)), "list", 300, 200)
	e.eng.opts.PageHits = 7
	type described struct {
		Seq                  uint64
		Title, Cwd           string
		OnCurrentBranch      bool
		Leaves               string
		Matches              int
		Session, Entry, Role string
	}
	describe := func(hits []Hit) []described {
		var out []described
		for _, h := range hits {
			out = append(out, described{h.Seq, h.Title, h.Cwd, h.OnCurrentBranch, strings.Join(h.Leaves, ","), h.Matches, h.Session, h.Entry, h.Role})
		}
		return out
	}
	for _, scope := range []Scope{ScopeAll, ScopeSession, ScopeLineage, ScopeBranch} {
		t.Run(string(scope), func(t *testing.T) {
			req := Request{Needle: "a", Scope: scope, All: true}
			if scope != ScopeAll {
				req.Session = "list-root"
			}
			var want, got []described
			if err := e.eng.SearchPages(context.Background(), &req, func(page *Response) error {
				want = append(want, describe(page.Hits)...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			pages := 0
			if err := e.eng.ListAll(context.Background(), &req, func(page *Response) error {
				pages++
				got = append(got, describe(page.Hits)...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if pages < 5 {
				t.Fatalf("%d pages; the test needs several", pages)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ListAll's %d hits differ from SearchPages' %d", len(got), len(want))
			}
		})
	}
}

// TestPagesStopAtTheFirstErrorOfTheirCaller: when fn fails, SearchPages
// and ListAll return its error and hand over no page after it (the next
// page may already be found, on another goroutine); a context cancelled
// meanwhile ends them with its error within a page.
func TestPagesStopAtTheFirstErrorOfTheirCaller(t *testing.T) {
	e := oneSessionEnv(t, 5)
	e.eng.opts.PageHits = 5
	stopped := errors.New("the caller stopped")
	ways := map[string]func(context.Context, *Request, func(*Response) error) error{
		"SearchPages": e.eng.SearchPages,
		"ListAll":     e.eng.ListAll,
	}
	for name, pages := range ways {
		t.Run(name, func(t *testing.T) {
			calls := 0
			err := pages(context.Background(), &Request{Needle: "a", All: true}, func(*Response) error {
				if calls++; calls == 2 {
					return stopped
				}
				return nil
			})
			if !errors.Is(err, stopped) || calls != 2 {
				t.Fatalf("%s: %v after %d pages; want the caller's error after its second page", name, err, calls)
			}
			ctx, cancel := context.WithCancel(context.Background())
			calls = 0
			err = pages(ctx, &Request{Needle: "a", All: true}, func(*Response) error {
				calls++
				cancel()
				return nil
			})
			if !errors.Is(err, context.Canceled) || calls > 2 {
				t.Fatalf("%s: %v after %d pages; want context.Canceled within two pages", name, err, calls)
			}
		})
	}
}

// oneSessionEnv is an env holding one session of 300 random entries
// (writeJournal, seeded with seed and seed+1), indexed.
func oneSessionEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	e := newEnv(t)
	e.importFile(t, writeJournal(t, t.TempDir(), "aaaa-root", rand.New(rand.NewPCG(seed, seed+1)), 300, ""))
	e.catchUp(t)
	return e
}
