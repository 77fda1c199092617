package store

import (
	"context"
	"fmt"
	"slices"
)

// WarmStats says what WarmSketches brought into memory.
type WarmStats struct {
	Chunks int   // chunks of sketchChunk seqs loaded (or found loaded)
	Bytes  int64 // their share of the sketch cache, columns included
	Full   bool  // stopped early: the cache bound would have been passed
}

// WarmSketches brings the sketches (and records) of every stored entry into
// the sketch cache, with the bit-sliced columns of each full chunk, so
// that the first searches through the whole history test sketches in
// memory instead of reading them from Pebble. It loads the newest chunks
// first and stops at the cache's bound, leaving room for each loaded
// chunk's filter (see WarmFilters): what does not fit is the oldest
// history, which then loads on each use (see sketchCache.put). It stops
// when ctx ends. Searches and writes may run meanwhile; a server calls it
// once in the background after it starts.
func (s *Store) WarmSketches(ctx context.Context) (WarmStats, error) {
	var ws WarmStats
	last, from := s.LastSeq(), s.sketchFrom.Load()
	if last < from {
		return ws, nil
	}
	// Chunks are loaded a group at a time, newest group first and newest
	// chunk first within it, and the full ones of a group get their
	// columns in slabs they share (see colView), laid out oldest first as
	// scans read them.
	firstChunk, lastChunk := from/sketchChunk, last/sketchChunk
	for g := lastChunk / slabChunks; ; g-- {
		var full []*chunkSketches
		var ids []uint64
		for ci := int64(min((g+1)*slabChunks-1, lastChunk)); ci >= int64(max(g*slabChunks, firstChunk)); ci-- {
			c := uint64(ci)
			if err := ctx.Err(); err != nil {
				return ws, err
			}
			if s.sketches.room() < warmChunkBytes+filterBytes*(ws.Chunks+1) {
				ws.Full = true
				break
			}
			ch, err := s.chunkFor(c)
			if err != nil {
				return ws, fmt.Errorf("load the sketches of seqs %d-%d: %w", c*sketchChunk, c*sketchChunk+sketchChunk-1, err)
			}
			if cached, _ := s.sketches.get(c); cached != ch {
				// Not kept: the bound was nearer than warmChunkBytes
				// (or a writer raced the load).
				ws.Full = cached == nil && s.sketches.room() < ch.size()
				if ws.Full {
					break
				}
				continue
			}
			if (c+1)*sketchChunk-1 <= last {
				full = append(full, ch)
				ids = append(ids, c)
			}
			ws.Chunks++
			ws.Bytes += int64(ch.size())
		}
		slices.Reverse(full)
		slices.Reverse(ids)
		s.sketches.sliceGroup(ids, full)
		if ws.Full || g == 0 || g*slabChunks <= firstChunk {
			return ws, nil
		}
	}
}

// slabChunks is how many chunks WarmSketches slices into one pair of
// slabs: 8 MB of narrow columns, and the wide rows' columns. A first
// page that tests every sketch of a million entries reads ~6 columns of
// each chunk; with each chunk's columns in memory of their own, each read
// was a cache miss of its own. A throwaway program with 977 chunks of
// random columns, 36 positions by density: 1.0-1.3 ms a scan apart,
// 0.33-0.40 ms in one slab.
var slabChunks uint64 = 64

// warmChunkBytes is the room WarmSketches wants before loading one more
// chunk: a chunk of larger-than-average sketches (~300 bytes each) with
// its columns, so that warming seldom loads a chunk that the cache, at
// its bound, does not keep.
const warmChunkBytes = sketchChunk*300 + colsBytes + wideColsBytes

// wideColsBytes is what the wide rows' columns of a chunk take when up to
// 256 of its entries have one (at a million picorpus entries, 14% do).
const wideColsBytes = wideCols * 8 * 4

// room is how many more bytes the cache takes before it starts dropping
// chunks.
func (c *sketchCache) room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max - c.bytes
}
