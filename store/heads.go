package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// Heads: the first occurrences of every byte trigram and 4-gram.
//
// For each gram (three or four consecutive bytes) that some searchable
// text holds, the store keeps in memory the seqs of the first headMax
// entries whose text holds it, oldest first. A list that holds fewer is
// every entry with that gram so far. So for a needle of three bytes or
// more, a list of one of its grams holds, among the seqs up to where the
// list is complete (its last seq when it is full, else the newest entry),
// every entry whose text holds the needle: the first page of a search in
// store order is found by confirming those texts alone, in order, instead
// of testing the sketches of every entry before it. The lists of the
// needle's other grams rule out the candidates they are complete for but
// do not hold.
//
// Lists only ever gain seqs: an entry dropped since it was listed, or
// rewritten without the gram, stays listed and is ruled out when its text
// is read, as a sketch's false positive is. An entry rewritten under its
// seq with a new gram is put in that gram's list in order (the last seq of
// a full list then drops out, which keeps it complete up to its new last
// seq).
//
// The lists are built from the stored texts by WarmHeads (a server does it
// once, in its warm-up) and kept up to date by every write from then on.
// Until it has run, Heads reports that it has none, and search tests the
// sketches as before.

// headMax is the most seqs a gram's list holds. Over the benchmark's
// million entries, 256 a list take 22.4 million seqs for 263,206 distinct
// trigrams (51,649 lists full) and 73.8 million for 1,152,985 distinct
// 4-grams (124,589 full). In-process, alternating, first pages of 3-5
// characters against the sketches alone, in a first version with trigram
// lists alone that listed every candidate before reading any: median ratio
// 0.81 at 256, 0.88 at 64, and 1.16 at 1,024, whose long lists cost more
// to walk than they saved. 4-gram lists of 256 hold the first page of 135
// of the benchmark's 200 needles of 6-12 characters, of 128 113, of 64 75.
var headMax = 256

// SetHeadMaxForTest sets the most seqs a gram's list holds, for the
// stores WarmHeads builds from then on (a test's few hundred entries fill
// lists of a few), and returns what puts it back.
func SetHeadMaxForTest(n int) (restore func()) {
	old := headMax
	headMax = n
	return func() { headMax = old }
}

// afterHeadsScan, when set, runs in WarmHeads between its read of the
// stored texts and its listing of what writers put meanwhile (a test
// writes there).
var afterHeadsScan func()

// headList is one gram's list: n seqs, ascending, each the uvarint of
// its distance from the one before (the first from 0), and the last seq.
// A reader may hold b[:len(b)] while a writer appends past it; a list is
// changed anywhere else only in a copy (see heads.insert).
type headList struct {
	b    []byte
	n    uint16
	last uint64
}

// heads is the store's first occurrences (see the comment above).
type heads struct {
	mu sync.RWMutex
	// state is headsNone until WarmHeads starts, headsBuilding while it
	// reads the stored texts (writers then note their seqs in pending for
	// it), headsReady once every list is complete.
	state   int
	pending []uint64
	tri     grams // every byte trigram's list
	four    grams // every run of four bytes' (every 4-gram's)
	// full has bit k set when trigram k's list holds headMax seqs: a new
	// entry's trigrams with full lists are passed over on one bit each.
	full  []uint64
	limit int    // the most seqs a list holds (headMax when built)
	max   uint64 // the highest seq listed
	seqs  int    // seqs listed, all lists
	bytes int    // encoded bytes, all lists
}

const (
	headsNone = iota
	headsBuilding
	headsReady
)

// HeadStats says what WarmHeads built.
type HeadStats struct {
	Trigrams  int // distinct byte trigrams listed
	FourGrams int // distinct runs of four bytes listed
	Full      int // lists that hold headMax seqs, of both
	Seqs      int // seqs listed, all lists
	Bytes     int // memory the lists take (their seqs, their table and the full lists' bitmap)
	Texts     int // texts read
	// OverBound: the lists would have passed Options.HeadsBytes, so none
	// were kept and searches go without them.
	OverBound bool
}

// size is the memory the lists take: their seqs, their tables and the
// full lists' bitmap. Under h.mu.
func (h *heads) size() int {
	return h.bytes + 40*(len(h.tri.lists)+len(h.four.lists)) + 8*(len(h.tri.slots)+len(h.four.slots)+len(h.full))
}

// grams is the lists of one kind of gram, found through an open-addressed
// table of their grams: a build looks one up for every byte of the
// history, and a Go map took most of its time (4-grams included, 49-58 s
// at a million entries).
type grams struct {
	slots []gramSlot // a power of two of them, at most half in use
	shift uint       // 32 - log2(len(slots))
	lists []headList
}

// gramSlot is a gram and its list: lists[at-1] (at 0: the slot is free),
// or lists[-at-1] once that list is full.
type gramSlot struct {
	key uint32
	at  int32
}

// list returns the index of gram k's list in lists, and whether the list
// is full; a gram without one gets an empty list.
func (g *grams) list(k uint32) (int, bool) {
	if 2*(len(g.lists)+1) > len(g.slots) {
		g.grow()
	}
	s := g.slot(k)
	if s.at == 0 {
		g.lists = append(g.lists, headList{})
		*s = gramSlot{key: k, at: int32(len(g.lists))}
	}
	if s.at < 0 {
		return int(-s.at - 1), true
	}
	return int(s.at - 1), false
}

// markFull marks gram k's list full, so that list passes it over at once.
func (g *grams) markFull(k uint32) {
	if s := g.slot(k); s.at > 0 {
		s.at = -s.at
	}
}

// find returns gram k's list, nil when no text holds k.
func (g *grams) find(k uint32) *headList {
	if len(g.slots) == 0 {
		return nil
	}
	switch s := g.slot(k); {
	case s.at > 0:
		return &g.lists[s.at-1]
	case s.at < 0:
		return &g.lists[-s.at-1]
	}
	return nil
}

// slot returns the slot of k, or the free slot where it would go.
func (g *grams) slot(k uint32) *gramSlot {
	mask := uint32(len(g.slots) - 1)
	for i := (k * 0x9E3779B1) >> g.shift; ; i = (i + 1) & mask {
		if s := &g.slots[i]; s.at == 0 || s.key == k {
			return s
		}
	}
}

// grow doubles the table (from 2^16 slots), putting every gram in again.
func (g *grams) grow() {
	old := g.slots
	n := max(2*len(old), 1<<16)
	g.slots, g.shift = make([]gramSlot, n), uint(32-bits.Len(uint(n-1)))
	for _, s := range old {
		if s.at != 0 {
			*g.slot(s.key) = s
		}
	}
}

// push appends seq, above every seq l holds, unless l holds it already
// or is full (holds limit seqs). A list that fills gives up its spare
// room. It reports what l's room grew by and whether l is full now.
func (l *headList) push(seq uint64, limit int) (grew int, full bool) {
	if int(l.n) == limit || l.n > 0 && l.last == seq {
		return 0, int(l.n) == limit
	}
	n := cap(l.b)
	l.b = binary.AppendUvarint(l.b, seq-l.last)
	l.last = seq
	l.n++
	if int(l.n) == limit {
		l.b = slices.Clone(l.b)
	}
	return cap(l.b) - n, int(l.n) == limit
}

// add lists seq under each byte trigram and 4-gram of text (under h.mu).
// A seq above every one listed is appended to the lists that are not
// full; any other is put in order (see insert).
func (h *heads) add(seq uint64, text []byte) {
	if len(text) < 3 {
		return
	}
	if seq < h.max {
		h.addInOrder(seq, text)
		return
	}
	h.max = seq
	k := uint32(text[0])<<8 | uint32(text[1])
	k4 := k
	for j, c := range text[2:] {
		k4 = k4<<8 | uint32(c)
		k = (k<<8 | uint32(c)) & 0xFFFFFF
		if j > 0 {
			if i, full := h.four.list(k4); !full && h.push(&h.four.lists[i], seq) {
				h.four.markFull(k4)
			}
		}
		if h.full[k/64]&(1<<(k%64)) != 0 {
			continue
		}
		if i, _ := h.tri.list(k); h.push(&h.tri.lists[i], seq) {
			h.full[k/64] |= 1 << (k % 64)
		}
	}
}

// push appends seq to l (see headList.push), counting what it takes, and
// reports whether l is full.
func (h *heads) push(l *headList, seq uint64) bool {
	n := l.n
	grew, full := l.push(seq, h.limit)
	h.bytes += grew
	h.seqs += int(l.n - n)
	return full
}

// addInOrder lists seq, below the highest seq listed, under each byte
// trigram and 4-gram of text, each once.
func (h *heads) addInOrder(seq uint64, text []byte) {
	seen, seen4 := map[uint32]bool{}, map[uint32]bool{}
	k := uint32(text[0])<<8 | uint32(text[1])
	k4 := k
	for j, c := range text[2:] {
		k4 = k4<<8 | uint32(c)
		k = (k<<8 | uint32(c)) & 0xFFFFFF
		if j > 0 && !seen4[k4] {
			seen4[k4] = true
			if i, _ := h.four.list(k4); h.insert(&h.four.lists[i], seq) {
				h.four.markFull(k4)
			}
		}
		if !seen[k] {
			seen[k] = true
			if i, _ := h.tri.list(k); h.insert(&h.tri.lists[i], seq) {
				h.full[k/64] |= 1 << (k % 64)
			}
		}
	}
}

// insert puts seq in l in order, unless it is there or l is full and seq
// is past its last: in a copy, since readers may hold the old bytes. A
// full list gives up its last seq for it. It reports whether l is full.
func (h *heads) insert(l *headList, seq uint64) bool {
	if int(l.n) == h.limit && seq > l.last {
		return true
	}
	seqs := l.decode(nil)
	at, found := slices.BinarySearch(seqs, seq)
	if found {
		return int(l.n) == h.limit
	}
	seqs = slices.Insert(seqs, at, seq)
	if len(seqs) > h.limit {
		seqs = seqs[:h.limit]
	}
	var b []byte
	prev := uint64(0)
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s-prev)
		prev = s
	}
	h.bytes += cap(b) - cap(l.b)
	h.seqs += len(seqs) - int(l.n)
	*l = headList{b: b, n: uint16(len(seqs)), last: prev}
	return int(l.n) == h.limit
}

// decode appends the seqs of l to out.
func (l *headList) decode(out []uint64) []uint64 {
	prev := uint64(0)
	b := l.b
	for range l.n {
		d, n := binary.Uvarint(b)
		prev += d
		out = append(out, prev)
		b = b[n:]
	}
	return out
}

// noteWrite is what a writer does for an entry it puts (under wmu): list
// it once the lists are ready, note it for WarmHeads while they are being
// built, nothing before.
func (h *heads) noteWrite(seq uint64, text []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state {
	case headsBuilding:
		h.pending = append(h.pending, seq)
	case headsReady:
		h.add(seq, text)
	}
}

// WarmHeads builds the first occurrences of every byte trigram and 4-gram
// from the stored texts (see Heads), once; a server calls it in its warm-up. Writes
// go on meanwhile: the entries they put are listed at the end, with
// writers held back for that long only. It stops when ctx ends (the lists
// then stay unused).
func (s *Store) WarmHeads(ctx context.Context) (HeadStats, error) {
	h := &s.heads
	s.wmu.Lock()
	h.mu.Lock()
	if h.state != headsNone {
		h.mu.Unlock()
		s.wmu.Unlock()
		return HeadStats{}, nil
	}
	h.state = headsBuilding
	h.limit = headMax
	h.tri, h.four = grams{}, grams{}
	h.full = make([]uint64, 1<<24/64)
	h.mu.Unlock()
	through := s.nextSeq - 1
	s.wmu.Unlock()

	var hs HeadStats
	fail := func(err error) (HeadStats, error) {
		h.mu.Lock()
		h.state, h.pending, h.tri, h.four, h.full, h.max, h.seqs, h.bytes = headsNone, nil, grams{}, grams{}, nil, 0, 0, 0
		h.limit = 0
		h.mu.Unlock()
		return hs, err
	}
	var err error
	if through > 0 {
		err = s.ScanTexts(1, through, false, func(seq uint64, text []byte) bool {
			if hs.Texts%1024 == 0 {
				if ctx.Err() != nil {
					return false
				}
				h.mu.RLock()
				hs.OverBound = s.headsBytes > 0 && int64(h.size()) > s.headsBytes
				h.mu.RUnlock()
				if hs.OverBound {
					return false
				}
			}
			hs.Texts++
			h.mu.Lock()
			h.add(seq, text)
			h.mu.Unlock()
			return true
		})
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && hs.OverBound {
		return fail(nil)
	}
	if err != nil {
		return fail(fmt.Errorf("store: list the first occurrences of byte grams through seq %d: %w", through, err))
	}

	if afterHeadsScan != nil {
		afterHeadsScan()
	}
	// What writers put meanwhile, with writers held back.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	h.mu.Lock()
	pending := h.pending
	h.pending = nil
	h.mu.Unlock()
	slices.Sort(pending)
	pending = slices.Compact(pending)
	texts := make([][]byte, len(pending))
	for i, seq := range pending {
		if _, err := s.TextBytes(seq, func(b []byte) { texts[i] = slices.Clone(b) }); err != nil {
			return fail(fmt.Errorf("store: list the first occurrences of byte grams in the text of seq %d: %w", seq, err))
		}
	}
	h.mu.Lock()
	for i, seq := range pending {
		if texts[i] != nil {
			hs.Texts++
			h.add(seq, texts[i])
		}
	}
	// The lists with room left give back what appending kept spare
	// (four in five of the lists of a million entries have room left).
	for _, ls := range [][]headList{h.tri.lists, h.four.lists} {
		for i := range ls {
			if l := &ls[i]; cap(l.b) > len(l.b) {
				n := cap(l.b)
				l.b = slices.Clone(l.b)
				h.bytes += cap(l.b) - n
			}
		}
	}
	h.state = headsReady
	hs.Trigrams, hs.FourGrams, hs.Seqs = len(h.tri.lists), len(h.four.lists), h.seqs
	for _, w := range h.full {
		hs.Full += bits.OnesCount64(w)
	}
	for i := range h.four.lists {
		if int(h.four.lists[i].n) == h.limit {
			hs.Full++
		}
	}
	hs.Bytes = h.size()
	h.mu.Unlock()
	return hs, nil
}

// HeadWalk yields, oldest first, the seqs of a needle's candidates that
// its grams' first occurrences hold (see Store.Heads).
type HeadWalk struct {
	lists []headCursor // the one that proposes first, then those that rule out
	after uint64
	bound uint64
	done  bool
}

// headCursor reads one list: the seq it stands at (cur, 0 before the
// first) and what is left of it. Seqs above limit are past where the list
// is complete: it rules nothing out there.
type headCursor struct {
	b     []byte
	left  int
	cur   uint64
	limit uint64
}

// next steps c on; false when the list is read.
func (c *headCursor) next() bool {
	if c.left == 0 {
		return false
	}
	d, n := binary.Uvarint(c.b)
	c.b = c.b[n:]
	c.cur += d
	c.left--
	return true
}

// Bound is the last seq the walk answers for: every entry from after+1 to
// Bound whose text holds the needle is among the seqs it yields.
func (w *HeadWalk) Bound() uint64 { return w.bound }

// Next appends to out up to max more candidates (each a range of one seq,
// or of several in a row), ascending, and returns it; it returns out as
// it was once there are no more.
func (w *HeadWalk) Next(out []SeqRange, max int) []SeqRange {
	if w.done || len(w.lists) == 0 {
		w.done = true
		return out
	}
	lead := &w.lists[0]
	rest := w.lists[1:]
	for n := 0; n < max; {
		if !lead.next() || lead.cur > w.bound {
			w.done = true
			return out
		}
		seq := lead.cur
		if seq <= w.after || !holdAll(rest, seq) {
			continue
		}
		if k := len(out); k > 0 && out[k-1].Hi == seq-1 {
			out[k-1].Hi = seq
		} else {
			out = append(out, SeqRange{Lo: seq, Hi: seq})
		}
		n++
	}
	return out
}

// holdAll reports whether each list that is complete at seq holds it,
// stepping each on to seq.
func holdAll(lists []headCursor, seq uint64) bool {
	for i := range lists {
		c := &lists[i]
		if seq > c.limit {
			continue
		}
		for c.cur < seq {
			if !c.next() {
				return false // read to its end: nothing past it is listed
			}
		}
		if c.cur != seq {
			return false
		}
	}
	return true
}

// Heads returns the walk over the candidates after seq after, up to last
// (the newest seq the search covers), that the first occurrences of the
// needle's grams hold, and false when there are none to walk: the lists
// are not built yet (see WarmHeads), or the needle is shorter than three
// bytes. The grams are the needle's runs of four bytes, or its one trigram
// when it has three: a 4-gram's list is complete at least as far as the
// lists of both its trigrams (it occurs in fewer texts) and holds fewer
// seqs up to there. Of those lists, the one complete the furthest proposes
// the candidates (a list with room left is complete through last; the
// shortest such), and up to headFilters others rule out those they are
// complete for and do not hold. A gram listed nowhere gives a walk with
// nothing to yield through last.
func (s *Store) Heads(needle []byte, after, last uint64) (*HeadWalk, bool) {
	if len(needle) < 3 {
		return nil, false
	}
	h := &s.heads
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.state != headsReady {
		return nil, false
	}
	w := &HeadWalk{after: after, bound: last}
	lead := -1
	// take adds the list of a gram.
	take := func(l *headList) {
		limit := ^uint64(0)
		if int(l.n) == h.limit {
			limit = l.last
		}
		w.lists = append(w.lists, headCursor{b: l.b[:len(l.b):len(l.b)], left: int(l.n), limit: limit})
		if cur := len(w.lists) - 1; lead < 0 || better(&w.lists[cur], &w.lists[lead]) {
			lead = cur
		}
	}
	// A gram no text holds: nothing holds the needle (w yields nothing).
	none := func() (*HeadWalk, bool) { *w = HeadWalk{done: true, bound: last}; return w, true }
	if len(needle) == 3 {
		l := h.tri.find(uint32(needle[0])<<16 | uint32(needle[1])<<8 | uint32(needle[2]))
		if l == nil {
			return none()
		}
		take(l)
	} else {
		k := uint32(needle[0])<<16 | uint32(needle[1])<<8 | uint32(needle[2])
		for _, c := range needle[3:] {
			k = k<<8 | uint32(c)
			l := h.four.find(k)
			if l == nil {
				return none()
			}
			take(l)
		}
	}
	w.lists[0], w.lists[lead] = w.lists[lead], w.lists[0]
	if rest := w.lists[1:]; len(rest) > headFilters {
		slices.SortFunc(rest, func(a, b headCursor) int { return cmp.Compare(b.limit, a.limit) })
		w.lists = w.lists[:1+headFilters]
	}
	w.bound = min(last, w.lists[0].limit)
	return w, true
}

// headFilters is the most lists besides the one that proposes that rule
// out a walk's candidates: those complete the furthest. A long needle's
// candidates are tested on their sketches anyway, and stepping a dozen
// lists on for each cost more than it ruled out (in-process, alternating,
// against the sketches alone: 6-12 characters 0.947 with three, 0.976 with
// every list; 3-5 and 13-40 characters within 1.5%).
const headFilters = 3

// better reports whether list a should propose the candidates rather than
// b: it is complete further, or as far with fewer seqs.
func better(a, b *headCursor) bool {
	if a.limit != b.limit {
		return a.limit > b.limit
	}
	return a.left < b.left
}
