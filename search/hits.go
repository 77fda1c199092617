package search

import (
	"bytes"
	"encoding/binary"
	pihistory "github.com/pi-history/pi-history"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/pi-history/pi-history/store"
)

// fillHits turns confirmed metas into hits with snippets; it reports whether
// the snippet budget cut any.
//
// What a page's hits hold is allocated for all of them at once: their
// snippets in one slice (each hit's a piece of it; room for 64 hits' at
// first, as a page of thousands runs out of budget long before its end),
// their references in one string. With one of each per hit, a first page
// of 50 made 376 objects; this way 273.
func (e *Engine) fillHits(p *prepared, hits found, budget int, resp *Response, reads map[string]*store.SessionRead) bool {
	truncated := false
	// The least a snippet takes: the needle and a little context (see
	// snippets).
	floor := max(40, utf8.RuneCount(p.find.needle)+10)
	metas := hits.metas
	resp.Hits = slices.Grow(resp.Hits, len(metas))
	snips := make([]Snippet, 0, min(len(metas), 64)*maxSnippets)
	refs := refsOf(metas)
	// The current branch of the last hit's session: a page's hits are
	// mostly of one session or a few in turn.
	var curSession string
	var cur []uint64
	var curErr error
	var read *store.SessionRead
	for i, m := range metas {
		h := Hit{Session: m.Session, Entry: m.ID, Type: m.Type, Role: m.Role, CustomType: m.Extra.CustomType,
			ToolName: m.Extra.ToolName, Timestamp: m.Timestamp, Window: m.Window, Ref: refs[i], Seq: m.Seq, Snippets: []Snippet{}}
		if p.agents != nil {
			h.Agent = p.agents[m.Session]
		}
		if p.req.Scope == ScopeSession || p.req.Scope == ScopeLineage {
			// The search loaded these trees; hits also name their leaves.
			t := p.trees[m.Session]
			if t == nil {
				if tt, err := e.st.Tree(m.Session); err == nil {
					t = tt
					p.trees[m.Session] = t
				}
			}
			if t != nil {
				h.OnCurrentBranch = t.OnCurrentBranch(m.ID)
				h.Leaves = t.LeavesOf(m.ID)
			}
		} else {
			if i == 0 || m.Session != curSession {
				curSession = m.Session
				cur, read, curErr = e.st.CurrentBranchSeqsRead(m.Session)
				if read != nil {
					reads[m.Session] = read
				}
			}
			if curErr == nil {
				_, h.OnCurrentBranch = slices.BinarySearch(cur, m.Seq)
			}
		}
		h.Matches = hits.texts[i].matches
		// An even share of what is left, but at least one snippet's worth
		// while the budget lasts: with more hits than the budget serves,
		// the first hits (the ones asked for first) get snippets, not the
		// last.
		share := min(max(budget/max(len(metas)-i, 1), floor), max(600, floor))
		if budget < floor {
			truncated = true
		} else {
			var used int
			k := len(snips)
			snips, used = snippets(snips, hits.texts[i].segs, p.find, share)
			h.Snippets = snips[k:len(snips):len(snips)]
			budget -= used
			if len(h.Snippets) < min(h.Matches, maxSnippets) {
				truncated = true
			}
		}
		resp.Hits = append(resp.Hits, h)
	}
	return truncated
}

// refsOf returns Ref of each meta's entry, cut from one string.
func refsOf(metas []*store.Meta) []string {
	const pre, post = refOpen, refClose
	n := 0
	for _, m := range metas {
		n += len(pre) + len(m.ID) + len(post)
	}
	var b strings.Builder
	b.Grow(n)
	for _, m := range metas {
		b.WriteString(pre)
		b.WriteString(m.ID)
		b.WriteString(post)
	}
	all := b.String()
	out := make([]string, len(metas))
	at := 0
	for i, m := range metas {
		l := len(pre) + len(m.ID) + len(post)
		out[i], at = all[at:at+l], at+l
	}
	return out
}

// Ref is how the model cites an entry.
func Ref(id string) string { return pihistory.Ref(id) }

// What a reference puts around an entry's id (see Ref).
const refOpen, refClose = pihistory.RefOpen, pihistory.RefClose

const maxSnippets = 3

// snippetSegments returns the parts of text that snippets can reach with
// any budget, in order, apart, each with the runes before it: snippets of
// them equal snippets of the whole text.
func snippetSegments(text, needle []byte) []segment {
	segs, _ := hitParts(nil, text, newFinder(needle), bytes.Index(text, needle))
	return segs
}

// hitParts returns the parts of text that snippets can reach (see
// snippetSegments) and how often f's needle occurs in text, counted as
// bytes.Count does (matches that do not overlap, leftmost first), given
// where it first occurs (-1 for nowhere). One pass over the text does
// both: it used to be read once to find the snippets' matches (to its end
// when it held fewer than three) and once more to count.
//
// The snippets' matches are found as snippets finds them, each search
// starting where the widest context of the last match ends (maxContext
// runes past it), up to maxSnippets matches; around each match m it keeps
// the stretch from maxContext runes before m to maxContext runes past a
// needle past that end. snippets, whose contexts are never wider, finds
// each of its matches at one found here or in a stretch after one that
// this search skipped, so within a kept part, with its context. No match
// starts between two parts (the search found none there), and a match
// that would cross a part's end starts within maxContext runes of it, so
// its part and the next are one. Each part is at most a few hundred runes
// and needles, so a hit in a large text keeps little of it. The parts are
// copied into the arena, since the reader's text is not kept.
//
// The count's matches are where a snippet's search looks first: the
// leftmost match at or after a snippet search's start is the next counted
// match, unless a match the count skipped (one overlapping the counted
// match before) lies between them; only then is it searched for.
func hitParts(a *arena, text []byte, f *finder, first int) ([]segment, int) {
	if f.pat != nil {
		return patternParts(a, text, f.pat)
	}
	type span struct{ a, b int }
	var spans [maxSnippets]span
	nspans, found, matches := 0, 0, 0
	n := len(f.needle)
	from, looking := 0, true // the next snippet's match starts at or after from
	prevEnd := 0             // where the counted match before g ends
	// take keeps the part around a snippet's match m.
	take := func(m int) {
		a := runesBack(text, m, maxContext)
		from = runesOn(text, m+n, maxContext)
		b := runesOn(text, min(len(text), from+n), maxContext)
		if nspans > 0 && a <= spans[nspans-1].b {
			spans[nspans-1].b = b
		} else {
			spans[nspans] = span{a, b}
			nspans++
		}
		found++
		looking = found < maxSnippets && from < len(text)
	}
	for g := first; g >= 0; g = f.next(text, g+n) {
		matches++
		for looking && g >= from {
			m := g
			if prevEnd > from {
				m = f.next(text, from)
			}
			take(m)
			if m == g {
				break
			}
		}
		prevEnd = g + n
	}
	// A match overlapping the last counted one, past where the snippets'
	// search starts.
	if looking && prevEnd > from {
		if m := f.next(text, from); m >= 0 {
			take(m)
		}
	}
	// The parts are copied into one buffer, which nothing writes to
	// again: snippets cut their strings from it without copying (see
	// segment).
	size := 0
	for _, sp := range spans[:nspans] {
		size += sp.b - sp.a
	}
	buf := a.bytesFor(size)
	segs := a.segsFor(nspans)
	runes, at := 0, 0
	for k, sp := range spans[:nspans] {
		runes += runeCount(text[at:sp.a])
		start := len(buf)
		buf = append(buf, text[sp.a:sp.b]...)
		part := buf[start:len(buf):len(buf)]
		segs[k] = segment{text: part, runes: runes}
		runes += runeCount(part)
		at = sp.b
	}
	return segs, matches
}

// runeCount is utf8.RuneCount (an invalid byte counts as one rune), eight
// bytes at a time through ASCII: a hit's snippets say at which character
// they start, and counting the text before them byte by byte was a visible
// share of first pages (`docs/measurements/2026-12-07-figures-from-code-comments.md`).
func runeCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		// 32 bytes a step while they are ASCII, then 8: a large tool
		// result's hit counts up to its last snippet.
		for len(b) >= 32 && (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[8:])|
			binary.LittleEndian.Uint64(b[16:])|binary.LittleEndian.Uint64(b[24:]))&0x8080808080808080 == 0 {
			n += 32
			b = b[32:]
		}
		for len(b) >= 8 && binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			n += 8
			b = b[8:]
		}
		if len(b) == 0 {
			break
		}
		if b[0] < utf8.RuneSelf {
			n++
			b = b[1:]
			continue
		}
		_, sz := utf8.DecodeRune(b)
		n++
		b = b[sz:]
	}
	return n
}

// runesOn returns the byte offset n runes after at in text (or its end).
// A stretch of ASCII, most text, is stepped over at once: a hit keeps and
// shows up to three matches with 80 characters each side, and decoding
// them rune by rune was a large share of first pages of 1-2 character
// needles (`docs/measurements/2026-12-07-figures-from-code-comments.md`).
func runesOn(text []byte, at, n int) int {
	if end := min(len(text), at+n); isASCII(text[at:end]) {
		return end
	}
	for k := 0; k < n && at < len(text); k++ {
		_, sz := utf8.DecodeRune(text[at:])
		at += sz
	}
	return at
}

// runesBack returns the byte offset n runes before at in text (or 0).
func runesBack(text []byte, at, n int) int {
	if start := max(0, at-n); isASCII(text[start:at]) {
		return start
	}
	for k := 0; k < n && at > 0; k++ {
		_, sz := utf8.DecodeLastRune(text[:at])
		at -= sz
	}
	return at
}

// isASCII reports whether b holds only ASCII bytes, 32 and then 8 at a
// time.
func isASCII(b []byte) bool {
	for len(b) >= 32 {
		if (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[8:])|
			binary.LittleEndian.Uint64(b[16:])|binary.LittleEndian.Uint64(b[24:]))&0x8080808080808080 != 0 {
			return false
		}
		b = b[32:]
	}
	var or uint64
	for len(b) >= 8 {
		or |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		or |= uint64(c)
	}
	return or&0x8080808080808080 == 0
}

// maxContext is the most runes a snippet shows on either side of a match.
const maxContext = 80

// snippets appends to out up to three pieces of a text around matches of
// f's needle, within budget characters in all, from the parts of it in
// segs (the whole text as one segment, or what snippetSegments kept of
// it). It returns out and the characters used. (Matches are found by the
// finder: bytes.Index on the parts tries a needle of common bytes at most
// of their positions.)
func snippets(out []Snippet, segs []segment, f *finder, budget int) ([]Snippet, int) {
	if f.pat != nil {
		return patternSnippets(out, segs, budget)
	}
	needle := f.needle
	start := len(out)
	used := 0
	nl := runeCount(needle)
	// The next search starts in segment seg at byte from.
	seg, from := 0, 0
	for len(out)-start < maxSnippets && seg < len(segs) {
		text := segs[seg].text
		i := f.next(text, from)
		if i < 0 {
			seg, from = seg+1, 0
			continue
		}
		room := budget - used
		if room < nl+10 {
			break
		}
		ctxChars := (room/max(maxSnippets-(len(out)-start), 1) - nl) / 2
		ctxChars = max(min(ctxChars, maxContext), 5)
		s := runesBack(text, i, ctxChars)
		end := runesOn(text, i+len(needle), ctxChars)
		piece := text[s:end]
		out = append(out, Snippet{Text: unsafe.String(unsafe.SliceData(piece), len(piece)), MatchStart: i - s, MatchEnd: i - s + len(needle),
			Offset: segs[seg].runes + runeCount(text[:s])})
		used += runeCount(piece)
		from = end
	}
	return out, used
}
