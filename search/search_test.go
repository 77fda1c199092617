package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

type env struct {
	st  *store.Store
	ix  *index.Index
	eng *Engine
	dir string
}

func newEnv(t *testing.T) *env { return newEnvDir(t, t.TempDir()) }

func newEnvDir(t testing.TB, dir string) *env {
	t.Helper()
	st, err := store.OpenWith(filepath.Join(dir, "store"), testStore)
	if err != nil {
		t.Fatal(err)
	}
	if testNoIndex {
		t.Cleanup(func() { st.Close() })
		return &env{st: st, eng: NewWith(st, nil, testSearch), dir: dir}
	}
	ix, err := index.OpenWith(filepath.Join(dir, "index"), st, testIndex)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close(); st.Close() })
	return &env{st: st, ix: ix, eng: NewWith(st, ix, testSearch), dir: dir}
}

// testSearch tunes the engines newEnvDir makes, testStore their stores.
var (
	testSearch Options
	testStore  store.Options
)

// testIndex is the index newEnvDir opens; testNoIndex opens none (every
// search then reads every text). See engineModes.
var (
	testIndex   index.Options
	testNoIndex bool
)

// engineModes runs a test with runs of 16 entries and segments of 64 (so
// that a history of a few hundred entries spans dozens of files of both
// kinds and the open run), with the index as a server keeps it (these
// small histories then lie in its open run and a run or two), and with no
// index at all. The first and the last store every text of 4 bytes or
// more once (store.Options.SharedTextMin), so that most texts are read
// through references and many are held by several entries; the default
// stores these small texts inline. The first also reads in two halves
// from 8 entries or texts on (Options.ParallelMin). full is set for the first: the others
// run fewer queries, which keeps the suite's time under -race.
func engineModes(t *testing.T, test func(t *testing.T, full bool)) {
	t.Run("index in runs of 16 and segments of 64, texts stored once", func(t *testing.T) {
		defer func() { testIndex, testStore, testSearch = index.Options{}, store.Options{}, Options{} }()
		testIndex = index.Options{RunSpan: 16, SegmentSpan: 64}
		testStore = store.Options{SharedTextMin: 4}
		testSearch = Options{ParallelMin: 8}
		test(t, true)
	})
	t.Run("default index", func(t *testing.T) { test(t, false) })
	t.Run("no index, texts stored once", func(t *testing.T) {
		defer func() { testNoIndex, testStore = false, store.Options{} }()
		testNoIndex = true
		testStore = store.Options{SharedTextMin: 4}
		test(t, false)
	})
}

func (e *env) importFile(t testing.TB, path string) string {
	t.Helper()
	rep, err := ingest.File(e.st, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Session
}

func (e *env) catchUp(t *testing.T) {
	t.Helper()
	if e.ix == nil {
		return
	}
	if _, err := e.ix.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// words used to build synthetic text: ASCII, case variants, multi-byte,
// emoji, quotes, backslashes and newlines.
var vocab = []string{"alpha", "Alpha", "ALPHA", "beta", "gamma", "délta", "naïve", "日本語", "🙂", "🚀x", `"quoted"`,
	`back\slash`, "line\nbreak", "tab\there", "ErrCartEmpty", "errcartempty", "func", "return nil", "x", "{", "}"}

func randText(r *rand.Rand) string {
	n := 1 + r.IntN(30)
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[r.IntN(len(vocab))])
	}
	return b.String()
}

// writeJournal writes a v3 journal with branches, compactions and every
// searchable shape, and returns its path.
func writeJournal(t testing.TB, dir, sid string, r *rand.Rand, n int, parentFile string) string {
	t.Helper()
	var lines []string
	hdr := map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p/" + sid}
	if parentFile != "" {
		hdr["parentSession"] = parentFile
	}
	add := func(v map[string]any) {
		b, _ := json.Marshal(v)
		lines = append(lines, string(b))
	}
	add(hdr)
	var ids []string
	parent := any(nil)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%04d", sid[:4], i)
		if len(ids) > 3 && r.IntN(10) == 0 {
			parent = ids[r.IntN(len(ids))] // start a branch
		}
		ts := fmt.Sprintf("2026-01-01T00:%02d:%02d.000Z", (i/60)%60, i%60)
		e := map[string]any{"id": id, "parentId": parent, "timestamp": ts}
		switch r.IntN(7) {
		case 0:
			e["type"], e["message"] = "message", map[string]any{"role": "user", "content": randText(r)}
		case 1:
			e["type"], e["message"] = "message", map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": randText(r)},
				map[string]any{"type": "toolCall", "id": "c" + id, "name": "bash", "arguments": map[string]any{"command": randText(r)}}}}
		case 2:
			e["type"], e["message"] = "message", map[string]any{"role": "toolResult", "toolName": "bash", "toolCallId": "c", "content": []any{map[string]any{"type": "text", "text": randText(r)}}}
		case 3:
			e["type"], e["message"] = "message", map[string]any{"role": "bashExecution", "command": randText(r), "output": randText(r)}
		case 4:
			if len(ids) == 0 {
				e["type"], e["thinkingLevel"] = "thinking_level_change", "low"
			} else {
				e["type"], e["summary"], e["firstKeptEntryId"] = "compaction", randText(r), ids[len(ids)/2]
			}
		case 5:
			e["type"], e["customType"], e["content"] = "custom_message", "x", randText(r)
		case 6:
			e["type"], e["message"] = "message", map[string]any{"role": "toolResult", "toolName": "history", "toolCallId": "c", "content": []any{map[string]any{"type": "text", "text": randText(r)}}}
		}
		add(e)
		ids = append(ids, id)
		parent = id
	}
	return testutil.WriteFile(t, dir, sid+".jsonl", strings.Join(lines, "\n")+"\n")
}

// brute lists the seqs a request must return, by reading every stored entry.
func brute(t *testing.T, e *env, req Request) []uint64 {
	t.Helper()
	var member map[uint64]bool
	if req.Scope != ScopeAll {
		member = map[uint64]bool{}
		sids := []string{req.Session}
		if req.Scope == ScopeLineage {
			sids, _ = e.eng.Lineage(req.Session)
		}
		for _, sid := range sids {
			tr, err := e.st.Tree(sid)
			if err != nil {
				t.Fatal(err)
			}
			if req.Scope == ScopeBranch {
				leaf := req.Leaf
				if leaf == "" {
					leaf = tr.Leaf()
				}
				p, _ := tr.Path(leaf)
				for _, en := range p {
					member[tr.MetaOf(en.ID).Seq] = true
				}
			} else {
				for _, m := range tr.Metas {
					member[m.Seq] = true
				}
			}
		}
	}
	match := bruteMatch(t, req)
	var out []uint64
	e.st.ScanMetas(1, e.st.LastSeq(), func(m *store.Meta) bool {
		if member != nil && !member[m.Seq] {
			return true
		}
		if req.Window > 0 && m.Window != req.Window {
			return true
		}
		if len(req.Roles) > 0 && !slices.Contains(req.Roles, m.Role) {
			return true
		}
		if len(req.Types) > 0 && !slices.Contains(req.Types, m.Type) {
			return true
		}
		if ts := journal.ParseTime(m.Timestamp); !req.Since.IsZero() && ts.Before(req.Since) || !req.Until.IsZero() && !ts.Before(req.Until) {
			return true
		}
		txt, _ := e.st.Text(m.Seq)
		if m.Searchable() && match(txt) {
			out = append(out, m.Seq)
		}
		return true
	})
	if req.NewestFirst {
		slices.Reverse(out)
	}
	return out
}

func pages(t *testing.T, e *env, req Request) []uint64 {
	t.Helper()
	var out []uint64
	for i := 0; i < 10000; i++ {
		resp, err := e.eng.Search(context.Background(), &req)
		if err != nil {
			t.Fatalf("search %+v: %v", req, err)
		}
		checkPlanKind(t, resp)
		out = append(out, hitSeqs(resp.Hits)...)
		if resp.Cursor == "" {
			return out
		}
		req.Cursor = resp.Cursor
	}
	t.Fatal("paging did not end")
	return nil
}

// checkPlanKind fails the test unless the page names its plan's kind, and
// the kind is the one its words describe.
func checkPlanKind(t *testing.T, resp *Response) {
	t.Helper()
	words, _, _ := strings.Cut(resp.Stats.Plan, "; count: ")
	var want pihistory.PlanKind
	switch {
	case strings.Contains(words, "no entry holds every trigram"):
		want = pihistory.PlanNowhere
	case strings.HasPrefix(words, "index"):
		want = pihistory.PlanIndex
	case strings.HasPrefix(words, "scan ("):
		want = pihistory.PlanScan
	case strings.HasPrefix(words, "scan "):
		want = pihistory.PlanMembers
	}
	if resp.Stats.PlanKind != want || want == "" {
		t.Fatalf("plan %q has kind %q; want %q", resp.Stats.Plan, resp.Stats.PlanKind, want)
	}
}

// hitSeqs lists the seqs of hits, in order.
func hitSeqs(hits []Hit) []uint64 {
	var out []uint64
	for _, h := range hits {
		out = append(out, h.Seq)
	}
	return out
}

// importFamily imports three sessions of random entries and indexes them:
// NAME-root (nRoot entries), NAME-fork forked from it and NAME-other, of n
// entries each.
func importFamily(t *testing.T, e *env, r *rand.Rand, name string, nRoot, n int) {
	t.Helper()
	dir := t.TempDir()
	root := writeJournal(t, dir, name+"-root", r, nRoot, "")
	e.importFile(t, root)
	e.importFile(t, writeJournal(t, dir, name+"-fork", r, n, root))
	e.importFile(t, writeJournal(t, dir, name+"-other", r, n, ""))
	e.catchUp(t)
}

// searchOnce runs req and returns its answer and the seqs of its hits.
func searchOnce(t *testing.T, e *env, req *Request) (*Response, []uint64) {
	t.Helper()
	resp, err := e.eng.Search(context.Background(), req)
	if err == nil {
		checkPlanKind(t, resp)
	}
	if err != nil {
		t.Fatalf("search %+v: %v", *req, err)
	}
	return resp, hitSeqs(resp.Hits)
}

// totalOf is a response's count, -1 when it has none.
func totalOf(r *Response) int {
	if r.Total == nil {
		return -1
	}
	return *r.Total
}

// everyHit collects what SearchPages hands over for req (with All), in
// pages of size hits, failing on a page larger than that.
func everyHit(t *testing.T, e *env, req Request, size int) []uint64 {
	t.Helper()
	defer func(n int) { e.eng.opts.PageHits = n }(e.eng.opts.PageHits)
	e.eng.opts.PageHits = size
	var out []uint64
	err := e.eng.SearchPages(context.Background(), &req, func(page *Response) error {
		if len(page.Hits) > size {
			t.Fatalf("a page of %d hits; want at most %d", len(page.Hits), size)
		}
		out = append(out, hitSeqs(page.Hits)...)
		return nil
	})
	if err != nil {
		t.Fatalf("search pages %+v: %v", req, err)
	}
	return out
}

func TestPagesEqualBruteForceInEveryScopeOrderAndPageSize(t *testing.T) {
	engineModes(t, pagesEqualBruteForce)
	t.Run("every scan read in two halves", func(t *testing.T) {
		defer func() { testSearch = Options{} }()
		testSearch = Options{ParallelMin: 2, ParallelAfter: -1}
		pagesEqualBruteForce(t, false)
	})
}

func pagesEqualBruteForce(t *testing.T, full bool) {
	e := bruteFixture(t)
	needles := []string{"alpha", "a", "é", "k\nb", "zzzz-nothing", "pha beta"}
	if full {
		needles = append(needles, "Alpha", "ALPHA", "🙂", "日本", "\"quoted\"", `back\slash`, "line\nbreak",
			"ErrCartEmpty", "nil ErrCart", "al", "x 🚀x", "\t")
	}
	var queries []Request
	for _, n := range needles {
		queries = append(queries, Request{Needle: n})
	}
	queriesEqualBruteForce(t, e, queries)
}

// bruteFixture is the store pagesEqualBruteForce searches: three indexed
// sessions (one forked from another) and a tail the index has not taken
// in.
func bruteFixture(t *testing.T) *env {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	root := writeJournal(t, dir, "aaaa-root", r, 300, "")
	e.importFile(t, root)
	e.importFile(t, writeJournal(t, dir, "bbbb-fork", r, 120, "/elsewhere/aaaa-root.jsonl"))
	e.importFile(t, writeJournal(t, dir, "cccc-other", r, 200, ""))
	e.catchUp(t)
	if testIndex.RunSpan != 0 && e.ix.Segments() < 10 {
		t.Fatalf("the index has %d files; the test wants dozens", e.ix.Segments())
	}
	// Stored but not indexed: the tail must be read.
	e.importFile(t, writeJournal(t, dir, "dddd-tail", r, 80, ""))
	return e
}

// pageSizes are the page sizes queriesEqualBruteForce asks for, and
// everyPage the size of the pages every hit is handed over in. Under the
// race detector, pages of 3 (a needle's hits in tens of searches each)
// are left out: its searches are as concurrent with pages of 50, and
// scripts/test runs the whole matrix without it
// (`docs/measurements/2026-12-07-a-slower-kernel.md`).
func pageSizes() (sizes []int, everyPage int) {
	if raceEnabled {
		return []int{50}, 50
	}
	return []int{3, 50}, 7
}

// queriesEqualBruteForce checks each query (its needle and modes) in
// every scope, order and page size, its every hit and its counts, against
// brute force.
func queriesEqualBruteForce(t *testing.T, e *env, queries []Request) {
	sizes, everyPage := pageSizes()
	scopes := []Request{{Scope: ScopeAll}, {Scope: ScopeBranch, Session: "aaaa-root"}, {Scope: ScopeSession, Session: "aaaa-root"},
		{Scope: ScopeLineage, Session: "bbbb-fork"}, {Scope: ScopeSession, Session: "cccc-other", Window: 2},
		{Scope: ScopeAll, Roles: []string{"user"}},
		// All scope tests records against the filters before reading
		// texts: a time range, one that holds no entry, and types.
		{Scope: ScopeAll, Since: time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC), Until: time.Date(2026, 1, 1, 0, 3, 30, 0, time.UTC)},
		{Scope: ScopeAll, Since: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Scope: ScopeAll, Types: []string{"compaction", "custom_message"}, Until: time.Date(2026, 1, 1, 0, 4, 0, 0, time.UTC)},
		// A filter makes branch scope load the tree (unfiltered, it reads
		// only the current branch's seqs).
		{Scope: ScopeBranch, Session: "aaaa-root", Roles: []string{"assistant", "toolResult"}}}
	for _, q := range queries {
		needle := q.Needle
		for _, sc := range scopes {
			sc.Regex, sc.IgnoreCase = q.Regex, q.IgnoreCase
			for _, newest := range []bool{false, true} {
				for _, limit := range sizes {
					req := sc
					req.Needle, req.NewestFirst, req.Limit = needle, newest, limit
					want := brute(t, e, req)
					got := pages(t, e, req)
					if !slices.Equal(got, want) {
						t.Fatalf("needle %q (regex %v, ignore case %v) scope %s session %s newest=%v limit %d:\n got %v\nwant %v", needle, q.Regex, q.IgnoreCase, req.Scope, req.Session, newest, limit, got, want)
					}
				}
				// Every hit at once, handed over in pages of everyPage.
				req := sc
				req.Needle, req.NewestFirst, req.All = needle, newest, true
				if got, want := everyHit(t, e, req, everyPage), brute(t, e, req); !slices.Equal(got, want) {
					t.Fatalf("every hit of %q (regex %v, ignore case %v) scope %s session %s newest=%v:\n got %v\nwant %v", needle, q.Regex, q.IgnoreCase, req.Scope, req.Session, newest, got, want)
				}
			}
			// A count is every hit, whatever the page: the first page (which
			// the count goes on from), a page that holds them all, or a
			// page that begins at a cursor.
			want := len(brute(t, e, Request{Needle: needle, Regex: q.Regex, IgnoreCase: q.IgnoreCase, Scope: sc.Scope, Session: sc.Session,
				Leaf: sc.Leaf, Window: sc.Window, Roles: sc.Roles, Types: sc.Types, Since: sc.Since, Until: sc.Until}))
			for _, limit := range []int{1, 5, 1000} {
				for _, newest := range []bool{false, true} {
					req := sc
					req.Needle, req.Count, req.Limit, req.NewestFirst = needle, true, limit, newest
					resp, err := e.eng.Search(context.Background(), &req)
					if err != nil {
						t.Fatal(err)
					}
					if got := totalOf(resp); got != want {
						t.Fatalf("count for %q (regex %v, ignore case %v) in %s, limit %d newest=%v: got %d want %d", needle, q.Regex, q.IgnoreCase, req.Scope, limit, newest, got, want)
					}
					if resp.Cursor == "" {
						continue
					}
					req.Cursor = resp.Cursor
					if resp, err = e.eng.Search(context.Background(), &req); err != nil {
						t.Fatal(err)
					}
					if got := totalOf(resp); got != want {
						t.Fatalf("count for %q in %s from a cursor, limit %d newest=%v: got %d want %d", needle, req.Scope, limit, newest, got, want)
					}
				}
			}
		}
	}
}

func TestPagingStaysExactWhileEntriesArrive(t *testing.T) {
	engineModes(t, func(t *testing.T, _ bool) { pagingStaysExactWhileEntriesArrive(t) })
	t.Run("every scan read in two halves", func(t *testing.T) {
		defer func() { testSearch = Options{} }()
		testSearch = Options{ParallelMin: 2, ParallelAfter: -1}
		pagingStaysExactWhileEntriesArrive(t)
	})
}

func pagingStaysExactWhileEntriesArrive(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	e.importFile(t, writeJournal(t, dir, "eeee-live", r, 200, ""))
	e.catchUp(t)
	want := brute(t, e, Request{Needle: "alpha", Scope: ScopeAll})
	req := Request{Needle: "alpha", Scope: ScopeAll, Limit: 5}
	var got []uint64
	k := 0
	for {
		resp, err := e.eng.Search(context.Background(), &req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, hitSeqs(resp.Hits)...)
		// New entries arrive between pages, some indexed, some not.
		k++
		e.importFile(t, writeJournal(t, dir, fmt.Sprintf("f%03d-new", k), r, 10, ""))
		if k%2 == 0 {
			e.catchUp(t)
		}
		if resp.Cursor == "" {
			break
		}
		req.Cursor = resp.Cursor
	}
	// Everything that existed at the start is there once, in order; what
	// arrived later may follow, also once and in order.
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("pages lost or duplicated existing hits:\n got %v\nwant prefix %v", got, want)
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("pages are not strictly increasing: %v", got)
	}
}

func TestBadRequestsAreClearErrors(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(5, 6))
	e.importFile(t, writeJournal(t, t.TempDir(), "gggg-one", r, 30, ""))
	other := Request{Needle: "alpha", Scope: ScopeAll, Limit: 1}
	resp, _ := e.eng.Search(context.Background(), &other)
	cases := []struct {
		name  string
		req   Request
		param string
	}{
		{"empty needle", Request{Needle: ""}, "needle"},
		{"needle over 4 KB", Request{Needle: strings.Repeat("a", 4097)}, "needle"},
		{"invalid UTF-8", Request{Needle: "\xff"}, "needle"},
		{"unknown scope", Request{Needle: "a", Scope: "galaxy"}, "scope"},
		{"branch without session", Request{Needle: "a", Scope: ScopeBranch}, "session"},
		{"unknown session", Request{Needle: "a", Scope: ScopeSession, Session: "nope"}, "session"},
		{"leaf not in session", Request{Needle: "a", Scope: ScopeBranch, Session: "gggg-one", Leaf: "zzzz"}, "leaf"},
		{"window that does not exist", Request{Needle: "a", Scope: ScopeBranch, Session: "gggg-one", Window: 99}, "window"},
		{"window no branch of the session has", Request{Needle: "a", Scope: ScopeSession, Session: "gggg-one", Window: 99}, "window"},
		{"window no session of the lineage has", Request{Needle: "a", Scope: ScopeLineage, Session: "gggg-one", Window: 99}, "window"},
		{"negative window", Request{Needle: "a", Window: -1}, "window"},
		{"a session with scope all", Request{Needle: "a", Scope: ScopeAll, Session: "gggg-one"}, "session"},
		{"limit too large", Request{Needle: "a", Limit: 5000}, "limit"},
		{"forged cursor", Request{Needle: "a", Cursor: "AAAA"}, "cursor"},
		{"cursor of another query", Request{Needle: "beta", Cursor: resp.Cursor}, "cursor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.eng.Search(context.Background(), &c.req)
			se, ok := err.(*Error)
			if !ok || se.Param != c.param {
				t.Fatalf("got %v, want a *search.Error about %q", err, c.param)
			}
		})
	}
}

func TestSharedFixturesBranchesAndLineage(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "fixtures", "pi")
	e := newEnv(t)
	tree := e.importFile(t, filepath.Join(dir, "tree.jsonl"))
	fork := e.importFile(t, filepath.Join(dir, "fork.jsonl"))
	e.catchUp(t)
	// Text only on the abandoned branch (9e0cdd09: "Done; Checkout now returns ErrCartEmpty.").
	needle := "Done; Checkout now returns"
	b, err := e.eng.Search(context.Background(), &Request{Needle: needle, Scope: ScopeBranch, Session: tree})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Hits) != 0 {
		t.Errorf("branch scope at the leaf found the abandoned branch's text: %+v", b.Hits)
	}
	s, _ := e.eng.Search(context.Background(), &Request{Needle: needle, Scope: ScopeSession, Session: tree})
	if len(s.Hits) != 1 || s.Hits[0].OnCurrentBranch || !slices.Equal(s.Hits[0].Leaves, []string{"9e0cdd09"}) {
		t.Errorf("session scope: %+v", s.Hits)
	}
	lin, err := e.eng.Lineage(fork)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(lin, tree) || !slices.Contains(lin, fork) {
		t.Errorf("fork.jsonl and tree.jsonl should be one lineage: %v", lin)
	}
	// Escapes are decoded: a real newline is found, the two characters \n are literal too.
	uni := e.importFile(t, filepath.Join(dir, "unicode.jsonl"))
	e.catchUp(t)
	for _, n := range []string{`\n`, "\"", "\\"} {
		r, err := e.eng.Search(context.Background(), &Request{Needle: n, Scope: ScopeSession, Session: uni})
		if err != nil || len(r.Hits) == 0 {
			t.Errorf("needle %q in unicode.jsonl: %v %v", n, err, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.jsonl")); err == nil {
		ag := e.importFile(t, filepath.Join(dir, "agent.jsonl"))
		ws, err := e.eng.List(context.Background(), &ListRequest{Session: ag})
		if err != nil || len(ws.Items) == 0 {
			t.Fatalf("list agent.jsonl: %v", err)
		}
	}
}

// TestFinderFindsWhatBytesIndexFinds: both of the finder's ways (pairs of
// bytes tested in bulk, where the platform has that, and one byte at a
// time) give bytes.Index's answer, at every start, for texts short and
// long enough for the bulk test, with needles whose rare bytes repeat,
// overlap their own matches or lie at either end.
func TestFinderFindsWhatBytesIndexFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	alpha := []byte("ab e\n\x00é🙂")
	for i := 0; i < 20000; i++ {
		text := make([]byte, r.IntN(40+i%3*80))
		for k := range text {
			text[k] = alpha[r.IntN(len(alpha))]
		}
		needle := make([]byte, 1+r.IntN(6))
		for k := range needle {
			needle[k] = alpha[r.IntN(len(alpha))]
		}
		if r.IntN(4) == 0 && len(text) > len(needle) {
			copy(text[r.IntN(len(text)-len(needle)+1):], needle) // plant one
		}
		checkFinder(t, text, needle)
	}
}

// checkFinder fails t when a finder for needle, either way (and pairs
// tested 16 and, where the processor has AVX2, 32 at a time), disagrees
// with bytes.Index on text or on any of its suffixes.
func checkFinder(t *testing.T, text, needle []byte) {
	t.Helper()
	avx := useAVX2
	defer func() { useAVX2 = avx }()
	for _, way := range []struct{ pairs, avx bool }{{true, false}, {true, true}, {false, false}} {
		if way.avx && !avx {
			continue
		}
		useAVX2, pairs := way.avx, way.pairs
		f := newFinder(needle)
		// Pairs on any platform: where pairScan is plain Go (not
		// amd64), that is its only test.
		f.pairs = pairs && len(needle) >= 2
		for from := 0; from <= len(text); from++ {
			want := bytes.Index(text[from:], needle)
			if want >= 0 {
				want += from
			}
			if got := f.next(text, from); got != want {
				t.Fatalf("finder(%q, pairs %v, AVX2 %v).next(%q, %d) = %d, want %d", needle, f.pairs, useAVX2, text, from, got, want)
			}
		}
		if got, want := f.in(text), bytes.Contains(text, needle); got != want {
			t.Fatalf("finder(%q).in(%q) = %v, want %v", needle, text, got, want)
		}
	}
}

// TestTheIndexSkipsEntriesWithoutReadingTheirText: in every scope,
// entries the index rules out are counted as skipped and not read, and
// the answer is still the brute-force one.
func TestTheIndexSkipsEntriesWithoutReadingTheirText(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	e.importFile(t, writeJournal(t, dir, "aaaa-root", r, 400, ""))
	e.catchUp(t)
	e.importFile(t, writeJournal(t, dir, "bbbb-tail", r, 50, "")) // not taken in
	for _, sc := range []Request{{Scope: ScopeAll}, {Scope: ScopeSession, Session: "aaaa-root"}, {Scope: ScopeBranch, Session: "aaaa-root"}} {
		req := sc
		req.Needle, req.Limit = "naïve 日本語 🙂", 0
		resp, got := searchOnce(t, e, &req)
		if want := brute(t, e, req); !slices.Equal(got, want) {
			t.Fatalf("scope %s: got %v, want %v", req.Scope, got, want)
		}
		t.Logf("scope %s: %d hits, %d read, %d skipped", req.Scope, len(got), resp.Stats.Scanned, resp.Stats.Skipped)
		if resp.Stats.Skipped == 0 || resp.Stats.Scanned > resp.Stats.Skipped/4 {
			t.Errorf("scope %s: %d skipped, %d read for %d hits: the index is not ruling entries out", req.Scope, resp.Stats.Skipped, resp.Stats.Scanned, len(got))
		}
	}
}

// TestShortNeedlesAreNarrowedByTheKeysTheyStart: a needle of one or two
// bytes has no trigram, but the index finds the keys it can start (a
// trigram's first bytes, a text's last two or last byte): a rare one is
// found without reading the texts that lack it, first page and count
// alike, wherever it lies in its text.
func TestShortNeedlesAreNarrowedByTheKeysTheyStart(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(9, 10))
	dir := t.TempDir()
	e.importFile(t, writeJournal(t, dir, "aaaa-root", r, 2500, ""))
	late := `{"type":"session","version":3,"id":"zzzz-late","timestamp":"2026-01-02T00:00:00.000Z","cwd":"/p"}` + "\n" +
		`{"type":"message","id":"z1","parentId":null,"timestamp":"2026-01-02T00:00:01.000Z","message":{"role":"user","content":"a bolt ⚡ here, Ω and ~"}}` + "\n" +
		`{"type":"message","id":"z2","parentId":"z1","timestamp":"2026-01-02T00:00:02.000Z","message":{"role":"user","content":"ends in Ω"}}` + "\n" +
		`{"type":"message","id":"z3","parentId":"z2","timestamp":"2026-01-02T00:00:03.000Z","message":{"role":"user","content":"~"}}` + "\n"
	e.importFile(t, testutil.WriteFile(t, dir, "zzzz-late.jsonl", late))
	e.catchUp(t)
	// Three bytes (a trigram), two (a pair, also at a text's end), one
	// (also a text of its own); none is in the generated journal's
	// vocabulary.
	for _, tc := range []struct {
		needle string
		hits   int
	}{{"⚡", 1}, {"Ω", 2}, {"~", 2}} {
		for _, count := range []bool{false, true} {
			req := Request{Needle: tc.needle, Scope: ScopeAll, Limit: 50, Count: count}
			resp, got := searchOnce(t, e, &req)
			if want := brute(t, e, req); !slices.Equal(got, want) || len(want) != tc.hits {
				t.Fatalf("%q count %v: got %v, want %v (%d hits)", tc.needle, count, got, want, tc.hits)
			}
			t.Logf("%q count %v: plan %s, %d read, %d skipped", tc.needle, count, resp.Stats.Plan, resp.Stats.Scanned, resp.Stats.Skipped)
			if resp.Stats.Scanned > tc.hits || resp.Stats.Skipped < 2000 {
				t.Errorf("%q count %v: %d texts read, %d skipped (plan %q): the index did not rule out the entries without the needle", tc.needle, count, resp.Stats.Scanned, resp.Stats.Skipped, resp.Stats.Plan)
			}
		}
	}
}

func TestEachWindowTilesTheRangeInRequestOrder(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, w uint64
		newest    bool
		want      string
	}{
		{1, 100, 10, false, "[1 10] [11 50] [51 100]"},
		{1, 100, 10, true, "[91 100] [51 90] [1 50]"},
		{5, 5, 10, false, "[5 5]"},
		{1, 100, math.MaxUint64, true, "[1 100]"}, // one window, as a small direct plan asks
		{6, 5, 10, false, ""},
		{1, 0, 10, true, ""},
		// Widths stop growing before they overflow.
		{1, ^uint64(0), 1 << 62, false, "[1 4611686018427387904] [4611686018427387905 9223372036854775808] [9223372036854775809 13835058055282163712] [13835058055282163713 18446744073709551615]"},
	} {
		var got []string
		err := eachWindow(tc.lo, tc.hi, tc.w, tc.newest, func() bool { return false }, fourTimes, func(a, b uint64) error {
			got = append(got, fmt.Sprintf("[%d %d]", a, b))
			return nil
		})
		if s := strings.Join(got, " "); err != nil || s != tc.want {
			t.Errorf("eachWindow(%d, %d, %d, newest=%v) = %q (%v), want %q", tc.lo, tc.hi, tc.w, tc.newest, s, err, tc.want)
		}
	}
	n := 0
	eachWindow(1, 1000, 10, false, func() bool { return n == 2 }, fourTimes, func(a, b uint64) error { n++; return nil })
	if n != 2 {
		t.Errorf("eachWindow went on for %d windows after stop said so at 2", n)
	}
	// grow is told the last width and the seqs covered so far, in either
	// order, and the next window is as wide as it says.
	for _, newest := range []bool{false, true} {
		var widths, told []uint64
		sum := uint64(0)
		eachWindow(1, 100, 10, newest, func() bool { return false }, func(w, covered uint64) uint64 {
			told = append(told, covered)
			return w + 5
		}, func(a, b uint64) error {
			widths = append(widths, b-a+1)
			return nil
		})
		for i, w := range widths[:len(widths)-1] {
			if sum += w; told[i] != sum || widths[i+1] != min(w+5, 100-sum) {
				t.Fatalf("newest=%v: windows %v, covered told %v", newest, widths, told)
			}
		}
	}
}

// TestWindowsGrowWithTheHitsFound: a search's next window is four times
// the last unless the page's hits say it fills sooner: then a quarter more
// than the missing hits should take at the density so far, but at least
// twice the last. Counts, and pages without hits yet, grow four times.
func TestWindowsGrowWithTheHitsFound(t *testing.T) {
	for _, tc := range []struct {
		name             string
		limit, hits      int
		w, covered, want uint64
	}{
		{"a count grows four times", 0, 10, 1024, 1024, 4096},
		{"no hits yet: four times", 50, 0, 1024, 1024, 4096},
		{"sparse hits: at most four times", 50, 5, 4096, 5120, 16384},
		{"middling: what the missing hits take, a quarter more", 50, 20, 4096, 5120, 9600},
		{"dense: at least twice", 50, 40, 1024, 1024, 2048},
		{"the widest window stays", 50, 20, 1 << 60, 1 << 60, 1 << 60},
	} {
		c := &collector{p: &prepared{limit: tc.limit}, hits: make([]*store.Meta, tc.hits)}
		if got := c.grow(tc.w, tc.covered); got != tc.want {
			t.Errorf("%s: after a window of %d, %d seqs and %d of %d hits: next %d, want %d", tc.name, tc.w, tc.covered, tc.hits, tc.limit, got, tc.want)
		}
	}
}

// TestLineageIsAncestorsAndDescendants: a session's lineage is the chain it
// was forked from and the sessions forked from it, at any depth; not its
// siblings (forked from its parent) nor their forks.
func TestLineageIsAncestorsAndDescendants(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	// root ─┬─ kid-a ── grandkid
	//       └─ kid-b ── niece
	files := map[string]string{}
	for _, s := range []struct{ sid, parent string }{
		{"root-0000", ""}, {"kida-0000", "root-0000"}, {"kidb-0000", "root-0000"}, {"gkid-0000", "kida-0000"}, {"niec-0000", "kidb-0000"},
	} {
		files[s.sid] = writeJournal(t, dir, s.sid, r, 5, files[s.parent])
		e.importFile(t, files[s.sid])
	}
	cases := map[string][]string{
		"root-0000": {"root-0000", "gkid-0000", "kida-0000", "kidb-0000", "niec-0000"},
		"kida-0000": {"kida-0000", "gkid-0000", "root-0000"},
		"gkid-0000": {"gkid-0000", "kida-0000", "root-0000"},
		"niec-0000": {"niec-0000", "kidb-0000", "root-0000"},
	}
	for sid, want := range cases {
		got, err := e.eng.Lineage(sid)
		if err != nil || len(got) == 0 || got[0] != sid {
			t.Fatalf("lineage of %s: %v %v; want the session first", sid, got, err)
		}
		rest := slices.Sorted(slices.Values(got[1:]))
		if !slices.Equal(rest, want[1:]) {
			t.Errorf("lineage of %s: %v, want %v", sid, got, want)
		}
	}
}

// TestSearchPagesShareOneBudget: the snippet budget of a search for every
// hit covers the whole answer, not each page.
func TestSearchPagesShareOneBudget(t *testing.T) {
	e := oneSessionEnv(t, 3)
	e.eng.opts.PageHits = 5
	chars, pages := 0, 0
	req := Request{Needle: "a", Scope: ScopeAll, All: true, Budget: 700}
	err := e.eng.SearchPages(context.Background(), &req, func(page *Response) error {
		pages++
		for _, h := range page.Hits {
			for _, sn := range h.Snippets {
				chars += utf8.RuneCountInString(sn.Text)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < 10 || chars == 0 || chars > 700 {
		t.Errorf("%d pages with %d snippet characters; want many pages and some characters, at most the budget of 700", pages, chars)
	}
}

// TestTheBudgetGoesToTheFirstHits: with more hits than the snippet budget
// can serve, the first hits get snippets (the budget used to go to the
// last ones).
func TestTheBudgetGoesToTheFirstHits(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(5, 6))
	e.importFile(t, writeJournal(t, t.TempDir(), "aaaa-root", r, 300, ""))
	// And a session that repeats a long phrase.
	long := "the cart is empty when the checkout starts"
	var j strings.Builder
	j.WriteString(`{"type":"session","version":3,"id":"long","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	for i := range 150 {
		parent := "null"
		if i > 0 {
			parent = fmt.Sprintf(`"l%d"`, i-1)
		}
		fmt.Fprintf(&j, `{"type":"message","id":"l%d","parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"%d: %s, again"}}`+"\n", i, parent, i, long)
	}
	lp := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(lp, []byte(j.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e.importFile(t, lp)
	e.catchUp(t)
	// A short needle, and one longer than the 40-character least share.
	for _, c := range []struct {
		needle string
		budget int
	}{{"a", 400}, {long, 1500}} {
		resp, err := e.eng.Search(context.Background(), &Request{Needle: c.needle, Scope: ScopeAll, Limit: 100, Budget: c.budget})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Hits) < 50 {
			t.Fatalf("%q: %d hits; the test needs many", c.needle, len(resp.Hits))
		}
		chars := 0
		for _, h := range resp.Hits {
			for _, sn := range h.Snippets {
				chars += utf8.RuneCountInString(sn.Text)
			}
		}
		first, last := resp.Hits[0], resp.Hits[len(resp.Hits)-1]
		if len(first.Snippets) == 0 || len(last.Snippets) != 0 || chars > c.budget || !resp.Truncated {
			t.Errorf("%q: first hit %d snippets, last %d, %d characters in all (truncated %v); want the first served, not the last, within %d",
				c.needle, len(first.Snippets), len(last.Snippets), chars, resp.Truncated, c.budget)
		}
	}
}

// TestSearchPagesKeepTheBranchTheyStartedOn: a search for every hit of
// the current branch pages through the branch that was current when it
// began, even when the session's leaf moves to another branch between its
// pages (Pi's /tree going back to an earlier entry and on from there).
// Each page used to work the current branch out again, so the answer
// mixed the two branches' hits.
func TestSearchPagesKeepTheBranchTheyStartedOn(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	user := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p +
			`,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"the pin"}}` + "\n"
	}
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"sess","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	parent := ""
	for i := range 100 {
		id := fmt.Sprintf("e%03d", i)
		b.WriteString(user(id, parent))
		parent = id
	}
	path := filepath.Join(dir, "sess.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// reply appends a user entry under parent and stores it, as the
	// watcher would while a search pages.
	reply := func(id, parent string) error {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(user(id, parent))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			e.importFile(t, path)
		}
		return err
	}
	e.importFile(t, path)
	e.catchUp(t)
	defer func(n int) { e.eng.opts.PageHits = n }(e.eng.opts.PageHits)
	e.eng.opts.PageHits = 3
	// The first search starts on the long branch and the leaf moves back
	// to e004; the second starts there and the leaf moves to the end of
	// the long branch again.
	for i, moveTo := range []string{"e004", "e099"} {
		filtered := i == 1
		var want []string
		before, err := e.eng.Search(context.Background(), &Request{Needle: "pin", Scope: ScopeBranch, Session: "sess", Limit: MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range before.Hits {
			want = append(want, h.Entry)
		}
		var got []string
		total := -1
		req := Request{Needle: "pin", Scope: ScopeBranch, Session: "sess", All: true, Count: true}
		if filtered {
			req.Roles = []string{"user"}
		}
		err = e.eng.SearchPages(context.Background(), &req, func(p *Response) error {
			if p.Total != nil {
				total = *p.Total
			}
			for _, h := range p.Hits {
				got = append(got, h.Entry)
			}
			if len(got) == 3 {
				return reply(fmt.Sprintf("new-%d", i), moveTo)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 6 || !slices.Equal(got, want) || total != len(want) {
			t.Errorf("leaf moved to %s: %d hits (total %d), want the %d of the branch searched first: %v", moveTo, len(got), total, len(want), got)
		}
	}
	// In session scope, what arrives while the pages are read (here on a
	// new branch) is found too, as it would be page by page with cursors.
	var got []string
	err := e.eng.SearchPages(context.Background(), &Request{Needle: "pin", Scope: ScopeSession, Session: "sess", All: true}, func(p *Response) error {
		for _, h := range p.Hits {
			got = append(got, h.Entry)
		}
		if len(got) == 3 {
			return reply("late", "e010")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 103 || got[len(got)-1] != "late" {
		t.Errorf("session scope: %d hits, want the 102 there were and the one that arrived (103), the last \"late\": %v", len(got), got[max(0, len(got)-3):])
	}
}

// TestHitsCiteTheirEntriesAndKnowTheirBranch: in all scope, over hits of
// several sessions, each hit's reference cites its own entry and it is on
// the current branch exactly when its session's current branch holds it.
func TestHitsCiteTheirEntriesAndKnowTheirBranch(t *testing.T) {
	e := newEnv(t)
	importFamily(t, e, rand.New(rand.NewPCG(13, 14)), "cite", 120, 120)
	resp, err := e.eng.Search(context.Background(), &Request{Needle: "e", Scope: ScopeAll, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sessions, on, off := map[string]bool{}, 0, 0
	for _, h := range resp.Hits {
		if want := Ref(h.Entry); h.Ref != want {
			t.Fatalf("hit %s cites %q, want %q", h.Entry, h.Ref, want)
		}
		cur, err := e.st.CurrentBranchSeqs(h.Session)
		if err != nil {
			t.Fatal(err)
		}
		if _, want := slices.BinarySearch(cur, h.Seq); h.OnCurrentBranch != want {
			t.Fatalf("hit %s of %s: on the current branch %v, want %v", h.Entry, h.Session, h.OnCurrentBranch, want)
		}
		sessions[h.Session] = true
		if h.OnCurrentBranch {
			on++
		} else {
			off++
		}
	}
	if len(sessions) < 3 || on == 0 || off == 0 {
		t.Fatalf("hits of %d sessions, %d on and %d off the current branch: the test needs all kinds", len(sessions), on, off)
	}
}

// TestATextHeldByManyEntriesIsReadOnce: when many entries hold the same
// long text (a file read again and again), an exact count and a page of
// every hit read and search that text once, not once per entry
// (store.Options.SharedTextMin, countOnce, seenTexts); the answers are
// brute force's.
func TestATextHeldByManyEntriesIsReadOnce(t *testing.T) {
	defer func() { testStore = store.Options{} }()
	testStore = store.Options{SharedTextMin: 64}
	e := newEnv(t)
	licence := "// Use of this source code is governed by a BSD-style licence that can be found in the LICENSE file.\npackage main\n"
	lines := []string{`{"type":"session","version":3,"id":"rrrr-read","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}`}
	const n = 300
	parent := "null"
	for i := range n {
		text := licence
		if i%3 == 0 {
			text = fmt.Sprintf("short note %d", i)
		}
		b, _ := json.Marshal(text)
		id := fmt.Sprintf("rrrr%04d", i)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolName":"read","toolCallId":"c","content":[{"type":"text","text":%s}]}}`, id, parent, b))
		parent = fmt.Sprintf("%q", id)
	}
	e.importFile(t, testutil.WriteFile(t, t.TempDir(), "rrrr-read.jsonl", strings.Join(lines, "\n")+"\n"))
	e.catchUp(t)
	const holders = n - (n+2)/3
	for _, req := range []Request{
		{Needle: "governed by a BSD", Scope: ScopeAll, Count: true, Limit: 1},
		{Needle: "governed by a BSD", Scope: ScopeAll, Limit: 1000},
	} {
		resp, got := searchOnce(t, e, &req)
		if want := brute(t, e, req); len(want) != holders || (req.Limit > 1 && !slices.Equal(got, want)) || (req.Count && totalOf(resp) != holders) {
			t.Fatalf("%+v: %d hits, total %d; brute force finds %d, want %d", req, len(got), totalOf(resp), len(want), holders)
		}
		// Once by each of a search's two goroutines, and once more by a
		// count going on from a first page: a few reads, not one an entry.
		// (The count's pass over distinct texts, countOnce, and the
		// search's memory of texts, seenTexts, each keep it so; this pins
		// that one of them does, not which.)
		if resp.Stats.Scanned > 4 {
			t.Errorf("%+v: %d texts read for %d entries holding one text: it is read per entry", req, resp.Stats.Scanned, holders)
		}
	}
}
