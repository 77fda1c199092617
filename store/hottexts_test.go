package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"
)

// storedText is the text of seq as Pebble holds it, and whether it has one.
func storedText(t *testing.T, st *Store, seq uint64) ([]byte, bool) {
	t.Helper()
	v, err := st.get(seqKey(tagText, seq))
	if errors.Is(err, ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

// readsLikeTheStore checks that ScanTextRanges and a TextReader give,
// over rounds of random ranges in both orders and random point reads,
// exactly the texts Pebble holds; that they call a text held only when
// its chunk holds it in memory (a scan reads a piece that runs past what
// its chunk's texts cover through Pebble: those are not); that a point
// read calls a text held exactly then; that a held text is called ASCII
// exactly when all its bytes are; and that a held text, kept past the read,
// still holds what the store does once every read is over. It returns how
// many held texts the scans gave.
func readsLikeTheStore(t *testing.T, st *Store, r *rand.Rand, last uint64, rounds int) int {
	t.Helper()
	isHeld := func(seq uint64) bool {
		tt := st.sketches.textsOf(seq / sketchChunk)
		return tt != nil && seq%sketchChunk < tt.n
	}
	type keptText struct {
		seq  uint64
		text []byte
	}
	var kept []keptText // held texts, not copied
	// ascii fails t when what a read says of a text's bytes is wrong.
	var kinds [2]int // held texts seen not ASCII and ASCII
	ascii := func(how string, seq uint64, text []byte, held Held) {
		t.Helper()
		if held.Kept() {
			kinds[b2i(held.ASCII())]++
		}
		want := held.Kept() && !bytes.ContainsFunc(text, func(r rune) bool { return r >= utf8.RuneSelf })
		if held.ASCII() != want {
			t.Fatalf("%s called seq %d's text %q ASCII: %v, want %v (held %v)", how, seq, text, held.ASCII(), want, held.Kept())
		}
	}
	// What Pebble holds, read once (ScanTexts reads Pebble alone).
	stored := map[uint64][]byte{}
	if err := st.ScanTexts(0, last+30, false, func(seq uint64, text []byte) bool {
		stored[seq] = bytes.Clone(text)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if seq := last / 2; !bytes.Equal(stored[seq], func() []byte { v, _ := storedText(t, st, seq); return v }()) {
		t.Fatalf("ScanTexts and a point read disagree on seq %d", seq)
	}
	for round := range rounds {
		var ranges []SeqRange
		for lo := uint64(1 + r.IntN(50)); lo <= last+20; {
			hi, gap := lo+uint64(r.IntN(1500)), 2+uint64(r.IntN(700))
			switch round % 3 {
			case 0:
				hi = lo + uint64(r.IntN(4))
			case 1:
				// Many short ranges, as sketches leave of a dense
				// needle: the texts ahead are asked for (textsAhead).
				hi, gap = lo+uint64(r.IntN(2)), 2+uint64(r.IntN(20))
			}
			ranges = append(ranges, SeqRange{Lo: lo, Hi: hi})
			lo = hi + gap
		}
		if round%3 == 1 && len(ranges) < textsAheadMin {
			t.Fatalf("round %d has %d ranges, fewer than the %d from which texts are asked for ahead", round, len(ranges), textsAheadMin)
		}
		for _, reverse := range []bool{false, true} {
			var want, got bytes.Buffer
			for k := range ranges {
				rg := ranges[k]
				if reverse {
					rg = ranges[len(ranges)-1-k]
				}
				for j := rg.Lo; j <= rg.Hi; j++ {
					seq := j
					if reverse {
						seq = rg.Hi - (j - rg.Lo)
					}
					if text, ok := stored[seq]; ok {
						fmt.Fprintf(&want, "%d=%s\n", seq, text)
					}
				}
			}
			var wrong []uint64
			if err := st.ScanTextRanges(ranges, reverse, func(seq uint64, text []byte, held Held) bool {
				fmt.Fprintf(&got, "%d=%s\n", seq, text)
				if held.Kept() && !isHeld(seq) {
					wrong = append(wrong, seq)
				}
				ascii("ScanTextRanges", seq, text, held)
				if held.Kept() {
					kept = append(kept, keptText{seq, text})
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if len(wrong) > 0 {
				t.Fatalf("ScanTextRanges(%v, reverse %v) called the texts of seqs %v held, which their chunks do not hold", ranges, reverse, wrong[:min(len(wrong), 5)])
			}
			if got.String() != want.String() {
				t.Fatalf("ScanTextRanges(%v, reverse %v) differs from the store's texts", ranges, reverse)
			}
		}
		// A stop after a few texts stops everything.
		n := 0
		if err := st.ScanTextRanges(ranges, round%2 == 0, func(uint64, []byte, Held) bool { n++; return n < 5 }); err != nil || n > 5 {
			t.Fatalf("ScanTextRanges went on after fn returned false: %d calls, %v", n, err)
		}
	}
	lo, hi := uint64(1+r.IntN(100)), last-uint64(r.IntN(100))
	rd, err := st.NewTextReader(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seqs := make([]uint64, 250*rounds)
	for i := range seqs {
		seqs[i] = uint64(r.IntN(int(last) + 30))
	}
	for i, seq := range seqs {
		if i == len(seqs)/2 {
			slices.Sort(seqs[i:]) // ascending too, the order scans use
		}
		got, ok, err := rd.Text(seq)
		if err != nil {
			t.Fatal(err)
		}
		want, wok := stored[seq]
		if seq < lo || seq > hi {
			wok, want = false, nil
		}
		if ok != wok || !bytes.Equal(got, want) {
			t.Fatalf("TextReader[%d, %d].Text(%d) = %q, %v; the store holds %q, %v", lo, hi, seq, got, ok, want, wok)
		}
		if held := rd.Held(); held.Kept() != (ok && isHeld(seq)) {
			t.Fatalf("TextReader.Held() after Text(%d) = %v; its chunk holds the text: %v", seq, held, isHeld(seq))
		} else if held.Kept() {
			ascii("TextReader", seq, got, held)
			kept = append(kept, keptText{seq, got})
		}
	}
	if len(kept) >= 100 && (kinds[0] == 0 || kinds[1] == 0) {
		t.Fatalf("of %d held texts read, %d were called ASCII and %d not: the test needs both", len(kept), kinds[1], kinds[0])
	}
	for _, k := range kept {
		if !bytes.Equal(k.text, stored[k.seq]) {
			t.Fatalf("the held text of seq %d, kept past its read, changed to %q", k.seq, k.text)
		}
	}
	return len(kept)
}

// TestHeldTextsReadLikeTheStore: the chunks at both ends of the history
// hold their texts in memory after WarmHotTexts, and every read (scans
// of ranges in both orders, a reader's point reads) gives what Pebble
// holds: also after appends extend the newest chunk past what its texts
// cover, and after a write drops the chunks (no stale text is served).
func TestHeldTextsReadLikeTheStore(t *testing.T) {
	defer func(n uint64, inner bool) { hotChunks, holdInner = n, inner }(hotChunks, holdInner)
	hotChunks, holdInner = 1, false
	texts := filterTexts() // seqs 1-2,600: chunks 0, 1 and 2
	st := pushTexts(t, texts)
	if _, err := st.WarmSketches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.TextsHeld([]SeqRange{{1, 10}}) {
		t.Fatal("TextsHeld before any texts were held")
	}
	hs, err := st.WarmHotTexts(context.Background())
	if err != nil || hs.Chunks != 2 || hs.Full {
		t.Fatalf("WarmHotTexts = %+v, %v; want chunks 0 and 2", hs, err)
	}
	for c, want := range []bool{true, false, true} {
		if got := st.sketches.textsOf(uint64(c)) != nil; got != want {
			t.Fatalf("chunk %d holds its texts: %v, want %v", c, got, want)
		}
	}
	// TextsHeld: every entry of the ranges in a chunk that holds its
	// texts, and within what they cover (the last entry is 2,600).
	for _, tc := range []struct {
		ranges []SeqRange
		want   bool
	}{
		{[]SeqRange{{1, 1023}}, true},
		{[]SeqRange{{5, 5}, {2100, 2600}}, true},
		{[]SeqRange{{5, 5}, {1000, 1100}}, false}, // into chunk 1
		{[]SeqRange{{1500, 1500}}, false},
		{[]SeqRange{{2048, 2601}}, false}, // past what chunk 2's texts cover
		{[]SeqRange{{3000, 3000}}, false},
	} {
		if got := st.TextsHeld(tc.ranges); got != tc.want {
			t.Errorf("TextsHeld(%v) = %v, want %v", tc.ranges, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(8, 9))
	if readsLikeTheStore(t, st, r, st.LastSeq(), 12) == 0 {
		t.Fatal("no read gave a held text")
	}

	// Within the cache's bound: chunk 1's texts are refused when they
	// would pass it, and reads still go through Pebble.
	func() {
		defer func(n uint64) { hotChunks = n }(hotChunks)
		hotChunks = 2 // chunks 0, 1 and 2
		st.sketches.mu.Lock()
		st.sketches.max = st.sketches.bytes + 100
		st.sketches.mu.Unlock()
		if hs, err := st.WarmHotTexts(context.Background()); err != nil || hs.Chunks != 0 || !hs.Full {
			t.Fatalf("WarmHotTexts at the bound = %+v, %v; want none given, the bound reached", hs, err)
		}
		if st.sketches.textsOf(1) != nil {
			t.Fatal("chunk 1 got its texts past the cache's bound")
		}
		st.sketches.mu.Lock()
		st.sketches.max = DefaultSketchCacheBytes
		st.sketches.mu.Unlock()
	}()
	readsLikeTheStore(t, st, r, st.LastSeq(), 12)

	// The chunks between the ends (chunk 1) get theirs too, while the
	// cache stays within seven eighths of its bound: refused when its
	// texts would pass that, though not the bound itself.
	holdInner = true
	one, err := st.loadTexts(1, func() *chunkSketches { ch, _ := st.sketches.get(1); return ch }())
	if err != nil {
		t.Fatal(err)
	}
	st.sketches.mu.Lock()
	// The largest bound of which 7/8 (as WarmHotTexts works it out) is
	// still one byte short of what chunk 1 needs.
	st.sketches.max = (st.sketches.bytes+one.bytes()-1)/holdInnerShare*8 + 7
	tight := st.sketches.max
	st.sketches.mu.Unlock()
	if hs, err := st.WarmHotTexts(context.Background()); err != nil || hs.Chunks != 0 || !hs.Full {
		t.Fatalf("WarmHotTexts with chunk 1 just past %d/8 of the bound = %+v, %v; want none given, the bound reached", holdInnerShare, hs, err)
	}
	st.sketches.mu.Lock()
	st.sketches.max = tight + 64
	st.sketches.mu.Unlock()
	if hs, err := st.WarmHotTexts(context.Background()); err != nil || hs.Chunks != 1 || hs.Full {
		t.Fatalf("WarmHotTexts with room for chunk 1 = %+v, %v; want it given its texts", hs, err)
	}
	if !st.TextsHeld([]SeqRange{{1, 2600}}) {
		t.Fatal("after WarmHotTexts with room, not every text is held")
	}
	if n, b, err := st.WarmTexts(context.Background(), 1<<30); err != nil || n != 0 || b != 0 {
		t.Fatalf("WarmTexts with every text held = %d texts, %d bytes, %v; want none read into the block cache", n, b, err)
	}
	st.sketches.mu.Lock()
	st.sketches.max = DefaultSketchCacheBytes
	st.sketches.mu.Unlock()
	readsLikeTheStore(t, st, r, st.LastSeq(), 12)

	var late []string
	for i := range 40 {
		late = append(late, fmt.Sprintf("appended %d", i))
	}
	pushMore(t, st, fmt.Sprintf("e%03d", len(texts)-1), "x%03d", late)
	if tt := st.sketches.textsOf(2); tt == nil || tt.n >= st.LastSeq()%sketchChunk+1 {
		t.Fatal("the extended newest chunk lost its texts, or claims the appended ones")
	}
	readsLikeTheStore(t, st, r, st.LastSeq(), 12)

	if _, err := st.DropSession("s"); err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		if st.sketches.textsOf(uint64(c)) != nil {
			t.Fatalf("chunk %d still holds its texts after its entries were dropped", c)
		}
	}
	readsLikeTheStore(t, st, r, st.LastSeq(), 3) // reads past tombstones are slow under -race
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// IsASCII agrees with a byte-by-byte check wherever a byte of 0x80 or more
// sits, at every length around its 32- and 8-byte steps.
func TestIsASCIIFindsEveryHighByte(t *testing.T) {
	for n := 0; n <= 72; n++ {
		b := bytes.Repeat([]byte{'a'}, n)
		if !IsASCII(b) {
			t.Fatalf("IsASCII(%q) = false", b)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				b[i] = c
				if IsASCII(b) {
					t.Fatalf("IsASCII(%q) = true with byte %#x at %d", b, c, i)
				}
				b[i] = 0x7f
				if !IsASCII(b) {
					t.Fatalf("IsASCII(%q) = false with only ASCII", b)
				}
				b[i] = 'a'
			}
		}
	}
}
