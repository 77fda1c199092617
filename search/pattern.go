package search

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pi-history/pi-history/index"
)

// pattern is a needle that is not matched byte for byte: a regular
// expression (RE2 syntax, Go's regexp), or a literal compared with Unicode
// simple case folding (ignore-case, compiled as the regular expression of
// the quoted needle with the i flag, which folds each character of the
// needle exactly as strings.EqualFold compares two: a match is a run of as
// many characters as the needle has, each of which folds to the
// needle's). A match never crosses an entry's end: each entry's text is
// matched alone.
//
// Candidates come from what every match must contain (lits): a set of
// literals one of which is in every match, worked out from the
// expression's syntax (see required). The index proposes the entries that
// may hold one of them (the union of each literal's candidates); with
// none, or one without a trigram, every text is read.
// Either way the expression confirms every candidate, so a candidate set
// that proposes too much costs time, never an answer.
type pattern struct {
	re *regexp.Regexp
	// lits: one of them is in every match (nil: nothing is required).
	lits [][]byte
	// pre: finders of lits, tested before the expression runs on a
	// text: a text that holds none of them cannot match, and finding a
	// literal is far quicker than running the expression.
	pre []*finder
	// fold, for an ignore-case literal that has an anchor, finds its
	// matches instead of the expression (see foldFinder).
	fold *foldFinder
}

// maxAlternatives is the most literals a requirement may name: each costs
// an index query and a search of each text read.
const maxAlternatives = 16

// compilePattern compiles needle as a regular expression (regex) or a
// literal, compared ignoring case when fold is set. param names the
// request's field in errors.
func compilePattern(param, needle string, regex, fold bool) (*pattern, error) {
	expr := needle
	if !regex {
		expr = regexp.QuoteMeta(needle)
	}
	flags := syntax.Perl
	if fold {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(expr, flags)
	if err != nil {
		return nil, badf(param, "the regex %q does not compile: %v (RE2 syntax: escape . * + ? ( ) [ ] { } | ^ $ \\ with \\ to match them literally)", needle, describeSyntaxError(err))
	}
	tree = tree.Simplify()
	if fold {
		// The flag is given in the expression too, so that regexp
		// (which parses it again) folds exactly what the tree does.
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, badf(param, "the regex %q does not compile: %v", needle, err)
	}
	p := &pattern{re: re}
	for _, s := range required(tree).req {
		p.lits = append(p.lits, []byte(s))
	}
	if fold && !regex {
		p.fold = newFoldFinder(needle)
	}
	if p.fold == nil {
		for _, l := range p.lits {
			p.pre = append(p.pre, newFinder(l))
		}
	}
	return p, nil
}

// setNeedle sets what p finds (find) and what its candidates are asked
// for (lit, queries): the needle, or the request's pattern and the
// literals it requires (see pattern).
func (p *prepared) setNeedle(ix *index.Index) error {
	req := p.req
	if !req.Regex && !req.IgnoreCase {
		p.lit = []byte(req.Needle)
		p.find = newFinder(p.lit)
		p.queries = queriesOf(ix, p.lit)
		return nil
	}
	pat, err := compilePattern("needle", req.Needle, req.Regex, req.IgnoreCase)
	if err != nil {
		return err
	}
	p.pat, p.find = pat, &finder{pat: pat}
	switch len(pat.lits) {
	case 0:
	case 1:
		p.lit = pat.lits[0]
		p.queries = queriesOf(ix, p.lit)
	default:
		p.queries = queriesOf(ix, pat.lits...)
	}
	return nil
}

// queriesOf returns the index's queries of lits, one of which every match
// holds; nil when there is no index or one of them has no trigram (it
// would make every entry a candidate).
func queriesOf(ix *index.Index, lits ...[]byte) []*index.Query {
	if ix == nil {
		return nil
	}
	qs := make([]*index.Query, len(lits))
	for i, l := range lits {
		if qs[i] = ix.NewQuery(l); !qs[i].Narrows() {
			return nil
		}
	}
	return qs
}

// describeSyntaxError is err without the package's prefix.
func describeSyntaxError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// mayMatch reports whether text holds one of the required literals (true
// when none is required).
func (p *pattern) mayMatch(text []byte) bool {
	if len(p.pre) == 0 {
		return true
	}
	for _, f := range p.pre {
		if f.in(text) {
			return true
		}
	}
	return false
}

// index returns where the first match in text starts, -1 when none.
func (p *pattern) index(text []byte) int {
	if p.fold != nil {
		if s, _, ok := p.fold.next(text, 0); ok {
			return s
		}
	}
	if !p.mayMatch(text) {
		return -1
	}
	if loc := p.re.FindIndex(text); loc != nil {
		return loc[0]
	}
	return -1
}

// all returns the matches in text, leftmost first and not overlapping
// (regexp's FindAllIndex), as [start, end) byte offsets: the first
// maxPatternMatches of them.
func (p *pattern) all(text []byte) [][]int {
	if p.fold != nil {
		if locs, ok := p.foldAll(text); ok {
			return locs
		}
	}
	if !p.mayMatch(text) {
		return nil
	}
	return p.re.FindAllIndex(text, maxPatternMatches)
}

// foldAll is all through p.fold; ok is false when the regex must answer
// (see foldFinder).
func (p *pattern) foldAll(text []byte) ([][]int, bool) {
	var locs [][]int
	for from := 0; len(locs) < maxPatternMatches; {
		s, e, ok := p.fold.next(text, from)
		if !ok {
			return nil, false
		}
		if s < 0 {
			break
		}
		locs = append(locs, []int{s, e})
		from = e
	}
	return locs, true
}

// maxPatternMatches is the most matches of a pattern counted in one text
// (Hit.Matches): an expression that matches the empty text (.*, a*)
// matches at every character of a tool output of megabytes, and each
// match listed costs 40 bytes.
const maxPatternMatches = 1 << 16

// litInfo is what required knows of an expression: exact, when it is
// small, is every text a match can be (nil: unknown or too many); req is
// a set of literals one of which every match contains (nil: none known).
type litInfo struct {
	exact []string
	req   []string
}

// maxClassRunes is the most characters a class may hold for its matches
// to be listed exactly ([aA], a folded k).
const maxClassRunes = 4

// required works out litInfo for re (simplified), in the way of Russ
// Cox's codesearch, kept to sets of whole literals: the candidate
// machinery answers for one literal at a time. A concatenation's exact
// parts (characters of a literal, small classes, small alternations) are
// joined into the longest runs whose product of choices stays within
// maxAlternatives; the best run, or the best requirement of a part that
// is not exact, is its requirement. An alternation requires one of its
// branches' requirements.
func required(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpConcat:
		return concatInfo(re)
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if n > maxClassRunes {
			return litInfo{}
		}
		var ex []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				ex = append(ex, string(r))
			}
		}
		return litInfo{exact: ex, req: ex}
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return litInfo{req: required(re.Sub[0]).req}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return litInfo{req: required(re.Sub[0]).req}
		}
		return litInfo{}
	case syntax.OpQuest:
		sub := required(re.Sub[0])
		if sub.exact != nil && len(sub.exact) < maxAlternatives {
			return litInfo{exact: union(sub.exact, []string{""})}
		}
		return litInfo{}
	case syntax.OpAlternate:
		var exact, req []string
		exactOK, reqOK := true, true
		for _, s := range re.Sub {
			in := required(s)
			if exactOK && in.exact != nil && len(exact)+len(in.exact) <= maxAlternatives {
				exact = union(exact, in.exact)
			} else {
				exactOK = false
			}
			if reqOK && usable(in.req) && len(req)+len(in.req) <= maxAlternatives {
				req = union(req, in.req)
			} else {
				reqOK = false
			}
		}
		out := litInfo{}
		if exactOK {
			out.exact = exact
		}
		if reqOK {
			out.req = req
		}
		return out
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return litInfo{exact: []string{""}}
	}
	// Any character, star, no match.
	return litInfo{}
}

// concatInfo is required for a literal (a concatenation of its
// characters) or a concatenation.
func concatInfo(re *syntax.Regexp) litInfo {
	// factors: the choices of each exact part in order; nil stands for a
	// part that is not exact, which cuts the runs.
	var factors [][]string
	var best []string
	addLiteral := func(l *syntax.Regexp) {
		for _, r := range l.Rune {
			factors = append(factors, foldSet(r, l.Flags&syntax.FoldCase != 0))
		}
	}
	if re.Op == syntax.OpLiteral {
		addLiteral(re)
	} else {
		for _, s := range re.Sub {
			if s.Op == syntax.OpLiteral {
				addLiteral(s)
				continue
			}
			in := required(s)
			if in.exact != nil {
				factors = append(factors, in.exact)
				continue
			}
			factors = append(factors, nil)
			best = better(best, in.req)
		}
	}
	// The longest run from each start whose choices multiply to at most
	// maxAlternatives (n, over factors[i:j]). Both ends only move on, and
	// a run that ends where the last one did, with as many choices, is
	// part of it and not better (with fewer, it may be: one literal
	// before several), so a needle of 4 KB costs a pass, not one per
	// start.
	n, j, lastEnd, lastN := 1, 0, -1, 0
	for i := range factors {
		if j < i {
			n, j = 1, i
		}
		for ; j < len(factors) && factors[j] != nil && n*len(factors[j]) <= maxAlternatives; j++ {
			n *= len(factors[j])
		}
		if j > i && (j > lastEnd || n < lastN) {
			best = better(best, product(factors[i:j]))
			lastEnd, lastN = j, n
		}
		if j > i {
			n /= len(factors[i])
		}
	}
	out := litInfo{req: best}
	n = 1
	for _, f := range factors {
		if f == nil || n*len(f) > maxAlternatives {
			return out
		}
		n *= len(f)
	}
	out.exact = product(factors)
	return out
}

// foldSet is the characters a literal's r matches: itself, and with fold
// every character of its simple folding orbit.
func foldSet(r rune, fold bool) []string {
	out := []string{string(r)}
	if !fold {
		return out
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, string(f))
	}
	return out
}

// product is every concatenation of one choice of each factor, in order
// (at most maxAlternatives of them). Each is built once, choice by
// choice: joining the factors pairwise copied a run of a 4 KB needle's
// characters once per character.
func product(factors [][]string) []string {
	n := 1
	for _, f := range factors {
		n *= len(f)
	}
	out := make([]string, 0, n)
	choice := make([]int, len(factors))
	var b strings.Builder
	for k := range n {
		// k's digits, in the bases of the factors' sizes (the last
		// factor's the lowest), are the choices.
		rest := k
		for i := len(factors) - 1; i >= 0; i-- {
			choice[i] = rest % len(factors[i])
			rest /= len(factors[i])
		}
		b.Reset()
		for i, f := range factors {
			b.WriteString(f[choice[i]])
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// union is a and b without repeats, sorted.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// usable reports whether a requirement rules anything out: it names
// literals, none of them empty.
func usable(req []string) bool {
	if len(req) == 0 || len(req) > maxAlternatives {
		return false
	}
	return !slices.Contains(req, "")
}

// better returns the requirement of a and b that narrows candidates
// more: a single literal of three characters or more first (the trigram
// index answers for it), then sets whose literals all have trigrams (the
// index answers for each), then the longer shortest
// literal, then fewer literals.
func better(a, b []string) []string {
	if !usable(b) {
		if usable(a) {
			return a
		}
		return nil
	}
	if !usable(a) {
		return b
	}
	ka, kb := reqClass(a), reqClass(b)
	if ka != kb {
		if ka > kb {
			return a
		}
		return b
	}
	la, lb := shortest(a), shortest(b)
	if la != lb {
		if la > lb {
			return a
		}
		return b
	}
	if len(b) < len(a) {
		return b
	}
	return a
}

// reqClass ranks a usable requirement (see better).
func reqClass(req []string) int {
	short := shortest(req) < 3
	switch {
	case len(req) == 1 && !short:
		return 2
	case !short:
		return 1
	}
	return 0
}

// shortest is the fewest characters of req's literals.
func shortest(req []string) int {
	n := -1
	for _, s := range req {
		if c := utf8.RuneCountInString(s); n < 0 || c < n {
			n = c
		}
	}
	return n
}

// describe says what the pattern requires, for plans.
func (p *pattern) describe() string {
	switch len(p.lits) {
	case 0:
		return "no literal required"
	case 1:
		return fmt.Sprintf("required literal %q", p.lits[0])
	}
	qs := make([]string, len(p.lits))
	for i, l := range p.lits {
		qs[i] = fmt.Sprintf("%q", l)
	}
	return fmt.Sprintf("one of %d literals (%s)", len(p.lits), strings.Join(qs, " "))
}
