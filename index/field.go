package index

import (
	"math/bits"
	"unicode/utf8"

	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/pi-history/pi-history/trigram"
)

// trigramField is a block's text field with its trigrams worked out before
// the document reaches Bleve, so that the analysis of one batch runs while
// Bleve builds the segment of the one before, and without the per-token
// allocations of Bleve's generic analysis path. It indexes exactly what the
// registered analyzer (AnalyzerName) produces: each distinct trigram once.
type trigramField struct {
	value []byte
	freqs bindex.TokenFrequencies
}

func (f *trigramField) Name() string             { return fieldText }
func (f *trigramField) ArrayPositions() []uint64 { return nil }
func (f *trigramField) Options() bindex.FieldIndexingOptions {
	return bindex.IndexField | bindex.SkipFreqNorm
}
func (f *trigramField) Value() []byte             { return f.value }
func (f *trigramField) NumPlainTextBytes() uint64 { return uint64(len(f.value)) }
func (f *trigramField) EncodedFieldType() byte    { return 't' }
func (f *trigramField) AnalyzedLength() int       { return len(f.freqs) }

func (f *trigramField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.freqs }

// Size estimates the memory the field holds, for Bleve's accounting.
func (f *trigramField) Size() int { return 64 + len(f.value) + 112*len(f.freqs) }

// Analyze works the trigrams out if analyze was not called beforehand.
func (f *trigramField) Analyze() {
	if f.freqs == nil {
		var s trigramSet
		s.analyze(f, nil)
	}
}

// trigramSet finds the distinct trigrams of one text after another,
// reusing its table: an open-addressing set whose slots are valid only
// when stamped with the current text's generation.
type trigramSet struct {
	slots []trigramSlot
	cur   uint32
	mask  uint64
	// shift takes the table's index from the top bits of a key's hash
	shift uint
	// spans of the distinct trigrams of the current text, in first-seen
	// order, and their keys
	spans [][2]int32
	skeys []uint64
	// winnow keeps only the trigrams that windows select (see
	// trigram.Window): the scheme of an index made by AnalyzerName
	winnow bool
}

// trigramSlot is one slot of a trigramSet's table: a key, valid when gen
// is the set's current generation (key and stamp share a cache line).
type trigramSlot struct {
	key uint64
	gen uint32
}

// distinct finds the distinct trigrams of b and returns their spans in
// first-seen order (their keys are in s.skeys). The spans are valid until
// the next call.
//
// The table starts at a quarter of b's length (a block's text has far
// fewer distinct trigrams than bytes) and doubles whenever it is half
// full: sized at twice the length, a large block's table outgrew the
// processor's caches and every probe missed them (27 MB/s over journal
// text).
func (s *trigramSet) distinct(b []byte) [][2]int32 {
	if s.winnow {
		return s.selected(b)
	}
	s.begin(len(b) / 4)
	// trigram.Each, written out: the key rolls (trigram.Roll), and no
	// function is called per trigram.
	var key uint64
	var start [3]int // where the last three runes start
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c == trigram.Sep {
			n = 0
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		key = trigram.Roll(key, r)
		start[0], start[1], start[2] = start[1], start[2], i
		i += size
		if n++; n >= 3 && s.insert(key) {
			s.keep(key, [2]int32{int32(start[0]), int32(i)})
		}
	}
	return s.spans
}

// selected is distinct for the trigrams that windows select: of every
// trigram.Window consecutive trigrams of a run (a stretch of b between
// separators), the one trigram.Winnower.Min picks. It is the same loop as
// distinct, with the last window's trigrams kept in a ring.
func (s *trigramSet) selected(b []byte) [][2]int32 {
	s.begin(len(b) / 8)
	const w = trigram.Window // the selection below is written for 4
	var (
		keys  [w]uint64
		ranks [w]uint64
		spans [w][2]int32
	)
	var key uint64
	var start [3]int
	n := 0             // runes of the current run
	last := ^uint64(0) // the key selected last (no trigram's key)
	for i := 0; i < len(b); {
		c := b[i]
		if c == trigram.Sep {
			n = 0
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		key = trigram.Roll(key, r)
		start[0], start[1], start[2] = start[1], start[2], i
		i += size
		if n++; n < 3 {
			continue
		}
		// The run's (n-2)th trigram goes to slot (n-3) mod w.
		j := (n - 3) % w
		keys[j], ranks[j], spans[j] = key, trigram.Rank(key), [2]int32{int32(start[0]), int32(i)}
		if n < w+2 {
			continue // no full window yet
		}
		// The least of four ranks, in two independent pairs first (the
		// ranks are random, so branches on them would mispredict half the
		// time; these compile to conditional moves). Ranks of distinct
		// keys never tie: trigram.Rank is a bijection.
		a, z := 0, 2
		if ranks[1] < ranks[0] {
			a = 1
		}
		if ranks[3] < ranks[2] {
			z = 3
		}
		if ranks[z] < ranks[a] {
			a = z
		}
		// Consecutive windows mostly select the same trigram.
		if keys[a] == last {
			continue
		}
		last = keys[a]
		if s.insert(last) {
			s.keep(last, spans[a])
		}
	}
	return s.spans
}

// begin empties the set for the next text, its table at least slots
// slots (a power of two).
func (s *trigramSet) begin(slots int) {
	s.reset(max(64, 1<<bits.Len(uint(slots))))
	s.spans = s.spans[:0]
	s.skeys = s.skeys[:0]
}

// keep records key, just inserted, with its span, and doubles the table
// once it is half full.
func (s *trigramSet) keep(key uint64, sp [2]int32) {
	s.spans = append(s.spans, sp)
	s.skeys = append(s.skeys, key)
	if 2*len(s.skeys) > int(s.mask+1) {
		s.grow()
	}
}

// grow doubles the table and inserts the text's keys again.
func (s *trigramSet) grow() {
	s.reset(2 * int(s.mask+1))
	for _, k := range s.skeys {
		s.insert(k)
	}
}

// reset empties the table and makes it n slots (a power of two): the
// first n of its arrays, which grow when needed and are kept for the next
// text. Slots are only cleared when the generation stamp wraps.
func (s *trigramSet) reset(n int) {
	if len(s.slots) < n {
		s.slots = make([]trigramSlot, n)
		s.cur = 0
	}
	s.cur++
	if s.cur == 0 { // wrapped: clear the stamps
		clear(s.slots)
		s.cur = 1
	}
	s.mask = uint64(n - 1)
	s.shift = uint(64 - bits.TrailingZeros(uint(n)))
}

// insert adds key, reporting whether it was new.
func (s *trigramSet) insert(key uint64) bool {
	// The product's top bits: every bit of the key reaches them (its
	// lower bits see only the key's lower bits, which leave out the
	// trigram's first rune).
	i := key * 0x9e3779b97f4a7c15 >> s.shift
	for s.slots[i].gen == s.cur {
		if s.slots[i].key == key {
			return false
		}
		i = (i + 1) & s.mask
	}
	s.slots[i] = trigramSlot{key: key, gen: s.cur}
	return true
}

// analyze fills f.freqs with one entry per distinct trigram of f.value,
// leaving out the trigrams cb says are common (cb may be nil: keep all).
func (s *trigramSet) analyze(f *trigramField, cb *commonBuilder) {
	spans := s.distinct(f.value)
	keep := spans[:0:0]
	termBytes := 0
	if cb != nil {
		cb.blocks()
	}
	for i, sp := range spans {
		if cb != nil && cb.common(s.skeys[i], f.value[sp[0]:sp[1]]) {
			continue
		}
		keep = append(keep, sp)
		termBytes += int(sp[1] - sp[0])
	}
	// One string holds every term, so map keys need no allocation each;
	// the TokenFreqs come from one slice.
	all := make([]byte, 0, termBytes)
	for _, sp := range keep {
		all = append(all, f.value[sp[0]:sp[1]]...)
	}
	str := string(all)
	tfs := make([]bindex.TokenFreq, len(keep))
	freqs := make(bindex.TokenFrequencies, len(keep))
	off := 0
	for i, sp := range keep {
		n := int(sp[1] - sp[0])
		tfs[i].Term = f.value[sp[0]:sp[1]]
		freqs[str[off:off+n]] = &tfs[i]
		off += n
	}
	f.freqs = freqs
}

// commonBuilder decides, block by block, which trigrams are common: those
// already in set, and those whose count of blocks crosses the share.
type commonBuilder struct {
	set   *commonSet
	ct    *counter // nil: only leave out what set holds
	added [][]byte
}

// blocks counts one more block.
func (cb *commonBuilder) blocks() {
	if cb.ct != nil {
		cb.ct.blocks++
	}
}

// common reports whether the trigram t with key k is to be left out,
// counting it otherwise.
func (cb *commonBuilder) common(k uint64, t []byte) bool {
	if cb.ct == nil {
		return cb.set.has(k)
	}
	c := cb.ct.df.slot(k)
	if *c == commonMark {
		return true
	}
	n := *c + 1
	if cb.ct.blocks >= commonAfter && uint64(n)*commonShare > cb.ct.blocks {
		*c = commonMark
		cb.added = append(cb.added, append([]byte(nil), t...))
		return true
	}
	*c = n
	return false
}

// next returns the set with this batch's additions (nil when there were
// none) and starts a new batch.
func (cb *commonBuilder) next() *commonSet {
	if len(cb.added) == 0 {
		return nil
	}
	cb.set = cb.set.with(cb.added)
	cb.added = nil
	return cb.set
}
