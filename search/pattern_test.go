package search

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-history/pi-history/internal/testutil"
)

// bruteMatch is the test of brute force for req's needle and modes: a
// literal is strings.Contains; ignoring case, some run of the text's
// characters as long as the needle is strings.EqualFold to it (an oracle
// apart from the engine's, which compiles a regex); a regex is Go's
// regexp over the whole text.
func bruteMatch(t testing.TB, req Request) func(string) bool {
	switch {
	case req.Regex:
		expr := req.Needle
		if req.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			t.Fatalf("brute force cannot compile %q: %v", expr, err)
		}
		return re.MatchString
	case req.IgnoreCase:
		return func(text string) bool { return foldIndex(text, req.Needle) >= 0 }
	}
	return func(text string) bool { return strings.Contains(text, req.Needle) }
}

// foldIndex is where the first run of text's characters that
// strings.EqualFold finds equal to needle starts, -1 when none does.
func foldIndex(text, needle string) int {
	n := utf8.RuneCountInString(needle)
	for i := range text {
		j, k := i, 0
		for ; k < n && j < len(text); k++ {
			_, sz := utf8.DecodeRuneInString(text[j:])
			j += sz
		}
		if k == n && strings.EqualFold(text[i:j], needle) {
			return i
		}
	}
	return -1
}

// patternQueries are ignore-case and regex queries over the fixture's
// vocabulary (see vocab): ones the index answers through one required
// literal, ones whose sketches are tested for one of several literals
// (case variants, alternations), ones no literal narrows, which scan
// (.* matching the empty text too), anchors and word boundaries, folds
// beyond ASCII (É, Ï, the Kelvin sign k folds to).
var patternQueries = []Request{
	{Needle: "alpha", IgnoreCase: true},
	{Needle: "DÉLTA", IgnoreCase: true},
	{Needle: "RETURN NIL", IgnoreCase: true},
	{Needle: "a", IgnoreCase: true},
	{Needle: "X 🚀X", IgnoreCase: true},
	{Needle: "K\nB", IgnoreCase: true},
	{Needle: `alph[a-z]`, Regex: true},
	{Needle: `ErrCart\w+`, Regex: true},
	{Needle: `Err\w+Empty`, Regex: true},
	{Needle: `alpha|gamma`, Regex: true},
	{Needle: `a|b`, Regex: true},
	{Needle: `.*`, Regex: true},
	{Needle: `\bnil\b`, Regex: true},
	{Needle: `^func`, Regex: true},
	{Needle: `d.lta`, Regex: true},
	{Needle: `🙂|日本語`, Regex: true},
	{Needle: `(ErrCart|errcart)(Empty|empty)`, Regex: true},
	{Needle: `ErrCartEmpty|return nil|zzzz-nothing`, Regex: true},
	{Needle: `ERR\w+`, Regex: true, IgnoreCase: true},
	{Needle: `ALPHA|BETA`, Regex: true, IgnoreCase: true},
}

// fewPatternQueries are the patternQueries checked in the other
// configurations: one of each way to find candidates.
var fewPatternQueries = []Request{
	{Needle: "DÉLTA", IgnoreCase: true},
	{Needle: `ErrCart\w+`, Regex: true},
	{Needle: `alpha|gamma`, Regex: true},
	{Needle: `\{ [a-z]+ \}`, Regex: true},
	{Needle: `ERR\w+`, Regex: true, IgnoreCase: true},
	{Needle: `ErrCartEmpty|return nil`, Regex: true},
}

// TestPatternPagesEqualBruteForce: ignore-case and regex searches give
// exactly what brute force finds, in every scope, order and page size,
// with their counts, whether the index (in its open run, or in many runs
// and segments) proposes the candidates or every text is read; and
// (fewer queries) with scans read in two halves.
func TestPatternPagesEqualBruteForce(t *testing.T) {
	engineModes(t, func(t *testing.T, full bool) {
		qs := fewPatternQueries
		if full {
			qs = patternQueries
		}
		queriesEqualBruteForce(t, bruteFixture(t), qs)
	})
	t.Run("every scan read in two halves", func(t *testing.T) {
		defer func() { testSearch = Options{} }()
		testSearch = Options{ParallelMin: 2, ParallelAfter: -1}
		queriesEqualBruteForce(t, bruteFixture(t), fewPatternQueries)
	})
}

// TestPatternPlansSayHowCandidatesWereFound: a required literal, or each
// of several, is asked of the index, and a pattern that requires none is
// scanned.
func TestPatternPlansSayHowCandidatesWereFound(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(7, 8))
	e.importFile(t, writeJournal(t, t.TempDir(), "pppp-one", r, 200, ""))
	e.catchUp(t)
	cases := []struct {
		req  Request
		plan string
	}{
		{Request{Needle: `ErrCart\w+`, Regex: true}, `index (trigram postings)`},
		{Request{Needle: "alpha", IgnoreCase: true}, "index (the candidates of each of 16 literals)"},
		{Request{Needle: `alpha|gamma`, Regex: true}, `index (the candidates of each of 2 literals)`},
		{Request{Needle: `(ErrCart|errcart)(Empty|empty)`, Regex: true}, "index (the candidates of each of 4 literals)"},
		{Request{Needle: `ErrCartEmpty|zzzz-nothing`, Regex: true}, "index (the candidates of each of 2 literals)"},
		{Request{Needle: `a|b`, Regex: true}, `index (the candidates of each of 2 literals)`},
		{Request{Needle: `.+`, Regex: true}, "scan (no literal required)"},
		{Request{Needle: `.*`, Regex: true}, "scan (no literal required)"},
	}
	for _, c := range cases {
		resp, _ := searchOnce(t, e, &c.req)
		if !strings.HasPrefix(resp.Stats.Plan, c.plan) {
			t.Errorf("%q (regex %v, ignore case %v): plan %q, want it to start %q", c.req.Needle, c.req.Regex, c.req.IgnoreCase, resp.Stats.Plan, c.plan)
		}
	}
	// A pattern planned as its one literal names it.
	resp, _ := searchOnce(t, e, &Request{Needle: `ErrCart\w+`, Regex: true, Count: true})
	if !strings.HasSuffix(resp.Stats.Plan, `; required literal "ErrCart"`) || strings.Count(resp.Stats.Plan, "required literal") != 1 {
		t.Errorf("plan %q does not end naming the required literal once", resp.Stats.Plan)
	}
}

// TestPatternScanStopsWithItsContext: a pattern that no literal narrows
// reads every text, and stops when its context ends.
func TestPatternScanStopsWithItsContext(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(9, 10))
	e.importFile(t, writeJournal(t, t.TempDir(), "qqqq-one", r, 3000, ""))
	e.catchUp(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.eng.Search(ctx, &Request{Needle: `[a-z]+\d`, Regex: true, Count: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a scan with its context cancelled: %v, want context.Canceled", err)
	}
}

// TestBadPatternsAreClearErrors: a regex that does not compile is refused
// naming the needle and saying why, and a cursor of another mode is
// refused.
func TestBadPatternsAreClearErrors(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Needle: `func (`, Regex: true}, "missing closing )"},
		{Request{Needle: `a[`, Regex: true}, "missing closing ]"},
		{Request{Needle: `x**`, Regex: true}, "invalid nested repetition operator"},
		{Request{Needle: `(?<name`, Regex: true}, "does not compile"},
		{Request{Needle: `a{2000}`, Regex: true}, "invalid repeat count"},
	}
	for _, c := range cases {
		_, err := e.eng.Search(context.Background(), &c.req)
		var se *Error
		if !errors.As(err, &se) || se.Kind != BadRequest || se.Param != "needle" || !strings.Contains(se.Msg, c.want) {
			t.Errorf("%q: %v, want a bad request on needle saying %q", c.req.Needle, err, c.want)
		}
	}
	// A cursor belongs to its mode: a literal search's is refused by the
	// same needle as a regex or ignoring case.
	r := rand.New(rand.NewPCG(5, 6))
	e.importFile(t, writeJournal(t, t.TempDir(), "cccc-one", r, 40, ""))
	lit := Request{Needle: "alpha", Scope: ScopeAll, Limit: 1}
	resp, _ := searchOnce(t, e, &lit)
	if resp.Cursor == "" {
		t.Fatal("no second page to take a cursor from")
	}
	for _, other := range []Request{{Regex: true}, {IgnoreCase: true}} {
		other.Needle, other.Scope, other.Limit, other.Cursor = "alpha", ScopeAll, 1, resp.Cursor
		_, err := e.eng.Search(context.Background(), &other)
		var se *Error
		if !errors.As(err, &se) || se.Param != "cursor" {
			t.Errorf("a literal search's cursor with regex %v, ignore case %v: %v, want a cursor error", other.Regex, other.IgnoreCase, err)
		}
	}
	// Ignoring case alone, the needle is a literal: regex syntax is text.
	if _, err := e.eng.Search(context.Background(), &Request{Needle: `a*(`, IgnoreCase: true}); err != nil {
		t.Errorf("ignore-case literal with regex syntax refused: %v", err)
	}
}

// TestRequiredLiteralsAreInEveryMatch: over random expressions built from
// literals, classes, alternations and repeats (with and without the i
// flag) and random texts, every text an expression matches holds one of
// the literals compilePattern requires, each match does.
func TestRequiredLiteralsAreInEveryMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	atoms := []string{"ab", "Ab", "k", "é", "日本", "x", ".", `\w`, "[ab]", "[a-z]", "(ab|cd)", "(x|é)", "(?:aB)", `\b`, "^", "$"}
	ops := []string{"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,2}"}
	textRunes := []rune("abABcdkKKéÉ日本x xy\n")
	checked := 0
	for range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(5) {
			b.WriteString(atoms[r.IntN(len(atoms))])
			b.WriteString(ops[r.IntN(len(ops))])
		}
		expr := b.String()
		if r.IntN(4) == 0 {
			expr += "|" + atoms[r.IntN(len(atoms))]
		}
		fold := r.IntN(2) == 0
		p, err := compilePattern("needle", expr, true, fold)
		if err != nil {
			continue
		}
		for range 20 {
			rs := make([]rune, r.IntN(20))
			for i := range rs {
				rs[i] = textRunes[r.IntN(len(textRunes))]
			}
			text := []byte(string(rs))
			for _, loc := range p.re.FindAllIndex(text, -1) {
				m := text[loc[0]:loc[1]]
				if len(p.lits) > 0 && !slices.ContainsFunc(p.lits, func(l []byte) bool { return strings.Contains(string(m), string(l)) }) {
					t.Fatalf("%q (fold %v) matched %q, which holds none of its literals %q", expr, fold, m, p.lits)
				}
				checked++
			}
			if (p.index(text) >= 0) != p.re.Match(text) {
				t.Fatalf("%q (fold %v) over %q: index %d, regexp says %v", expr, fold, text, p.index(text), p.re.Match(text))
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d matches checked", checked)
	}
}

// TestRequiredLiteralsNarrowAsMuchAsTheyMay: the literals chosen are the
// longest run of exact parts within the bound on alternatives, a single
// literal with trigrams before several.
func TestRequiredLiteralsNarrowAsMuchAsTheyMay(t *testing.T) {
	cases := []struct {
		expr  string
		regex bool
		fold  bool
		want  []string
	}{
		{"foo.*barbaz", true, false, []string{"barbaz"}},
		{`Err\w+Empty`, true, false, []string{"Empty"}},
		// One literal the index can answer for before two longer ones.
		{"(foo|bar)baz", true, false, []string{"baz"}},
		{"(foo|bar)ba", true, false, []string{"barba", "fooba"}},
		{"x+yzw", true, false, []string{"yzw"}},
		{"a|b", true, false, []string{"a", "b"}},
		{".*", true, false, nil},
		{"[a-z]+", true, false, nil},
		// k folds to K and the Kelvin sign.
		{"ok", false, true, []string{"OK", "O\u212a", "Ok", "oK", "o\u212a", "ok"}},
		{"1234567", false, true, []string{"1234567"}},
		{"a.b", false, false, []string{"a.b"}},
	}
	for _, c := range cases {
		p, err := compilePattern("needle", c.expr, c.regex, c.fold)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		var got []string
		for _, l := range p.lits {
			got = append(got, string(l))
		}
		want := slices.Clone(c.want)
		slices.Sort(want)
		want = slices.Compact(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q (regex %v, fold %v): literals %q, want %q", c.expr, c.regex, c.fold, got, want)
		}
	}
	// "error" ignoring case: every letter has two cases, so a run of four
	// (16 spellings) is required.
	p, _ := compilePattern("needle", "error", false, true)
	if len(p.lits) != 16 || utf8.RuneCount(p.lits[0]) != 4 {
		t.Errorf("error ignoring case requires %q; want 16 spellings of 4 letters", p.lits)
	}
}

// FuzzPatternSearch sends arbitrary needles in both modes to a small real
// store: each is answered or refused with a *search.Error naming the
// needle, and every hit holds a match as brute force sees it.
func FuzzPatternSearch(f *testing.F) {
	f.Add("alpha", true, false)
	f.Add("ALPHA", false, true)
	f.Add("(a|é)+x", true, true)
	f.Add("a**", true, false)
	f.Add("\\", true, false)
	e := newEnvF(f)
	f.Fuzz(func(t *testing.T, needle string, regex, fold bool) {
		if !regex && !fold {
			fold = true
		}
		req := &Request{Needle: needle, Regex: regex, IgnoreCase: fold, Scope: ScopeAll, Limit: 20}
		resp, err := e.eng.Search(context.Background(), req)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error that is not a *search.Error: %v", err)
			}
			return
		}
		match := bruteMatch(t, *req)
		for _, h := range resp.Hits {
			text, _ := e.st.Text(h.Seq)
			if !match(text) {
				t.Fatalf("hit %s does not match %q (regex %v, fold %v)", h.Entry, needle, regex, fold)
			}
		}
	})
}

// TestPatternSnippetsMarkTheirMatches: over texts of multi-byte runes
// with many matches, near and far apart, some of them longer than a
// snippet shows, a pattern's hit counts every match, and each snippet is
// the text at its rune offset, marking the start of one of the
// expression's matches (all of it, or its first maxShownMatch
// characters), in text order, within the budget; held (ASCII) or copied.
func TestPatternSnippetsMarkTheirMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	words := []string{"ab", "é", "É", "日本", "🙂", "x", " ", "\n", "needle", "NeEdLe", strings.Repeat("q", 150)}
	exprs := []struct {
		expr        string
		regex, fold bool
	}{
		{"needle", false, true}, {"é", false, true}, {`n\w+e`, true, false}, {`x.*x`, true, false},
		{`(日本|🙂)+`, true, false}, {`q+`, true, false}, {`É\s`, true, true}, {`.*`, true, false}}
	cases := 0
	for range 3000 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(words[r.IntN(len(words))])
		}
		text := []byte(b.String())
		ex := exprs[r.IntN(len(exprs))]
		p, err := compilePattern("needle", ex.expr, ex.regex, ex.fold)
		if err != nil {
			t.Fatal(err)
		}
		f := &finder{pat: p}
		segs, matches := hitParts(nil, text, f, f.index(text))
		locs := p.re.FindAllIndex(text, -1)
		if matches != len(locs) {
			t.Fatalf("%q over %q: %d matches counted, regexp finds %d", ex.expr, text, matches, len(locs))
		}
		budget := 20 + r.IntN(800)
		snips, used := snippets(nil, segs, f, budget)
		runes := []rune(string(text))
		total, last := 0, -1
		for i, s := range snips {
			n := utf8.RuneCountInString(s.Text)
			if s.Offset < 0 || s.Offset+n > len(runes) || string(runes[s.Offset:s.Offset+n]) != s.Text {
				t.Fatalf("%q over %q: snippet %d %q is not the text at rune %d", ex.expr, text, i, s.Text, s.Offset)
			}
			at := len(string(runes[:s.Offset])) + s.MatchStart
			k := slices.IndexFunc(locs, func(l []int) bool { return l[0] == at })
			if k < 0 || at <= last {
				t.Fatalf("%q over %q: snippet %d marks byte %d, not a match start after %d (matches %v)", ex.expr, text, i, at, last, locs)
			}
			end := at + s.MatchEnd - s.MatchStart
			shown := utf8.RuneCount(text[locs[k][0]:end])
			if end != locs[k][1] && (shown != maxShownMatch || end > locs[k][1]) {
				t.Fatalf("%q over %q: snippet %d marks %d..%d, the match is %v", ex.expr, text, i, at, end, locs[k])
			}
			last = at
			total += n
			cases++
		}
		if len(snips) > maxSnippets || total != used || used > budget {
			t.Fatalf("%q over %q, budget %d: %d snippets of %d characters, reported %d", ex.expr, text, budget, len(snips), total, used)
		}
		if len(locs) > 0 && budget >= maxShownMatch+10 && len(snips) == 0 {
			t.Fatalf("%q over %q matches and got no snippet with budget %d", ex.expr, text, budget)
		}
	}
	if cases < 1000 {
		t.Fatalf("only %d snippets checked", cases)
	}
}

// checkFoldFinder fails unless an ignore-case needle's matches in text,
// as its pattern finds them (through its foldFinder when it has one), are
// those of the regex, and the first is where strings.EqualFold finds one.
func checkFoldFinder(t *testing.T, text []byte, needle string) {
	t.Helper()
	p, err := compilePattern("needle", needle, false, true)
	if err != nil {
		t.Fatalf("%q: %v", needle, err)
	}
	want := p.re.FindAllIndex(text, -1)
	got := p.all(text)
	if len(got) != len(want) || !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("%q in %q: matches %v, the regex finds %v", needle, text, got, want)
	}
	first := -1
	if len(want) > 0 {
		first = want[0][0]
	}
	if at := p.index(text); at != first {
		t.Fatalf("%q in %q: first match at %d, the regex says %d", needle, text, at, first)
	}
	if utf8.Valid(text) {
		if at := foldIndex(string(text), needle); at != first {
			t.Fatalf("%q in %q: first match at %d, strings.EqualFold finds one at %d", needle, text, first, at)
		}
	}
}

// TestFoldFinderAgreesWithTheRegex: over random texts of letters in both
// cases, the Kelvin sign, the long s, É, emoji and bytes that are not
// UTF-8, an ignore-case needle's matches are the regex's, whether its
// foldFinder (anchored on a character whose cases are ASCII) or the regex
// (a needle of k, s and non-ASCII letters alone) finds them.
func TestFoldFinderAgreesWithTheRegex(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	pieces := []string{"a", "A", "b", "B", "k", "K", "\u212a", "s", "S", "\u017f", "é", "É", "🙂", " ", "\n", "x.y", "\xff", "\xe6\x97", "ab", "AB"}
	needles := []string{"ab", "AB", "a", "kab", "abk", "sk", "SK", "é", "éa", "a🙂b", "x.Y", ".", "bKs", "b\u212ab", "k", "\u017f"}
	withFinder := 0
	for range 5000 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		needle := needles[r.IntN(len(needles))]
		if newFoldFinder(needle) != nil {
			withFinder++
		}
		checkFoldFinder(t, []byte(b.String()), needle)
	}
	if withFinder < 2000 {
		t.Fatalf("only %d needles had a foldFinder", withFinder)
	}
}

// FuzzFoldFinder: an ignore-case needle's matches are the regex's in any
// text.
func FuzzFoldFinder(f *testing.F) {
	f.Add([]byte("The Kelvin \u212a and kK, the long \u017f and sS"), "k AND")
	f.Add([]byte("\xff\xfeab\xe6\x97AB"), "ab")
	f.Add([]byte("ÉÉé"), "éé")
	f.Fuzz(func(t *testing.T, text []byte, needle string) {
		if needle == "" || !utf8.ValidString(needle) || len(text) > 4096 || len(needle) > 64 {
			return
		}
		checkFoldFinder(t, text, needle)
	})
}

// TestRegexMatchesStayWithinOneEntry: an expression is matched against
// each entry's text alone, so one that would span the end of an entry and
// the start of the next finds nothing, ^ and $ are the ends of each
// entry's text, and (?s). still stops at an entry's end.
func TestRegexMatchesStayWithinOneEntry(t *testing.T) {
	e := newEnv(t)
	lines := []string{`{"type":"session","version":3,"id":"eeee-one","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}`,
		`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"the first ends with omega"}}`,
		`{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"psi starts the second"}}`}
	e.importFile(t, testutil.WriteFile(t, t.TempDir(), "eeee-one.jsonl", strings.Join(lines, "\n")+"\n"))
	e.catchUp(t)
	cases := []struct {
		expr string
		want []string
	}{
		{`omega\s*psi`, nil},
		{`(?s)omega.*psi`, nil},
		{`omega$`, []string{"e1"}},
		{`^psi`, []string{"e2"}},
		{`^the.*omega$`, []string{"e1"}},
		{`(?s)e.*s`, []string{"e1", "e2"}},
	}
	for _, c := range cases {
		for _, scope := range []Request{{Scope: ScopeAll}, {Scope: ScopeBranch, Session: "eeee-one"}} {
			req := scope
			req.Needle, req.Regex = c.expr, true
			resp, _ := searchOnce(t, e, &req)
			var got []string
			for _, h := range resp.Hits {
				got = append(got, h.Entry)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q in %s scope: hits %v, want %v", c.expr, req.Scope, got, c.want)
			}
		}
	}
}

// TestEachLiteralsIndexCandidatesAreSearched: a regex that requires one of
// several long literals, each in entries far apart, finds the
// hits of every one of them through the index's candidates of each (and
// the tail the index has not taken in), oldest or newest first, with its count.
func TestEachLiteralsIndexCandidatesAreSearched(t *testing.T) {
	e := newEnv(t)
	lines := []string{`{"type":"session","version":3,"id":"uuuu-one","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}`}
	marks := map[int]string{5: "zebraMarkerOne", 140: "yakMarkerTwo", 290: "zebraMarkerOne yakMarkerTwo"}
	parent := "null"
	for i := 1; i <= 300; i++ {
		text := fmt.Sprintf("filler text number %d", i)
		if m, ok := marks[i]; ok {
			text += " " + m
		}
		id := fmt.Sprintf("u%04d", i)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q}}`, id, parent, text))
		parent = fmt.Sprintf("%q", id)
	}
	e.importFile(t, testutil.WriteFile(t, t.TempDir(), "uuuu-one.jsonl", strings.Join(lines, "\n")+"\n"))
	e.catchUp(t)
	tail := []string{`{"type":"session","version":3,"id":"vvvv-two","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}`,
		`{"type":"message","id":"v0001","parentId":null,"timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"the tail's yakMarkerTwo"}}`}
	e.importFile(t, testutil.WriteFile(t, t.TempDir(), "vvvv-two.jsonl", strings.Join(tail, "\n")+"\n"))
	for _, newest := range []bool{false, true} {
		req := Request{Needle: `zebraMarkerOne|yakMarker\w+`, Regex: true, Count: true, Limit: 50, NewestFirst: newest}
		resp, _ := searchOnce(t, e, &req)
		var got []string
		for _, h := range resp.Hits {
			got = append(got, h.Entry)
		}
		want := []string{"u0005", "u0140", "u0290", "v0001"}
		if newest {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) || totalOf(resp) != 4 {
			t.Errorf("newest=%v: hits %v (total %d), want %v", newest, got, totalOf(resp), want)
		}
		if !strings.HasPrefix(resp.Stats.Plan, "index (the candidates of each of 2 literals)") {
			t.Errorf("plan %q; want the index's candidates of each literal", resp.Stats.Plan)
		}
		if resp.Stats.Scanned > 3+2 {
			t.Errorf("%d entries read; the candidates are the three entries and the tail", resp.Stats.Scanned)
		}
	}
}
