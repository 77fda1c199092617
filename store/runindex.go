package store

import (
	"context"
	"slices"
	"unsafe"

	"github.com/pi-history/pi-history/trigram"
)

// runIndex holds, for a group of runChunks consecutive chunks, the runs of
// trigram.LongGram bytes of each slice of 64 entries, the slices' sets
// laid side by side: bit j of words[b] is set when a text of slice j
// (entries 64j%1024 to 64j%1024+63 of chunk runChunks*g+j/16) holds a run
// whose long-set bit (trigram.Probe.Runs), shifted right by runShift, is
// b. A slice's set holds the texts of its chunk's entries below from[k].n,
// from[k] being the filter chunk k of the group had when the index was
// built (nil when it had none).
//
// A needle of LongGram bytes or more can be held only by a slice whose set
// has every one of its runs. Each chunk's filter rules out chunks the same
// way, but it was a cache miss or more per chunk (~280 ns of CPU each; an
// exact count of a 20-character needle over a million entries spent 0.27
// of its 0.66 ms of CPU there), and a chunk of 1,024 texts holds every run
// of a needle of common words far more often than one of its slices does:
// over 21 such needles, the chunks whose 8-byte runs held the whole needle
// summed to 3,394 of 977 each (every run, exact sets), while slices of 64
// entries with 16-bit sets like these passed 4,436 of 15,626 each: a
// sixteenth of the entries. Here each run costs one word for 64 slices,
// so every run of the needle (up to trigram.RunsMax) is tested, and only
// the words of 64 entries that pass go on to the chunk's columns.
//
// An index is an accelerator over filters that stay as they are: chunk k
// is judged by it only while its filter is still from[k] (the same
// pointer, which the index keeps alive, so a new filter is never taken for
// an old one). A chunk rewritten since is dropped, and gets a new filter,
// so its old sets are never used for its new texts; a chunk whose filter
// was built later, or changed, is tested on its own filter until its group
// is indexed again.
type runIndex struct {
	words [1 << runBits]uint64
	from  [runChunks]*textFilter
}

const (
	// runChunks is how many consecutive chunks a runIndex covers: 64
	// slices of 64 entries.
	runChunks = 64 / runSlices
	// runSlices is the number of slices of 64 entries of a chunk.
	runSlices = sketchChunk / 64
	// runBits is the size of a slice's set, in bits: 64 Ki bits for the
	// texts of 64 entries, which set 40% of them over the benchmark's
	// corpus (as a chunk's filter sets a third of its 1 Mi bits).
	runBits = 16
	// runShift turns a long-set bit into a slice set's.
	runShift = 20 - runBits
	// runIndexBytes is what a runIndex adds to the sketch cache: 512 KB
	// for 4,096 entries, as much as the long sets of their 4 filters.
	runIndexBytes = int(unsafe.Sizeof(runIndex{}))
)

// useRunIndex says whether MayHold judges chunks and their slices by
// their group's runIndex; tests turn it off to compare with the filters
// alone.
var useRunIndex = true

// pass returns the slices of the group (bit j for slice j) whose set has
// every bit of runs (slice-set bits: see runShift). Bits are set for the
// slices of a chunk without a filter too: callers check from first.
func (x *runIndex) pass(runs []uint32) uint64 { return allOf(x.words[:], runs) }

// allOf returns the AND of words[b] for every b of runs: the members of a
// side-by-side index whose sets hold every run (all of them when runs is
// empty). It stops at the first word that leaves none.
func allOf(words []uint64, runs []uint32) uint64 {
	acc := ^uint64(0)
	for _, b := range runs {
		if acc &= words[b]; acc == 0 {
			break
		}
	}
	return acc
}

// live returns the words of chunk k of the group that may hold a needle
// whose runs passed pass: bit w for the 64 entries from 64w, set for
// every word that holds an entry at or past from[k].n (not in the sets).
func (x *runIndex) live(pass uint64, k uint64) uint16 {
	return uint16(pass>>(runSlices*k)) | ^uint16(0)<<(x.from[k].n/64)
}

// sliceSets is what a runIndex holds of one chunk before it is laid side
// by side: the set of each of its slices of 64 entries.
type sliceSets [runSlices][1 << runBits / 64]uint64

// add puts the runs of text, entry i's of the chunk, into its slice's set.
func (t *sliceSets) add(i uint64, text []byte) { trigram.SetRuns(t[i/64][:], text, runShift) }

// newRunIndex builds the index of group g for filters from the texts each
// filter covers, laid side by side a 64-by-64 block of bits at a time
// (transposeInto). (Making the sets in the read of the texts that builds
// or checks the filters instead saved nothing: see docs/design.md.)
func (s *Store) newRunIndex(g uint64, filters [runChunks]*textFilter) (*runIndex, error) {
	x := &runIndex{from: filters}
	var sets [runChunks]*sliceSets
	for k, f := range filters {
		sets[k] = new(sliceSets)
		if f == nil || f.n == 0 {
			continue
		}
		base := (g*runChunks + uint64(k)) * sketchChunk
		err := s.ScanTexts(base, base+f.n-1, false, func(seq uint64, text []byte) bool {
			sets[k].add(seq-base, text)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	transposeInto(colView{words: x.words[:], stride: 1}, 0, func(r, w int) uint64 {
		return sets[r/runSlices][r%runSlices][w]
	}, 1<<runBits/64)
	return x, nil
}

// runIndexOf returns the index of group g, nil when it has none.
func (c *sketchCache) runIndexOf(g uint64) *runIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[g]
}

// indexRuns builds the runIndex of group g from the filters its cached
// chunks have now and their texts, unless its index was built for those
// filters already, none of them has one, or the cache has no room for a
// new one. It reports whether the group has an index built for them
// afterwards. The index is built outside the cache's lock (a few
// milliseconds); a filter that changes meanwhile leaves its chunk to its
// own filter (see runIndex).
func (s *Store) indexRuns(g uint64) (bool, error) {
	return indexGroup(s.sketches, &s.sketches.runs, g, runChunks, 1, runIndexBytes,
		func(x *runIndex) []*textFilter { return x.from[:] },
		func(filters []*textFilter) (*runIndex, error) {
			return s.newRunIndex(g, [runChunks]*textFilter(filters))
		})
}

// indexGroup builds and keeps in *kept (under c's lock, counted in its
// bytes) the index of group g of size chunks, built by build from the
// filters its cached chunks have now, unless the index kept was built for
// those (from gives the filters an index was built for), fewer than least
// (at least 1) of them have one, or the cache has no room for bytes more.
// It reports whether the group has an index for them afterwards. build
// runs outside the lock.
func indexGroup[X any](c *sketchCache, kept *map[uint64]*X, g, size uint64, least, bytes int,
	from func(*X) []*textFilter, build func([]*textFilter) (*X, error)) (bool, error) {
	filters := make([]*textFilter, size)
	n := 0
	c.mu.Lock()
	for k := range filters {
		if ch := c.chunks[g*size+uint64(k)]; ch != nil {
			if filters[k] = ch.filter.Load(); filters[k] != nil {
				n++
			}
		}
	}
	old := (*kept)[g]
	room := c.max-c.bytes >= bytes
	c.mu.Unlock()
	switch {
	case n < max(least, 1):
		return false, nil
	case old != nil && slices.Equal(from(old), filters):
		return true, nil
	case old == nil && !room:
		return false, nil
	}
	x, err := build(filters)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if (*kept)[g] != old {
		return false, nil // another build got there first
	}
	if old == nil {
		if c.max-c.bytes < bytes {
			return false, nil
		}
		c.bytes += bytes
	}
	if *kept == nil {
		*kept = map[uint64]*X{}
	}
	(*kept)[g] = x
	return true, nil
}

// unindexRuns drops the runIndex and the chunkRuns of chunk's groups
// once no chunk of the group is cached (under c.mu): what they would judge
// is gone.
func (c *sketchCache) unindexRuns(chunk uint64) {
	cached := func(first, n uint64) bool {
		for k := range n {
			if c.chunks[first+k] != nil {
				return true
			}
		}
		return false
	}
	if g := chunk / runChunks; c.runs[g] != nil && !cached(g*runChunks, runChunks) {
		delete(c.runs, g)
		c.bytes -= runIndexBytes
	}
	if g := chunk / chunkRunsGroup; c.chunkRuns[g] != nil && !cached(g*chunkRunsGroup, chunkRunsGroup) {
		delete(c.chunkRuns, g)
		c.bytes -= chunkRunsBytes
	}
}

// indexAllRuns (re)builds the chunkRuns and the run index of every group
// of cached chunks with filters (see runIndex), oldest first, within the
// sketch cache's bound, and returns how many groups have a run index.
// WarmFilters calls it when it is done; it stops when ctx ends.
func (s *Store) indexAllRuns(ctx context.Context) (int, error) {
	c := s.sketches
	c.mu.Lock()
	var last uint64
	for chunk := range c.chunks {
		last = max(last, chunk)
	}
	c.mu.Unlock()
	for g := range last/chunkRunsGroup + 1 {
		s.indexChunkRuns(g)
	}
	n := 0
	for g := range last/runChunks + 1 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		ok, err := s.indexRuns(g)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// chunkRuns is the coarse step before a runIndex: the long sets
// (trigram.Filter.LongWords) of the filters of chunkRunsGroup consecutive
// chunks laid side by side, a word per bit: bit j of words[b] is bit b of
// the long set of from[j], the filter chunk chunkRunsGroup*g+j had when it
// was built (nil when it had none). A long needle's runs rule out, a word
// each, the chunks of 64 whose long set lacks one; only the groups of
// runIndex that hold a chunk left are tested slice by slice. Alone, the
// slices' index cost a needle that few chunks hold more than the filters
// it replaced (its 245 groups at a million entries were a word or more
// each: " similar but incompa", 68 chunks of 977 holding its runs, 0.79 ->
// 1.05 ms in-process); this step reads 16 groups' words instead. A chunk
// is judged by it while its filter is still from[j], as by a runIndex.
type chunkRuns struct {
	words [trigram.LongBits]uint64
	from  [chunkRunsGroup]*textFilter
}

const (
	// chunkRunsGroup is how many consecutive chunks a chunkRuns covers.
	chunkRunsGroup = 64
	// chunkRunsBytes is what a chunkRuns adds to the sketch cache: 8 MB,
	// as much as the long sets of its 64 filters.
	chunkRunsBytes = int(unsafe.Sizeof(chunkRuns{}))
)

// chunkRunsMin is the fewest chunks with filters a chunkRuns is built for:
// below it its 8 MB would buy little over the filters themselves. (Tests
// lower it.)
var chunkRunsMin = 8

// pass returns the chunks of the group (bit j for chunk chunkRunsGroup*g+j)
// whose long set has every bit of runs (long-set bits). A bit is set for a
// slot without a filter too: callers check from first.
func (x *chunkRuns) pass(runs []uint32) uint64 { return allOf(x.words[:], runs) }

// newChunkRuns lays the long sets of filters side by side, a 64-by-64
// block of bits at a time (transposeInto).
func newChunkRuns(filters [chunkRunsGroup]*textFilter) *chunkRuns {
	x := &chunkRuns{from: filters}
	var sets [chunkRunsGroup]*[trigram.LongBits / 64]uint64
	var empty [trigram.LongBits / 64]uint64
	for j, f := range filters {
		sets[j] = &empty
		if f != nil {
			sets[j] = f.bits.LongWords()
		}
	}
	transposeInto(colView{words: x.words[:], stride: 1}, 0, func(r, w int) uint64 { return sets[r][w] }, trigram.LongBits/64)
	return x
}

// chunkRunsOf returns the chunkRuns of group g, nil when it has none.
func (c *sketchCache) chunkRunsOf(g uint64) *chunkRuns {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chunkRuns[g]
}

// indexChunkRuns builds the chunkRuns of group g from the filters its
// cached chunks have now, as indexRuns does for a runIndex, when at least
// chunkRunsMin of them have one.
func (s *Store) indexChunkRuns(g uint64) bool {
	ok, _ := indexGroup(s.sketches, &s.sketches.chunkRuns, g, chunkRunsGroup, chunkRunsMin, chunkRunsBytes,
		func(x *chunkRuns) []*textFilter { return x.from[:] },
		func(filters []*textFilter) (*chunkRuns, error) {
			return newChunkRuns([chunkRunsGroup]*textFilter(filters)), nil
		})
	return ok
}
