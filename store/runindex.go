package store

import (
	"unsafe"

	"github.com/pi-history/pi-history/trigram"
)

// runIndex lays side by side the long sets (trigram.Filter.LongWords) of
// the filters of runGroup consecutive chunks, a word per bit of the set:
// bit j of words[b] is bit b of the long set of from[j], the filter of
// chunk runGroup*g+j when the index was built (nil when it had none).
//
// A needle of trigram.LongGram bytes or more rules out a chunk when the
// chunk's long set lacks one of its runs. Tested chunk by chunk, that was
// a cache miss or more per chunk, ~280 ns of CPU each: an exact count of a
// 20-character needle that every chunk of a million entries was tested for
// spent 0.27 of its 0.66 ms of CPU there, even when its filters passed
// only the chunks that hold it. Here each run costs one word for the 64
// chunks, so every run of the needle can be tested (up to
// trigram.RunsMax, where a filter tests 12), which also rules out more
// chunks: its last runs are often the ones that only the chunks holding
// the needle have.
//
// An index is an accelerator over filters that stay as they are: a chunk
// is judged by it only while its filter is still from[j] (the same
// pointer, which the index keeps alive, so a new filter is never taken
// for an old one). A chunk whose filter was built later, or changed,
// goes on being tested on its own filter until its group is indexed
// again.
type runIndex struct {
	words [trigram.LongBits]uint64
	from  [runGroup]*textFilter
}

const (
	// runGroup is how many consecutive chunks a runIndex covers.
	runGroup = 64
	// runIndexBytes is what a runIndex adds to the sketch cache: 8 MB,
	// as much as the long sets of its 64 filters.
	runIndexBytes = int(unsafe.Sizeof(runIndex{}))
)

// runIndexMin is the fewest chunks with filters a group is indexed for:
// below it the index's 8 MB would buy little, each chunk's own filter
// costing ~280 ns a test. (Tests lower it.)
var runIndexMin = 8

// useRunIndex says whether MayHold judges chunks by their group's
// runIndex; tests turn it off to compare with the filters alone.
var useRunIndex = true

// pass returns the chunks of the group (bit j for chunk runGroup*g+j)
// whose long set has every bit of runs. A bit is set for a slot without
// a filter too: callers check from first.
func (x *runIndex) pass(runs []uint32) uint64 {
	acc := ^uint64(0)
	for _, b := range runs {
		if acc &= x.words[b]; acc == 0 {
			break
		}
	}
	return acc
}

// newRunIndex builds the index of filters, a 64-by-64 block of bits at a
// time (transpose64): word w of the 64 long sets becomes words 64w to
// 64w+63 of the index.
func newRunIndex(filters [runGroup]*textFilter) *runIndex {
	x := &runIndex{from: filters}
	var sets [runGroup]*[trigram.LongBits / 64]uint64
	var empty [trigram.LongBits / 64]uint64
	for j, f := range filters {
		sets[j] = &empty
		if f != nil {
			sets[j] = f.bits.LongWords()
		}
	}
	var blk [64]uint64
	for w := range trigram.LongBits / 64 {
		for j := range blk {
			blk[j] = sets[j][w]
		}
		transpose64(&blk)
		copy(x.words[w*64:w*64+64], blk[:])
	}
	return x
}

// runIndexOf returns the index of group g, nil when it has none.
func (c *sketchCache) runIndexOf(g uint64) *runIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[g]
}

// indexRuns builds the runIndex of group g from the filters its cached
// chunks have now, unless its index was built from those already, fewer
// than runIndexMin of them have one, or the cache has no room for a new
// one. It
// reports whether the group has an index built from them afterwards.
// The index is built outside the cache's lock (a few milliseconds); a
// filter that changes meanwhile leaves its chunk to its own filter (see
// runIndex).
func (s *Store) indexRuns(g uint64) bool {
	c := s.sketches
	var filters [runGroup]*textFilter
	c.mu.Lock()
	n := 0
	for j := range filters {
		if ch := c.chunks[g*runGroup+uint64(j)]; ch != nil {
			if filters[j] = ch.filter.Load(); filters[j] != nil {
				n++
			}
		}
	}
	old := c.runs[g]
	room := c.max-c.bytes >= runIndexBytes
	c.mu.Unlock()
	switch {
	case n < runIndexMin:
		return false
	case old != nil && old.from == filters:
		return true
	case old == nil && !room:
		return false
	}
	x := newRunIndex(filters)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs[g] != old {
		return false // another build got there first
	}
	if old == nil {
		if c.max-c.bytes < runIndexBytes {
			return false
		}
		c.bytes += runIndexBytes
	}
	if c.runs == nil {
		c.runs = map[uint64]*runIndex{}
	}
	c.runs[g] = x
	return true
}

// unindexRuns drops the runIndex of chunk's group once no chunk of the
// group is cached (under c.mu): what it would judge is gone.
func (c *sketchCache) unindexRuns(chunk uint64) {
	g := chunk / runGroup
	if c.runs[g] == nil {
		return
	}
	for j := range uint64(runGroup) {
		if c.chunks[g*runGroup+j] != nil {
			return
		}
	}
	delete(c.runs, g)
	c.bytes -= runIndexBytes
}

// indexAllRuns (re)builds the run index of every group of cached chunks
// with filters (see runIndex), within the sketch cache's bound, and
// returns how many groups have one. WarmFilters calls it when it is done.
func (s *Store) indexAllRuns() int {
	c := s.sketches
	c.mu.Lock()
	groups := map[uint64]bool{}
	for chunk := range c.chunks {
		groups[chunk/runGroup] = true
	}
	c.mu.Unlock()
	n := 0
	for g := range groups {
		if s.indexRuns(g) {
			n++
		}
	}
	return n
}
