package trigram

// A Filter is a Bloom filter of the byte trigrams (three consecutive bytes,
// not runes) of many texts: the texts of a chunk of a thousand entries.
// A text that holds a needle byte for byte holds every byte trigram of it,
// so a filter that lacks one of them rules the whole chunk out before any
// entry's sketch is read.
//
// Per-entry sketches let through a needle of one or two trigrams (3-5
// characters) in one entry of 10-20 whatever it is, since they are sized
// for the entry's own trigrams: a rare short needle ("W6C", 22 hits in a
// million entries) passed ~76,000 sketches and read as many texts. A chunk
// of the benchmark's corpus holds 37,000-55,000 distinct byte trigrams
// (median 42,000), which set 13-19% of a filter's bits (two each), so a
// chunk without the needle passes one trigram with odds of 2-4 in 100 and
// two with odds of 1 in 1,000 or less.
//
// Byte trigrams, unlike the sketches' rune trigrams, need no decoding and
// cover every needle of three bytes or more.
type Filter [FilterBits / 64]uint64

// FilterBits is the size of a Filter in bits (64 KiB).
const FilterBits = 1 << 19

// Add puts the byte trigrams of text into f.
func (f *Filter) Add(text []byte) {
	if len(text) < 3 {
		return
	}
	k := uint32(text[0])<<8 | uint32(text[1])
	for _, b := range text[2:] {
		k = (k<<8 | uint32(b)) & 0xFFFFFF
		a, d := filterHash(k)
		for range filterHashes {
			f[a/64] |= 1 << (a % 64)
			a = (a + d) & (FilterBits - 1)
		}
	}
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

// filterPositions returns the Filter bits of needle's first
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

// PassFilter reports whether the texts put into f may hold p's needle:
// false means none of them does. A probe whose needle is shorter than
// three bytes passes every filter. It counts the filters in a row that
// passed, for FilterWorthIt.
func (p *Probe) PassFilter(f *Filter) bool {
	for _, b := range p.grams {
		if f[b/64]&(1<<(b%64)) == 0 {
			if p.filterRun != nil {
				p.filterRun.Store(0)
			}
			return false
		}
	}
	if p.filterRun != nil {
		p.filterRun.Add(1)
	}
	return true
}

// Filters reports whether p has byte trigrams to test filters on: a
// needle of three bytes or more, also one of one or two characters with
// no rune trigram (an emoji, two CJK characters).
func (p *Probe) Filters() bool { return len(p.grams) > 0 }

// FilterWorthIt reports whether filters are still worth testing for p:
// not when its needle is shorter than three bytes, nor once filterGiveUp
// filters in a row have passed it (by this probe or another of the same
// needle: Ordered shares the count). Each passing filter costs cache
// misses, and a needle found in that many chunks in a row is in most (a
// needle of common trigrams scanned through the whole history, windows
// of index candidates across it).
func (p *Probe) FilterWorthIt() bool {
	return len(p.grams) > 0 && (p.filterRun == nil || p.filterRun.Load() < filterGiveUp)
}

// filterGiveUp is how many filters in a row may pass a needle before
// FilterWorthIt says no.
const filterGiveUp = 16
