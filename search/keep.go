package search

import "github.com/pi-history/pi-history/store"

// found is the confirmed hits of a search in request order, with what
// each keeps of the text it was confirmed in (nil texts when counting
// only).
type found struct {
	metas []*store.Meta
	texts []hitText
	// rest, when the page filled within a window of all scope, is what
	// of that window a count still has to read (see restOfWindow).
	rest *restOfWindow
}

// restOfWindow is the part of an all-scope search's last window past
// the hit that filled its page: the entries the index proposed there
// (and the filters passed) that were not confirmed, and the window's far
// end (its last seq, or its first when newest first). A count that goes
// on from the page confirms these and starts after end, instead of asking
// the index about the rest of the window again.
type restOfWindow struct {
	ranges []store.SeqRange
	end    uint64
}

// hitText is what a hit keeps of the text it was confirmed in: the parts
// its snippets can reach (see snippetSegments) and how often the needle
// occurs in the whole text. A hit in a large text (tool output of tens
// of KB to megabytes) that copied the whole text, or everything before
// its last match, spent most of a first page's time copying (runs in
// docs/measurements/2026-12-01-hit-parts-and-text-warm-up.md).
type hitText struct {
	segs    []segment
	matches int
}

// segment is a part of a hit's text and where it lies in the whole. Its
// bytes are never written after it is made (hitParts copies them out of
// the reader's text), so snippets' strings share them instead of copying:
// a first page of 50 hits made up to 150 such copies.
type segment struct {
	text  []byte
	runes int // runes of the whole text before this part
	// ms, me: for a pattern's hit, the match this part was kept around,
	// text[ms:me] (see patternParts).
	ms, me int
}

// keep returns what a hit keeps of text, whose first match is at first,
// and nothing when only hits are counted, taking the memory from a (nil:
// memory of its own). It reads only the prepared query, so any goroutine
// may call it, each with an arena of its own.
func (p *prepared) keep(a *arena, text []byte, first int) hitText {
	if p.countOnly {
		return hitText{}
	}
	segs, matches := hitParts(a, text, p.find, first)
	return hitText{segs: segs, matches: matches}
}

// arena hands out the memory hits keep (their parts and the parts'
// bytes, see hitParts) from larger allocations rather than two a hit, a
// visible share of a short needle's first page. What it
// hands out is never handed out again, nor written after the hit's
// parts are copied in, so snippets may share those bytes (see segment).
type arena struct {
	bytes []byte
	segs  []segment
}

// bytesFor returns an empty slice with room for n bytes.
func (a *arena) bytesFor(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	if cap(a.bytes)-len(a.bytes) < n {
		if n > arenaBytes/4 {
			return make([]byte, 0, n) // a large hit keeps memory of its own
		}
		a.bytes = make([]byte, 0, arenaBytes)
	}
	at := len(a.bytes)
	a.bytes = a.bytes[:at+n]
	return a.bytes[at : at : at+n]
}

// segsFor returns n zero segments.
func (a *arena) segsFor(n int) []segment {
	if a == nil {
		return make([]segment, n)
	}
	if cap(a.segs)-len(a.segs) < n {
		// The first few hits take little: most pages in a branch have
		// one to three, and 64 segments are 2.5 KB to clear.
		size := arenaSegs
		if a.segs == nil {
			size = arenaFirstSegs
		}
		a.segs = make([]segment, 0, max(n, size))
	}
	at := len(a.segs)
	a.segs = a.segs[:at+n]
	return a.segs[at : at+n : at+n]
}

const (
	arenaBytes = 16 << 10
	arenaSegs  = 64
	// arenaFirstSegs is the size of an arena's first segments.
	arenaFirstSegs = 8
)
