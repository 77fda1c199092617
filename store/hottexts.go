package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
)

// chunkTexts is the searchable texts of a cached chunk's entries 0 to n-1,
// held in memory (see WarmHotTexts): the text of entry i is
// data[off[i]:off[i+1]] when has marks it. A first page in chronological
// order (the default) reads the texts of the oldest entries, one newest
// first (and the Pi extension's searches of the current session) those of
// the newest, and a count or a sparse needle's page candidates anywhere;
// read through a Pebble iterator, even from the block cache, each cost a
// seek or a step and a block lookup: 30% of the CPU of 3-5 character first
// pages, and ~10 µs a candidate in the middle of the history, where a
// seek mostly lands in another table than the last.
//
// Texts are attached like a chunk's filter: under the cache's lock, only
// while the chunk is still cached as the one they were read for, after
// its sketches were loaded. A chunk whose stored entries change is
// dropped with them; an extension (a live writer's appends) keeps them
// for the entries they cover, and the new ones are read from Pebble.
// Nothing writes a chunkTexts once loadTexts has built it: a search may
// keep parts of its texts in its hits instead of copying them (see
// ScanTextRanges, TextReader.Held).
//
// ascii marks the texts whose bytes are all ASCII, worked out once when
// they are read: a hit says at which character each snippet starts, and
// counting the characters of a text before and within its snippets was
// most of the cost of a dense needle's hit (see Held).
type chunkTexts struct {
	off   [sketchChunk + 1]uint32
	has   [sketchChunk / 64]uint64
	ascii [sketchChunk / 64]uint64
	data  []byte
	n     uint64
}

// Held says what a scan knows of a text it hands over (see
// ScanTextRanges, TextReader.Held).
type Held uint8

const (
	// HeldInMemory: the store holds the text in memory and never writes
	// it again, so it, or any part of it, may be kept past the call.
	HeldInMemory Held = 1 << iota
	// HeldASCII: every byte of the text is ASCII, so its characters are
	// its bytes. Known only of texts held in memory.
	HeldASCII
)

// Kept reports whether the text may be kept (HeldInMemory).
func (h Held) Kept() bool { return h&HeldInMemory != 0 }

// ASCII reports whether the text is known to be ASCII alone (HeldASCII).
func (h Held) ASCII() bool { return h&HeldASCII != 0 }

// text returns the text of entry i of the chunk, whether it has one, and
// whether the chunk's texts know: not for i past what they cover.
func (t *chunkTexts) text(i uint64) (text []byte, has, known bool) {
	if i >= t.n {
		return nil, false, false
	}
	if t.has[i/64]&(1<<(i%64)) == 0 {
		return nil, false, true
	}
	return t.data[t.off[i]:t.off[i+1]], true, true
}

// prefetch asks the processor for the first lines of entry i's text, if
// the chunk holds it.
func (t *chunkTexts) prefetch(i uint64) {
	text, has, _ := t.text(i)
	if !has || len(text) == 0 {
		return // (an empty text at the end of data has no byte to point at)
	}
	prefetch(&text[0])
	if len(text) > 64 {
		prefetch(&text[64])
	}
}

// held is what the chunk knows of entry i's text (see Held).
func (t *chunkTexts) held(i uint64) Held {
	if t.ascii[i/64]&(1<<(i%64)) != 0 {
		return HeldInMemory | HeldASCII
	}
	return HeldInMemory
}

// bytes is what the texts add to the sketch cache.
func (t *chunkTexts) bytes() int {
	return len(t.data) + 4*len(t.off) + 8*len(t.has) + 8*len(t.ascii) + 32
}

// IsASCII reports whether b holds only ASCII bytes (what HeldASCII says of
// a held text), 32 and then 8 at a time. Search uses it too, on the
// context around a match in a text the store could not vouch for.
func IsASCII(b []byte) bool {
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

// hotChunks is how many chunks at each end of the history WarmHotTexts
// gives their texts first, within the sketch cache's bound: at a million
// entries of the benchmark's corpus, 31 MB for both ends. A first page of
// a dense needle fills within a chunk or two.
var hotChunks uint64 = 16

// holdInner says whether WarmHotTexts goes on to the chunks between the
// ends, from both ends inward, while the sketch cache stays within
// holdInnerShare of its bound (a variable for tests). The rest of the
// bound is left for what the history grows by. At a million entries the
// texts take ~1.05 GB, against ~900 MB of sketches, records and filters;
// a server's default bound (a sixth of the machine's memory, at least 1
// GiB) holds them all on a machine of 16 GB or more. In-process, both
// ways alternating (every chunk's texts held against the ends' alone),
// median per-needle ratios over the benchmark's needles: exact counts of
// 20 characters 0.67 (sum of medians 0.47: a boilerplate needle reads
// 215,000 texts), first pages of 13-40 characters 0.83, 6-12 characters
// 0.87, 3-5 characters 0.98.
var holdInner = true

// holdInnerShare is the share of the sketch cache's bound, in eighths,
// that the texts of inner chunks may fill it to.
const holdInnerShare = 7

// HotTextStats says what WarmHotTexts brought into memory.
type HotTextStats struct {
	Chunks int   // chunks given their texts
	Bytes  int64 // the texts' bytes
	Full   bool  // stopped early: the sketch cache's bound would have been passed
}

// WarmHotTexts reads into memory the texts of the cached chunks at both
// ends of the history, hotChunks at each (see chunkTexts), within the
// sketch cache's bound, then (see holdInner) those of the chunks between,
// alternately from the oldest end and the newest, until the cache would
// pass holdInnerShare of its bound. A server calls it once in the
// background, after the sketches; it stops when ctx ends.
func (s *Store) WarmHotTexts(ctx context.Context) (HotTextStats, error) {
	var hs HotTextStats
	last := s.LastSeq()
	if last == 0 {
		return hs, nil
	}
	lastChunk := last / sketchChunk
	var chunks []uint64
	for c := uint64(0); c < hotChunks && c <= lastChunk; c++ {
		chunks = append(chunks, c)
	}
	for c := lastChunk; c+hotChunks > lastChunk && c >= hotChunks; c-- {
		chunks = append(chunks, c)
	}
	ends := len(chunks)
	if holdInner && lastChunk >= 2*hotChunks {
		for lo, hi := hotChunks, lastChunk-hotChunks; lo <= hi; lo, hi = lo+1, hi-1 {
			chunks = append(chunks, lo)
			if hi != lo {
				chunks = append(chunks, hi)
			}
		}
	}
	for k, c := range chunks {
		if err := ctx.Err(); err != nil {
			return hs, err
		}
		bound := s.sketches.bound()
		if k >= ends {
			bound = bound / 8 * holdInnerShare
		}
		ch, _ := s.sketches.get(c)
		if ch == nil || ch.texts.Load() != nil {
			continue
		}
		t, err := s.loadTexts(c, ch)
		if err != nil {
			return hs, fmt.Errorf("read the texts of seqs %d-%d: %w", c*sketchChunk, c*sketchChunk+sketchChunk-1, err)
		}
		if t == nil {
			continue
		}
		switch s.sketches.attachTexts(c, ch, t, bound) {
		case attached:
			hs.Chunks++
			hs.Bytes += int64(len(t.data))
		case noRoom:
			hs.Full = true
			return hs, nil
		}
	}
	return hs, nil
}

// loadTexts reads the texts of the entries ch, cached chunk c, knows; nil
// when it knows none.
func (s *Store) loadTexts(c uint64, ch *chunkSketches) (*chunkTexts, error) {
	n := ch.known()
	if n == 0 {
		return nil, nil
	}
	t := &chunkTexts{n: n}
	base := c * sketchChunk
	next := uint64(0) // the next entry whose offset is to be set
	err := s.ScanTexts(base, base+n-1, false, func(seq uint64, text []byte) bool {
		i := seq - base
		for ; next <= i; next++ {
			t.off[next] = uint32(len(t.data))
		}
		t.data = append(t.data, text...)
		t.has[i/64] |= 1 << (i % 64)
		if IsASCII(text) {
			t.ascii[i/64] |= 1 << (i % 64)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for ; next <= sketchChunk; next++ {
		t.off[next] = uint32(len(t.data))
	}
	return t, nil
}

// attachResult is what attachTexts did.
type attachResult int

const (
	attached attachResult = iota
	gone                  // the chunk is no longer cached as ch, or has texts
	noRoom                // the cache's bound would be passed
)

// attachTexts gives ch, the cached chunk c, its texts t, counting them in
// the cache's size, unless that would pass bound (at most the cache's).
func (c *sketchCache) attachTexts(chunk uint64, ch *chunkSketches, t *chunkTexts, bound int) attachResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.chunks[chunk] != ch || ch.texts.Load() != nil {
		return gone
	}
	if c.bytes+t.bytes() > min(bound, c.max) {
		return noRoom
	}
	ch.texts.Store(t)
	c.bytes += t.bytes()
	c.textsHeld.Store(true)
	return attached
}

// bound is the cache's bound.
func (c *sketchCache) bound() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// TextsHeld reports whether the texts of every entry of ranges are held
// in memory (see chunkTexts), so that reading them costs no Pebble read.
func (s *Store) TextsHeld(ranges []SeqRange) bool {
	if !s.sketches.textsHeld.Load() {
		return false
	}
	h := heldLookup{c: s.sketches}
	for _, r := range ranges {
		if r.Lo > r.Hi {
			continue
		}
		for c := r.Lo / sketchChunk; c <= r.Hi/sketchChunk; c++ {
			t := h.of(c)
			if t == nil || min(r.Hi, c*sketchChunk+sketchChunk-1)-c*sketchChunk >= t.n {
				return false
			}
		}
	}
	return true
}

// textsOf returns the in-memory texts of chunk c, nil when it has none.
func (c *sketchCache) textsOf(chunk uint64) *chunkTexts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.chunks[chunk]; ch != nil {
		return ch.texts.Load()
	}
	return nil
}

// scanHeldTextRanges is ScanTextRanges when some chunks hold their texts
// in memory: the parts of ranges those cover are read from there, the
// rest through Pebble (the pieces between two held parts with one
// iterator).
func (s *Store) scanHeldTextRanges(ranges []SeqRange, reverse bool, fn func(seq uint64, text []byte, held Held) bool) error {
	var pending []SeqRange // stored pieces not yet read, in visit order
	stopped := false
	flush := func() error {
		if len(pending) == 0 || stopped {
			return nil
		}
		if reverse {
			slices.Reverse(pending)
		}
		err := s.scanStoredTextRanges(pending, reverse, func(seq uint64, text []byte) bool {
			if !fn(seq, text, 0) {
				stopped = true
			}
			return !stopped
		})
		pending = pending[:0]
		return err
	}
	held := heldLookup{c: s.sketches}
	// ahead looks up the texts asked for before they are read (see
	// textsAhead); k counts the ranges visited.
	ahead, k := heldLookup{c: s.sketches}, 0
	prefetching := len(ranges) >= textsAheadMin
	err := inVisitOrder(ranges, reverse, func(r SeqRange) (bool, error) {
		if prefetching {
			if j := k + textsAhead; j < len(ranges) {
				seq := ranges[j].Lo
				if reverse {
					seq = ranges[len(ranges)-1-j].Hi
				}
				if t := ahead.of(seq / sketchChunk); t != nil {
					t.prefetch(seq % sketchChunk)
				}
			}
			k++
		}
		// The range's pieces within one chunk each, in visit order.
		for lo, hi := r.Lo, r.Hi; lo <= hi; {
			piece := SeqRange{Lo: lo, Hi: min(hi, lo/sketchChunk*sketchChunk+sketchChunk-1)}
			if reverse {
				piece = SeqRange{Lo: max(lo, hi/sketchChunk*sketchChunk), Hi: hi}
			}
			c := piece.Lo / sketchChunk
			if t := held.of(c); t == nil || piece.Hi%sketchChunk >= t.n {
				pending = appendPiece(pending, piece, reverse)
			} else {
				if err := flush(); err != nil || stopped {
					return false, err
				}
				if !t.each(piece.Lo%sketchChunk, piece.Hi%sketchChunk, c*sketchChunk, reverse, fn) {
					stopped = true
					return false, nil
				}
			}
			if piece.Lo == lo && piece.Hi == hi {
				break
			}
			if reverse {
				hi = piece.Lo - 1
			} else {
				lo = piece.Hi + 1
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// textsAhead is how many ranges ahead of the one being read
// scanHeldTextRanges asks for the first two lines of a held text, when it
// has at least textsAheadMin ranges to read: the candidates of a count or
// of a dense needle, spread through the history, each text a miss to
// memory that the finder then waited on. In-process, on and off in turn
// for each needle: counts of two needles found in a fifth of the history,
// median ratio 0.705; ten counts of 10,000-200,000 hits, sum of medians
// 0.82; the benchmark's 20-character counts 0.91 (sum 0.78); first pages
// of 3-40 characters 0.995-1.013 (few have 64 ranges). 4 ranges ahead or
// 16 did no better than 8, nor a third line.
const (
	textsAhead    = 8
	textsAheadMin = 64
)

// appendPiece appends piece to pieces in visit order, joined to the last
// one when they touch: a range through chunks without texts in memory is
// read as one range, as it would be without any.
func appendPiece(pieces []SeqRange, piece SeqRange, reverse bool) []SeqRange {
	if n := len(pieces); n > 0 {
		if last := &pieces[n-1]; !reverse && last.Hi+1 == piece.Lo {
			last.Hi = piece.Hi
			return pieces
		} else if reverse && piece.Hi+1 == last.Lo {
			last.Lo = piece.Lo
			return pieces
		}
	}
	return append(pieces, piece)
}

// heldLookup finds chunks' in-memory texts, taking the cache's lock only
// when the chunk asked for changes.
type heldLookup struct {
	c     *sketchCache
	chunk uint64
	t     *chunkTexts
	set   bool
}

// of returns chunk's texts held in memory, nil when it has none (and,
// without a lookup, when no chunk was ever given its texts).
func (h *heldLookup) of(chunk uint64) *chunkTexts {
	if !h.c.textsHeld.Load() {
		return nil
	}
	if !h.set || chunk != h.chunk {
		h.chunk, h.t, h.set = chunk, h.c.textsOf(chunk), true
	}
	return h.t
}

// each calls fn with the texts of entries a to b (indices in the chunk,
// within what t covers; seqs from base), in order or newest first, and
// reports false once fn did. The texts are held: t is never written once
// it is attached (see loadTexts), so fn may keep them.
func (t *chunkTexts) each(a, b, base uint64, reverse bool, fn func(seq uint64, text []byte, held Held) bool) bool {
	for k := a; k <= b; k++ {
		i := k
		if reverse {
			i = b - (k - a)
		}
		if text, has, _ := t.text(i); has && !fn(base+i, text, t.held(i)) {
			return false
		}
	}
	return true
}
