package search

import "github.com/pi-history/pi-history/store"

// seenTexts remembers what one goroutine of a search found in the texts
// stored once that it read (see store.TextRef). Such a text is held by
// many entries (an agent reads the same file and runs the same command
// again and again), and is then read and searched once for all of them on
// the goroutine's part of the search. At most seenMax are remembered.
type seenTexts map[store.TextRef]seenText

// seenText is what a search found in one text stored once.
type seenText struct {
	size  int
	isHit bool
	hit   hitText // what a hit keeps of it; shared by every hit on the text (never written after it is made)
}

const seenMax = 1 << 16

// sharedText returns what the text ref names holds for the search: from
// seen, or read with read, searched and remembered, with what a hit keeps
// taken from ar. read says whether it was read now.
func (p *prepared) sharedText(seen seenTexts, ref *store.TextRef, read func(*store.TextRef) ([]byte, error), ar *arena) (st seenText, wasRead bool, err error) {
	if st, ok := seen[*ref]; ok {
		return st, false, nil
	}
	text, err := read(ref)
	if err != nil {
		return seenText{}, false, err
	}
	st.size = len(text)
	if at := p.find.index(text); at >= 0 {
		st.isHit, st.hit = true, p.keep(ar, text, at)
	}
	if len(seen) < seenMax {
		seen[*ref] = st
	}
	return st, true, nil
}
