package index

import (
	"sync"
	"sync/atomic"
)

// postingLists is postings being gathered in memory (the open run, or a
// run being built again): for each key, the ascending offsets (from a
// file's lo) of the entries that hold it.
//
// They are kept as one array of pairs, key<<16 | offset, appended as
// entries arrive (an entry's offset is above every offset before it), and
// put in order by key only when something reads them by key: a write, a
// lookup. A map of a list per key cost an insertion into a large hash
// table per trigram of every text, the largest part of an import's CPU
// (decision 510); an append costs none, and a radix sort of a run's pairs
// before it is written costs a few passes over them.
//
// Writers (add) hold the index's bmu for writing; readers hold it for
// reading, and may be several: the first to find pairs out of order sorts
// them under mu, and publishes the sorted length.
//
// The ordered pairs lie in two parts: pairs[:base], the older, and
// pairs[base:sorted], the pairs added since base moved. New pairs are
// merged into the newer part alone, and that part into the older only
// once it has grown past an eighth of it: a server that searches after
// every append then moves a few entries' pairs each time, not the whole
// run. Every offset of the newer part is above every offset of the older
// (offsets ascend as entries arrive), so a key's list is its offsets in
// the older part followed by those in the newer.
type postingLists struct {
	mu     sync.Mutex
	pairs  []uint64
	base   atomic.Int64 // pairs[:base] are in order
	sorted atomic.Int64 // pairs[base:sorted] are in order
}

// pairShift puts a key above its offset in a pair.
const pairShift = 16

// newerShare is the fraction, as a divisor, of the older part the newer
// may grow to before it is merged into the older.
const newerShare = 8

// newPostingLists returns empty lists with room for n pairs.
func newPostingLists(n int) *postingLists {
	return &postingLists{pairs: make([]uint64, 0, n)}
}

// add puts entry off's keys into l. off must be above every offset added
// before.
func (l *postingLists) add(keys []uint32, off uint16) {
	for _, k := range keys {
		l.pairs = append(l.pairs, uint64(k)<<pairShift|uint64(off))
	}
}

// put adds key's offsets (ascending, each above the last added for
// key) to l, for lists built from a file or in tests.
func (l *postingLists) put(key uint32, offs []uint16) {
	for _, o := range offs {
		l.pairs = append(l.pairs, uint64(key)<<pairShift|uint64(o))
	}
}

// markOrdered says that l's pairs, put in key order, are in order.
func (l *postingLists) markOrdered() {
	l.base.Store(int64(len(l.pairs)))
	l.sorted.Store(int64(len(l.pairs)))
}

// size is how many pairs l holds.
func (l *postingLists) size() int { return len(l.pairs) }

// order puts the pairs added since the last time in order, in a copy,
// and merges them into the newer part from the end of the same array
// (moving that part into the older when it has grown enough), so that a
// reader that found them in order (sorted, then len) reads an array no
// one changes, and a search after an append allocates no copy of the
// whole run.
func (l *postingLists) order() {
	if int(l.sorted.Load()) == len(l.pairs) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int(l.sorted.Load())
	if n == len(l.pairs) {
		return
	}
	b := int(l.base.Load())
	tail := append([]uint64(nil), l.pairs[n:]...)
	radixSortPairs(tail, make([]uint64, len(tail)))
	mergeBack(l.pairs[b:], n-b, tail)
	if newer := len(l.pairs) - b; newer > b/newerShare {
		if b > 0 {
			mergeBack(l.pairs, b, append([]uint64(nil), l.pairs[b:]...))
		}
		l.base.Store(int64(len(l.pairs)))
	}
	l.sorted.Store(int64(len(l.pairs)))
}

// radixSortPairs sorts a by key, keeping the order of equal keys (their
// offsets ascend already), with tmp as long as a: three passes of nine
// bits cover keys of up to 27 bits (see pairKey and lastKey).
func radixSortPairs(a, tmp []uint64) {
	if len(a) == 0 {
		return
	}
	const bits, buckets = 9, 1 << 9
	src, dst := a, tmp
	for pass := range 3 {
		shift := uint(pairShift + bits*pass)
		var count [buckets]int
		for _, p := range src {
			count[(p>>shift)&(buckets-1)]++
		}
		at := 0
		for i, c := range count {
			count[i] = at
			at += c
		}
		for _, p := range src {
			b := (p >> shift) & (buckets - 1)
			dst[count[b]] = p
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// mergeBack merges the ordered pairs[:n] and tail (as long as the rest
// of pairs) into pairs, from the end: each write lands at or past the
// prefix pair it could overwrite, which has been read by then.
func mergeBack(pairs []uint64, n int, tail []uint64) {
	i, j := n-1, len(tail)-1
	for k := len(pairs) - 1; j >= 0; k-- {
		if i >= 0 && pairs[i] > tail[j] {
			pairs[k] = pairs[i]
			i--
		} else {
			pairs[k] = tail[j]
			j--
		}
	}
}

// get appends key's offsets to buf and returns it.
func (l *postingLists) get(key uint32, buf []uint16) []uint16 {
	l.order()
	b := int(l.base.Load())
	buf = appendOffsets(buf, l.pairs[:b], key)
	return appendOffsets(buf, l.pairs[b:], key)
}

// appendOffsets appends the offsets of key's pairs in the ordered p to
// buf.
func appendOffsets(buf []uint16, p []uint64, key uint32) []uint16 {
	lo, hi := 0, len(p)
	first := uint64(key) << pairShift
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p[m] < first {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(p) && uint32(p[lo]>>pairShift) == key; lo++ {
		buf = append(buf, uint16(p[lo]))
	}
	return buf
}

// has reports whether some entry holds key.
func (l *postingLists) has(key uint32) bool {
	var one [1]uint16
	return len(l.get(key, one[:0])) > 0
}

// each calls fn with every key in order and its offsets, walking the two
// ordered parts together; offs is valid only during the call.
func (l *postingLists) each(fn func(key uint32, offs []uint16) error) error {
	l.order()
	b := int(l.base.Load())
	older, newer := l.pairs[:b], l.pairs[b:]
	var offs []uint16
	i, j := 0, 0
	for i < len(older) || j < len(newer) {
		var key uint32
		switch {
		case j == len(newer):
			key = uint32(older[i] >> pairShift)
		case i == len(older):
			key = uint32(newer[j] >> pairShift)
		default:
			key = min(uint32(older[i]>>pairShift), uint32(newer[j]>>pairShift))
		}
		offs = offs[:0]
		for ; i < len(older) && uint32(older[i]>>pairShift) == key; i++ {
			offs = append(offs, uint16(older[i]))
		}
		for ; j < len(newer) && uint32(newer[j]>>pairShift) == key; j++ {
			offs = append(offs, uint16(newer[j]))
		}
		if err := fn(key, offs); err != nil {
			return err
		}
	}
	return nil
}
