package trigram

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// A Filter holds the bytes of many texts (those of a chunk of a thousand
// entries) in three forms: a Bloom filter of their byte trigrams (three
// consecutive bytes, not runes), and exact sets of their byte pairs and
// of their bytes. A text that holds a needle byte for byte holds every
// byte trigram of it (or, for a needle of two bytes, its pair; of one, its
// byte), so a filter that lacks one rules the whole chunk out before any
// entry's sketch or text is read.
//
// Per-entry sketches let through a needle of one or two trigrams (3-5
// characters) in one entry of 10-20 whatever it is, since they are sized
// for the entry's own trigrams: a rare short needle ("W6C", 22 hits in a
// million entries) passed ~76,000 sketches and read as many texts; and a
// needle of one or two characters has no trigram for them at all. A chunk
// of the benchmark's corpus holds 37,000-55,000 distinct byte trigrams
// (median 42,000), which set 20-30% of the trigram filter's bits (four
// each), so a chunk without the needle passes one trigram with odds of 1
// in 120 to 1 in 600, and two with odds below 1 in 10,000.
//
// Byte trigrams, unlike the sketches' rune trigrams, need no decoding and
// cover every needle of three bytes or more.
//
// A needle of LongGram bytes or more is tested on a fourth form instead: a
// Bloom filter of every run of LongGram bytes the texts hold. Trigrams rule
// out few chunks for a long needle of common words: each chunk holds every
// one of them, just not in that order. Over the benchmark's corpus the
// trigram sets passed every one of its 977 chunks for the median 20-byte
// needle, which 62 chunks hold; the 8-byte runs passed 108 (13-40 byte
// needles sampled from it: 977 -> 77, against 52 that hold them).
type Filter struct {
	tri   [FilterBits / 64]uint64
	pairs [1 << 16 / 64]uint64 // bit b0<<8|b1: some text holds bytes b0, b1 in a row
	bytes [256 / 64]uint64     // bit b: some text holds byte b
	long  [LongBits / 64]uint64
}

// FilterBits is the size of a Filter's trigram set in bits (64 KiB; the
// pairs take 8 KiB more).
const FilterBits = 1 << 19

// LongGram is the length in bytes of the runs in a Filter's long set, and
// LongBits that set's size in bits (128 KiB). A chunk of the benchmark's
// corpus sets 30-35% of its bits, one for each distinct run.
const (
	LongGram = 8
	LongBits = 1 << 20
)

// Add puts the bytes of text into f.
func (f *Filter) Add(text []byte) {
	var k uint32
	// g is the last LongGram bytes read, the first lowest: from byte
	// LongGram-1 on, the little-endian word of text[i-7:i+1].
	var g uint64
	for i, b := range text {
		f.bytes[b/64] |= 1 << (b % 64)
		k = (k<<8 | uint32(b)) & 0xFFFFFF
		g = g>>8 | uint64(b)<<56
		if i >= LongGram-1 {
			a := longHash(g)
			f.long[a/64] |= 1 << (a % 64)
		}
		if i == 0 {
			continue
		}
		f.pairs[k&0xFFFF/64] |= 1 << (k % 64)
		if i == 1 {
			continue
		}
		a, d := filterHash(k)
		for range filterHashes {
			f.tri[a/64] |= 1 << (a % 64)
			a = (a + d) & (FilterBits - 1)
		}
	}
}

// FilterEncodedBytes is the length of a Filter's encoding (see
// AppendBinary): its trigram set, pairs, bytes and long set, 204,832 bytes.
const FilterEncodedBytes = 8 * (FilterBits/64 + 1<<16/64 + 256/64 + LongBits/64)

// AppendBinary appends f's encoding to b, every word of its sets in order,
// little-endian, and returns the extended slice. The encoding is stable:
// a store keeps it on disk.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	b = slices.Grow(b, FilterEncodedBytes)
	for _, set := range [][]uint64{f.tri[:], f.pairs[:], f.bytes[:], f.long[:]} {
		for _, w := range set {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return b, nil
}

// UnmarshalBinary sets f from enc, an encoding AppendBinary wrote; it
// fails, leaving f as it was, when enc is not FilterEncodedBytes long.
func (f *Filter) UnmarshalBinary(enc []byte) error {
	if len(enc) != FilterEncodedBytes {
		return fmt.Errorf("trigram: a filter's encoding is %d bytes, not %d", len(enc), FilterEncodedBytes)
	}
	for _, set := range [][]uint64{f.tri[:], f.pairs[:], f.bytes[:], f.long[:]} {
		for i := range set {
			set[i] = binary.LittleEndian.Uint64(enc)
			enc = enc[8:]
		}
	}
	return nil
}

// filterHashes is how many bits each byte trigram sets in a Filter.
const filterHashes = 4

// filterHash returns the first bit of byte trigram k (its three bytes, the
// first highest) in a Filter and the step to each next (odd, so the bits
// differ): double hashing over two multiplicative hashes.
func filterHash(k uint32) (first, step uint32) {
	h := uint64(k) * 0x9E3779B97F4A7C15
	return uint32(h >> (64 - 19)), uint32(h>>(64-38))&(FilterBits-1) | 1
}

// longHash is the bit of a run of LongGram bytes, as the little-endian
// word of its bytes, in a Filter's long set.
func longHash(g uint64) uint32 { return uint32((g * 0x9E3779B97F4A7C15) >> (64 - 20)) }

// longPositions returns the long-set bits of up to RunsMax of needle's
// runs of LongGram bytes, nil for a shorter needle. The runs that do not
// overlap come first (offsets 0, 8, 16, ..., and the last run), then those
// between them: a chunk that lacks the needle mostly lacks one of its
// words, and runs apart from each other cover different words.
func longPositions(needle []byte) []uint32 {
	n := len(needle) - LongGram + 1
	if n <= 0 {
		return nil
	}
	var out []uint32
	seen := map[uint32]bool{}
	add := func(at int) {
		a := longHash(binary.LittleEndian.Uint64(needle[at:]))
		if !seen[a] && len(out) < RunsMax {
			seen[a] = true
			out = append(out, a)
		}
	}
	for at := 0; at < n; at += LongGram {
		add(at)
	}
	add(n - 1)
	for at := range n {
		if at%LongGram != 0 {
			add(at)
		}
	}
	return out
}

// longGrams is the most runs of a needle one Filter's long set is tested
// on: each bit tested in a filter that passes is a cache miss.
const longGrams = 12

// RunsMax is the most runs of a needle a probe keeps (see Probe.Runs):
// the first longGrams are what PassFilter tests; the store's run indexes,
// sets of many chunks (or slices of them) laid side by side, test them
// all, a word for 64 chunks or slices each.
const RunsMax = 32

// Runs returns the long-set bits of p's needle's runs of LongGram bytes
// (up to RunsMax of them, non-overlapping runs first), nil for a needle
// shorter than LongGram bytes. A text that holds the needle holds every
// one of its runs, so a chunk whose filter's long set lacks one of these
// bits holds it in none of its texts. The slice must not be changed.
func (p *Probe) Runs() []uint32 { return p.long }

// SetRuns sets in set, for each run of LongGram bytes of text, the bit
// its long-set bit has shifted right by shift (a set of LongBits>>shift
// bits: len(set) is LongBits>>shift/64): the bit Probe.Runs gives for the
// run, shifted alike. A store keeps such sets for slices of a chunk.
func SetRuns(set []uint64, text []byte, shift uint) {
	if len(set) != LongBits>>shift/64 {
		panic(fmt.Sprintf("trigram.SetRuns: a set of %d words for shift %d, want %d", len(set), shift, LongBits>>shift/64))
	}
	if len(text) < LongGram {
		return
	}
	g := binary.LittleEndian.Uint64(text)
	for i := LongGram; ; i++ {
		a := longHash(g) >> shift
		set[a/64] |= 1 << (a % 64)
		if i == len(text) {
			return
		}
		g = g>>8 | uint64(text[i])<<56
	}
}

// LongWords returns f's long set: bit b%64 of word b/64 is set when one of
// its texts holds a run of LongGram bytes whose bit is b (see
// Probe.Runs). It must not be changed.
func (f *Filter) LongWords() *[LongBits / 64]uint64 { return &f.long }

// filterPositions returns the trigram-set bits of needle's first
// filterGrams distinct byte trigrams, filterHashes for each, in needle
// order; nil for a needle shorter than three bytes.
func filterPositions(needle []byte) []uint32 {
	if len(needle) < 3 {
		return nil
	}
	var out []uint32
	seen := map[uint32]bool{}
	k := uint32(needle[0])<<8 | uint32(needle[1])
	for _, b := range needle[2:] {
		k = (k<<8 | uint32(b)) & 0xFFFFFF
		if seen[k] {
			continue
		}
		if len(seen) == filterGrams {
			break
		}
		seen[k] = true
		a, d := filterHash(k)
		for range filterHashes {
			out = append(out, a)
			a = (a + d) & (FilterBits - 1)
		}
	}
	return out
}

// filterGrams is the most byte trigrams of a needle a Filter is tested on.
// Every bit tested in a chunk's filter that passes is a cache miss of its
// own (each filter is 64 KiB), so testing each trigram of a long needle
// that every chunk holds (an English phrase of common trigrams) cost
// first pages of 13-40 characters more than a millisecond; eight
// trigrams already rule out a chunk that lacks the needle with odds of
// 10^-5 or less each, and short needles, where filters matter, have
// fewer.
const filterGrams = 8

// shortNeedle marks, in Probe.short, a needle of two bytes (shortPair,
// the pair below) or one (shortByte, the byte below); Probe.short is 0
// for longer needles.
const (
	shortPair = 1 << 24
	shortByte = 1 << 25
)

// shortOf returns Probe.short for needle.
func shortOf(needle []byte) uint32 {
	switch len(needle) {
	case 1:
		return shortByte | uint32(needle[0])
	case 2:
		return shortPair | uint32(needle[0])<<8 | uint32(needle[1])
	}
	return 0
}

// PassFilter reports whether the texts put into f may hold p's needle:
// false means none of them does. It counts the filters in a row that
// passed, for FilterWorthIt.
func (p *Probe) PassFilter(f *Filter) bool {
	pass := true
	switch {
	case p.short&shortByte != 0:
		b := p.short & 0xFF
		pass = f.bytes[b/64]&(1<<(b%64)) != 0
	case p.short&shortPair != 0:
		b := p.short & 0xFFFF
		pass = f.pairs[b/64]&(1<<(b%64)) != 0
	}
	if len(p.long) > 0 {
		// A needle of LongGram bytes or more: its runs rule out far more
		// chunks than its trigrams, and a chunk that passes them would
		// pass those too, at a cache miss each.
		for _, b := range p.long[:min(len(p.long), longGrams)] {
			if pass = f.long[b/64]&(1<<(b%64)) != 0; !pass {
				break
			}
		}
	} else {
		for _, b := range p.grams {
			if !pass {
				break
			}
			pass = f.tri[b/64]&(1<<(b%64)) != 0
		}
	}
	if p.filterRun != nil {
		if pass {
			p.filterRun.Add(1)
		} else if p.filterRun.Load() != 0 {
			// Not stored when it is 0 already: both halves of a scan
			// rule chunks out, and a store each time moved the
			// counter's cache line between the cores.
			p.filterRun.Store(0)
		}
	}
	return pass
}

// Filters reports whether p has anything to test filters on: a needle of
// one byte or more (an empty probe, of no needle, has not).
func (p *Probe) Filters() bool { return len(p.grams) > 0 || p.short != 0 }

// FilterWorthIt reports whether filters are still worth testing for p:
// not when it has nothing to test them on, nor once filterGiveUp filters
// in a row have passed it (by this probe or another of the same needle:
// Ordered shares the count). Each passing filter costs cache misses, and
// a needle found in that many chunks in a row is in most (a needle of
// common trigrams scanned through the whole history, windows of index
// candidates across it).
func (p *Probe) FilterWorthIt() bool {
	return p.Filters() && (p.filterRun == nil || p.filterRun.Load() < filterGiveUp)
}

// filterGiveUp is how many filters in a row may pass a needle before
// FilterWorthIt says no.
const filterGiveUp = 16
