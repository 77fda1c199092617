package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/store"
)

// sessionsEnv is a store on disk with journals read into it, and the
// directory for its session word index.
type sessionsEnv struct {
	st       *store.Store
	journals string
	ix       string
}

func newSessionsEnv(t *testing.T) *sessionsEnv {
	t.Helper()
	root, st := newStore(t)
	e := &sessionsEnv{st: st, journals: filepath.Join(root, "journals"), ix: filepath.Join(root, "index-sessions")}
	if err := os.Mkdir(e.journals, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// session appends lines to session id's journal (its header first when
// new) and reads the journal into the store.
func (e *sessionsEnv) session(t *testing.T, id, cwd string, lines ...string) {
	t.Helper()
	p := filepath.Join(e.journals, id+".jsonl")
	if _, err := os.Stat(p); err != nil {
		lines = append([]string{`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T10:00:00.000Z","cwd":"` + cwd + `"}`}, lines...)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := ingest.File(e.st, p, nil); err != nil {
		t.Fatal(err)
	}
}

// msg is a message entry of role with text; parent "" for a root.
func msg(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"` + role + `","content":` + strconv.Quote(text) + `}}`
}

func (e *sessionsEnv) open(t *testing.T) *Sessions {
	t.Helper()
	s, err := OpenSessions(e.ix, e.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sessionsCatchUp(t *testing.T, s *Sessions) SessionsPass {
	t.Helper()
	p, err := s.CatchUp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func matchIDs(t *testing.T, s *Sessions, q string) []string {
	t.Helper()
	ms, err := s.Match(context.Background(), q, 10)
	if err != nil {
		t.Fatalf("Match(%q): %v", q, err)
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.Session
	}
	return ids
}

// fiveSessions stores sessions that differ in where their words are: in
// a title, deep in the user text, in an assistant's answer only, in the
// name, in the project's path.
func fiveSessions(t *testing.T, e *sessionsEnv) {
	t.Helper()
	long := strings.Repeat("some unrelated words about lunch and the weather. ", 400)
	e.session(t, "checkout", "/home/dev/shop",
		msg("c1", "", "user", "Fix the flaky checkout test"),
		msg("c2", "c1", "assistant", "The zebra database migration is done."),
		msg("c3", "c2", "user", strings.Repeat("Also look at the retry logic of the HTTP client. ", 20)))
	e.session(t, "deep", "/home/dev/shop",
		msg("d1", "", "user", "hello there"),
		msg("d2", "d1", "user", long+" and by the way the checkout page is slow "+long))
	e.session(t, "migration", "/home/dev/db",
		msg("m1", "", "user", "Plan the database migrations for the orders table"))
	e.session(t, "named", "/home/dev/docs",
		msg("n1", "", "user", "write something"),
		`{"type":"session_info","id":"i1","parentId":"n1","timestamp":"2026-01-01T10:00:02.000Z","name":"Release notes for v2"}`)
	e.session(t, "payments", "/home/dev/payments-service", msg("p1", "", "user", "hello"))
}

// TestSessionMatchRanksTitleAndUserTextFirst: a session whose title holds
// the words ranks before one whose long user text mentions them once;
// words match by their stems, in names and projects too; an assistant's
// words are not indexed; phrases, exclusions and fields work as Bleve's
// query strings do; the fragment quotes where the words are.
func TestSessionMatchRanksTitleAndUserTextFirst(t *testing.T) {
	e := newSessionsEnv(t)
	fiveSessions(t, e)
	e.session(t, "mentions", "/home/dev/shop", msg("r1", "", "user", "hi"), msg("r2", "r1", "user", "checkout, checkout, checkout: the cart"))
	s := e.open(t)
	if p := sessionsCatchUp(t, s); p.Indexed != 6 {
		t.Fatalf("first pass indexed %d sessions, want 6", p.Indexed)
	}
	for _, c := range []struct {
		name, q string
		want    []string
	}{
		{"title before mentions in user text", "checkout", []string{"checkout", "mentions", "deep"}},
		{"stems match", "migration", []string{"migration"}},
		{"an assistant's words are not indexed", "zebra", []string{}},
		{"the name is searched", "release notes", []string{"named"}},
		{"the project's path is searched", "payments", []string{"payments"}},
		{"a phrase", `"flaky checkout"`, []string{"checkout"}},
		{"an excluded word", "checkout -flaky", []string{"mentions", "deep"}},
		{"a field", "id:named", []string{"named"}},
		{"a word no session holds", "kubernetes", []string{}},
		{"a range over the last activity", `+checkout +last:>"2025-12-01"`, []string{"checkout", "mentions", "deep"}},
		{"a range none is in", `+checkout +last:<"2025-12-01"`, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := matchIDs(t, s, c.q); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("Match(%q) = %q, want %q", c.q, got, c.want)
			}
		})
	}
	ms, err := s.Match(context.Background(), "checkout", 10)
	if err != nil || len(ms) != 3 {
		t.Fatalf("Match(checkout) = %v, %v", ms, err)
	}
	if ms[0].Field != "title" || ms[0].Fragment != "Fix the flaky checkout test" {
		t.Errorf("the title match quotes %s %q, want the title", ms[0].Field, ms[0].Fragment)
	}
	if f := ms[2].Fragment; ms[2].Field != "text" || !strings.Contains(f, "the checkout page is slow") || !strings.HasPrefix(f, "…") ||
		!strings.HasSuffix(f, "…") || len(f) > 2*fragmentBytes {
		t.Errorf("the deep match quotes %s %q, want a short stretch of user text around the word", ms[2].Field, f)
	}
	if ms[0].Score <= ms[1].Score {
		t.Errorf("scores %v, %v: want the title match's higher", ms[0].Score, ms[1].Score)
	}
}

// TestSessionIndexFollowsTheStore: Run indexes a session's new user
// messages, a new name and a new session soon after they are stored.
func TestSessionIndexFollowsTheStore(t *testing.T) {
	e := newSessionsEnv(t)
	fiveSessions(t, e)
	s := e.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor := func(q, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got := matchIDs(t, s, q)
			if len(got) > 0 && got[0] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Match(%q) = %q after 15 s, want %s first", q, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		name, q, want string
		write         func()
	}{
		{"the first pass", "checkout", "checkout", func() {}},
		{"a new user message", "invoice", "payments", func() {
			e.session(t, "payments", "", msg("p2", "p1", "user", "now render the invoice PDF"))
		}},
		{"a new name", "quarterly", "migration", func() {
			e.session(t, "migration", "", `{"type":"session_info","id":"i2","parentId":"m1","timestamp":"2026-01-01T10:00:03.000Z","name":"Quarterly schema work"}`)
		}},
		{"a new session", "telescope", "fresh", func() {
			e.session(t, "fresh", "/home/dev/sky", msg("f1", "", "user", "point the telescope"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.write()
			waitFor(c.q, c.want)
		})
	}
}

// TestSessionIndexIsRebuiltWhenDamaged: an index deleted, unreadable or of
// another format is made anew from the store on open and answers as
// before; one that lost documents (a crash before they reached disk) is
// caught up by the first pass.
func TestSessionIndexIsRebuiltWhenDamaged(t *testing.T) {
	for _, c := range []struct {
		name    string
		damage  func(t *testing.T, e *sessionsEnv)
		reindex int // documents the pass after reopening writes
	}{
		{"nothing", func(*testing.T, *sessionsEnv) {}, 0},
		{"deleted", func(t *testing.T, e *sessionsEnv) { os.RemoveAll(e.ix) }, 5},
		{"garbage meta", func(t *testing.T, e *sessionsEnv) { garble(t, filepath.Join(e.ix, "index_meta.json")) }, 5},
		{"garbage root", func(t *testing.T, e *sessionsEnv) { garble(t, filepath.Join(e.ix, "store", "root.bolt")) }, 5},
		{"another format", func(t *testing.T, e *sessionsEnv) {
			s := e.open(t)
			if err := s.bi.SetInternal([]byte(formatKey), []byte("pihist-sessions-v0")); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}, 5},
		{"stored while closed", func(t *testing.T, e *sessionsEnv) {
			e.session(t, "payments", "", msg("p2", "p1", "user", "where is the cheese"))
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSessionsEnv(t)
			fiveSessions(t, e)
			s := e.open(t)
			sessionsCatchUp(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			c.damage(t, e)
			s = e.open(t)
			if p := sessionsCatchUp(t, s); p.Indexed != c.reindex || p.Removed != 0 {
				t.Errorf("the pass after reopening indexed %d and removed %d, want %d and 0", p.Indexed, p.Removed, c.reindex)
			}
			if n, err := s.DocCount(); err != nil || n != 5 {
				t.Errorf("the index holds %d sessions (%v), want 5", n, err)
			}
			if got := matchIDs(t, s, "checkout"); strings.Join(got, " ") != "checkout deep" {
				t.Errorf("after reopening, Match(checkout) = %q", got)
			}
		})
	}
}

func garble(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no %s to damage: %v", path, err)
	}
	if err := os.WriteFile(path, []byte("this is not what Bleve wrote"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSessionMatchRefusesBadQueries: what cannot be a query is refused
// as invalid input, naming the parameter, not run.
func TestSessionMatchRefusesBadQueries(t *testing.T) {
	e := newSessionsEnv(t)
	fiveSessions(t, e)
	s := e.open(t)
	sessionsCatchUp(t, s)
	for _, c := range []struct {
		name, q string
		limit   int
		param   string
	}{
		{"empty", "", 10, "match"},
		{"blank", " \t ", 10, "match"},
		{"too long", strings.Repeat("word ", MaxMatchBytes/5+1), 10, "match"},
		{"an unclosed phrase", `title:"checkout`, 10, "match"},
		{"a dangling field", "title:", 10, "match"},
		{"no sessions asked for", "checkout", 0, "limit"},
		{"too many asked for", "checkout", MaxMatchLimit + 1, "limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, err := s.Match(context.Background(), c.q, c.limit)
			var pe *pihistory.Error
			if !errors.As(err, &pe) || pe.Kind != pihistory.Invalid || pe.Param != c.param {
				t.Fatalf("Match(%q, %d) = %v, %v; want an invalid-input error on %s", c.q, c.limit, ms, err, c.param)
			}
		})
	}
}

// TestSessionsTheStoreNoLongerHoldsAreRemoved: a pass removes the
// documents of sessions its store does not hold (an index kept beside a
// store imported anew).
func TestSessionsTheStoreNoLongerHoldsAreRemoved(t *testing.T) {
	e := newSessionsEnv(t)
	fiveSessions(t, e)
	s := e.open(t)
	sessionsCatchUp(t, s)
	s.Close()
	other := newSessionsEnv(t)
	other.ix = e.ix
	other.session(t, "checkout", "/home/dev/shop", msg("c1", "", "user", "Fix the flaky checkout test"))
	s = other.open(t)
	if p := sessionsCatchUp(t, s); p.Removed != 4 || p.Indexed != 1 {
		t.Errorf("the pass removed %d and indexed %d, want 4 and 1", p.Removed, p.Indexed)
	}
	if got := matchIDs(t, s, "checkout"); strings.Join(got, " ") != "checkout" {
		t.Errorf("Match(checkout) = %q, want only the session still stored", got)
	}
}

// TestSettleLeavesOneSegment: a pass over sessions with more user text than
// a batch holds writes several segments; Settle merges them into one.
func TestSettleLeavesOneSegment(t *testing.T) {
	e := newSessionsEnv(t)
	words := strings.Fields("checkout cart payment refund invoice ledger shipping warehouse parcel courier")
	for i := range 64 {
		var b strings.Builder
		for j := range 12000 {
			b.WriteString(words[(i*7+j)%len(words)])
			b.WriteString(fmt.Sprintf(" %d ", j%97))
		}
		e.session(t, fmt.Sprintf("s%02d", i), "/w", msg("u1", "", "user", b.String()))
	}
	s := e.open(t)
	if p := sessionsCatchUp(t, s); p.TextBytes < 3*sessionBatchBytes {
		t.Fatalf("%d bytes of user text indexed; the test needs several batches' worth", p.TextBytes)
	}
	// Cancelled, it returns at once (no merge's error to go by: Bleve
	// reports a merge stopped by its context as done).
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := s.Settle(cancelled); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Settle with a cancelled context: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Settle with a cancelled context took %v; want it to return at once", d)
	}
	if n := rootSegments(t, s); n < 2 {
		t.Fatalf("%d segments before Settle; the test needs several", n)
	}
	if err := s.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The merge is what Settle promises. The files merged away go when
	// Bleve's persister next passes (Settle waits a few seconds for it)
	// or at the next open: how many are left after Close depends on the
	// machine's load, so it is not asserted.
	if n := rootSegments(t, s); n != 1 {
		t.Errorf("%d segments after Settle; want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := matchIDs(t, e.open(t), "courier"); len(got) == 0 {
		t.Errorf("no session matches after reopening; want them all")
	}
}

// rootSegments is how many segments, in memory and on disk, the session
// word index's current snapshot holds.
func rootSegments(t *testing.T, s *Sessions) uint64 {
	t.Helper()
	adv, err := s.bi.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		t.Fatalf("the session word index is a %T, not scorch", adv)
	}
	m := sc.StatsMap()
	inMemory, _ := m["TotMemorySegmentsAtRoot"].(uint64)
	onDisk, _ := m["TotFileSegmentsAtRoot"].(uint64)
	return inMemory + onDisk
}
