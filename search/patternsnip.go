package search

import "unsafe"

// maxShownMatch is the most characters of one match a pattern's snippet
// shows: a regex such as a.*b can match a whole tool output, and its
// snippet shows the match's start (MatchEnd is then where the shown part
// ends).
const maxShownMatch = 200

// patternParts is hitParts for a pattern: the parts of text around the
// matches its snippets show, and how many matches text holds (leftmost
// first, not overlapping, as regexp's FindAllIndex finds them). The
// snippets' matches are the first match and then each first match that
// starts past the widest context of the last (maxContext characters after
// it), up to maxSnippets; each part spans maxContext characters either
// side of its match (of the match's first maxShownMatch characters). The
// parts are copied (see hitParts).
func patternParts(a *arena, text []byte, p *pattern) ([]segment, int) {
	locs := p.all(text)
	type span struct{ s, e, ms, me int }
	var spans [maxSnippets]span
	n, from, size := 0, 0, 0
	for _, l := range locs {
		if n == maxSnippets {
			break
		}
		if l[0] < from {
			continue
		}
		me := min(l[1], runesOn(text, l[0], maxShownMatch))
		sp := span{s: runesBack(text, l[0], maxContext), ms: l[0], me: me}
		sp.e = runesOn(text, me, maxContext)
		spans[n] = sp
		n++
		size += sp.e - sp.s
		from = runesOn(text, l[1], maxContext)
	}
	buf := a.bytesFor(size)
	segs := a.segsFor(n)
	runes, at := 0, 0 // the runes of text before at
	for k, sp := range spans[:n] {
		runes += runeCount(text[at:sp.s])
		at = sp.s
		start := len(buf)
		buf = append(buf, text[sp.s:sp.e]...)
		part := buf[start:len(buf):len(buf)]
		segs[k] = segment{text: part, runes: runes, ms: sp.ms - sp.s, me: sp.me - sp.s}
	}
	return segs, len(locs)
}

// patternSnippets is snippets for the parts patternParts kept: one snippet
// a part, around its match, within budget characters in all (the context
// shrinking as snippets does when the budget is short). It returns out
// and the characters used.
func patternSnippets(out []Snippet, segs []segment, budget int) ([]Snippet, int) {
	used := 0
	for k, sg := range segs {
		if k == maxSnippets {
			break
		}
		text := sg.text
		nl := runeCount(text[sg.ms:sg.me])
		room := budget - used
		if room < nl+10 {
			break
		}
		ctxChars := (room/max(maxSnippets-k, 1) - nl) / 2
		ctxChars = max(min(ctxChars, maxContext), 5)
		s := runesBack(text, sg.ms, ctxChars)
		end := runesOn(text, sg.me, ctxChars)
		piece := text[s:end]
		out = append(out, Snippet{Text: unsafe.String(unsafe.SliceData(piece), len(piece)), MatchStart: sg.ms - s,
			MatchEnd: sg.me - s, Offset: sg.runes + runeCount(text[:s])})
		used += runeCount(piece)
	}
	return out, used
}
