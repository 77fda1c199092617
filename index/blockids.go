package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// blockStarts remembers the block start of each document of each segment
// it has been asked about. A document's external ID is stored in its
// segment (compressed with its other stored fields), and turning the
// documents a search intersects into block starts read it for every one:
// a tenth of the CPU of index-planned first pages at a million entries.
// Segments never change, so what was read once holds until the segment
// is merged away.
type blockStarts struct {
	mu   sync.Mutex
	segs map[segment.Segment]*segStarts
}

// segStarts holds, per document number of one segment, its block start
// plus one (0: not read yet). Searches fill it concurrently.
type segStarts struct {
	v []atomic.Uint64
	// byStart is every document of the segment ordered by block start
	// (nil until the first search that asks for the documents of a range
	// of seqs makes it: see resolver.docsIn)
	mu      sync.Mutex
	byStart []startDoc
}

// startDoc is a document of a segment and its block start.
type startDoc struct {
	start uint64
	local uint32
}

// resolver answers block starts for the documents of one index snapshot.
type resolver struct {
	rd      bindex.IndexReader
	offsets []uint64     // first global document number of each segment
	starts  []*segStarts // per segment, in the snapshot's order
}

// forSnapshot returns a resolver for rd. For a reader that is not a Scorch
// snapshot it reads each ID from the index, uncached.
func (b *blockStarts) forSnapshot(rd bindex.IndexReader) *resolver {
	r := &resolver{rd: rd}
	is, ok := rd.(*scorch.IndexSnapshot)
	if !ok {
		return r
	}
	segs := is.Segments()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.segs == nil {
		b.segs = map[segment.Segment]*segStarts{}
	}
	var running uint64
	for _, ss := range segs {
		seg := ss.Segment()
		st := b.segs[seg]
		if st == nil {
			st = &segStarts{v: make([]atomic.Uint64, seg.Count())}
			b.segs[seg] = st
		}
		r.offsets = append(r.offsets, running)
		r.starts = append(r.starts, st)
		running += seg.Count()
	}
	if len(b.segs) > 2*len(segs)+16 {
		// Segments merged away since: keep only this snapshot's. A
		// search on an older snapshot still holds its own entries.
		keep := make(map[segment.Segment]*segStarts, len(segs))
		for i, ss := range segs {
			keep[ss.Segment()] = r.starts[i]
		}
		b.segs = keep
	}
	return r
}

// start returns the block start of the document with global number num;
// ok is false for a document whose ID is not a block's (none is).
func (r *resolver) start(num uint64) (lo uint64, ok bool, err error) {
	if r.starts == nil {
		return r.read(num)
	}
	i := sort.Search(len(r.offsets), func(x int) bool { return r.offsets[x] > num }) - 1
	if i < 0 || num-r.offsets[i] >= uint64(len(r.starts[i].v)) {
		return r.read(num)
	}
	local, st := num-r.offsets[i], r.starts[i]
	if v := st.v[local].Load(); v != 0 {
		return v - 1, true, nil
	}
	lo, ok, err = r.read(num)
	if ok {
		st.v[local].Store(lo + 1)
	}
	return lo, ok, err
}

// fill reads the block start of every document of the snapshot's segment
// i that no search has read yet, and returns how many it read.
func (r *resolver) fill(ctx context.Context, i int) (int, error) {
	st, n := r.starts[i], 0
	for local := range st.v {
		if local%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		if st.v[local].Load() != 0 {
			continue
		}
		if _, _, err := r.start(r.offsets[i] + uint64(local)); err != nil {
			return n, fmt.Errorf("index: read the block of document %d: %w", r.offsets[i]+uint64(local), err)
		}
		n++
	}
	return n, nil
}

// docsIn returns, ascending, the global numbers of the snapshot's
// documents whose block starts lie in [lo, hi] (deleted ones included:
// no term reader returns those). Candidates intersects them with the
// trigrams' postings instead of a range query over a numeric field, which
// cost every block 16 postings and a dozen terms of its own.
func (r *resolver) docsIn(ctx context.Context, lo, hi uint64) ([]uint64, error) {
	if r.starts == nil {
		return nil, errors.New("index: the reader is not a Scorch snapshot")
	}
	var out []uint64
	for i := range r.starts {
		bs, err := r.byStart(ctx, i)
		if err != nil {
			return nil, err
		}
		j, _ := slices.BinarySearchFunc(bs, lo, func(d startDoc, t uint64) int { return cmp.Compare(d.start, t) })
		for ; j < len(bs) && bs[j].start <= hi; j++ {
			out = append(out, r.offsets[i]+uint64(bs[j].local))
		}
	}
	slices.Sort(out)
	return out, nil
}

// byStart returns the documents of segment i ordered by block start,
// making the list the first time (a failed read leaves it to the next).
func (r *resolver) byStart(ctx context.Context, i int) ([]startDoc, error) {
	st := r.starts[i]
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.byStart != nil {
		return st.byStart, nil
	}
	if _, err := r.fill(ctx, i); err != nil {
		return nil, err
	}
	bs := make([]startDoc, 0, len(st.v))
	for local := range st.v {
		if v := st.v[local].Load(); v != 0 {
			bs = append(bs, startDoc{v - 1, uint32(local)})
		}
	}
	slices.SortFunc(bs, func(a, b startDoc) int { return cmp.Compare(a.start, b.start) })
	st.byStart = bs
	return bs, nil
}

// read reads the block start of document num from the index.
func (r *resolver) read(num uint64) (uint64, bool, error) {
	id, err := r.rd.ExternalID(bindex.NewIndexInternalID(nil, num))
	if err != nil {
		return 0, false, err
	}
	lo, err := parseDocID(id)
	return lo, err == nil, nil
}

// WarmBlockStarts reads the block start of every document of the current
// index snapshot into memory, so that the first searches do not read them
// one by one (see blockStarts). It returns how many documents it read, and
// stops when ctx ends. A server calls it once after it starts.
func (x *Index) WarmBlockStarts(ctx context.Context) (int, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	rd, _, err := x.snapshot()
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	r := x.starts.forSnapshot(rd)
	n := 0
	for i := range r.starts {
		k, err := r.fill(ctx, i)
		if n += k; err != nil {
			return n, err
		}
	}
	return n, nil
}
