package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// forceMergeTask is how many segments Compact merges into one at a time.
// Bleve's single-segment plan merges ten: after a million-entry import
// left about 25 segments, one force merge left 3 (240 MB; merged into one,
// 224 MB).
var forceMergeTask = 100

// Compact merges the index's segments into one and waits until that state
// is on disk. After a large import
// it makes the index smaller (each segment repeats the trigram dictionary)
// and queries faster (fewer segments to consult). It holds off indexing
// while it runs.
func (x *Index) Compact(ctx context.Context) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.RLock()
	defer x.mu.RUnlock()
	a, err := x.bi.Advanced()
	if err != nil {
		return fmt.Errorf("index: compact: %w", err)
	}
	sc, ok := a.(*scorch.Scorch)
	if !ok {
		return nil
	}
	opts := mergeplan.SingleSegmentMergePlanOptions
	opts.SegmentsPerMergeTask = forceMergeTask
	// A force merge merges at most a task's worth of segments into each
	// new one: repeat while that leaves several and each pass merged some.
	for n := segments(x.bi); n > 1; {
		if err := sc.ForceMerge(ctx, &opts); err != nil {
			return fmt.Errorf("index: compact %s: %w", x.dir, err)
		}
		m := segments(x.bi)
		if m >= n {
			break
		}
		n = m
	}
	// A batch persisted after the merge carries the merged state to disk.
	b := x.bi.NewBatch()
	b.SetInternal([]byte(markKey), binary.BigEndian.AppendUint64(nil, x.through.Load()))
	if err := batchPersisted(ctx, x.bi, b); err != nil {
		return fmt.Errorf("index: compact: write mark: %w", err)
	}
	// Bleve deletes the merged-away segment files shortly after; wait for
	// that (briefly), so that the size on disk is the compacted one.
	want := segments(x.bi)
	for range 100 {
		files, _ := filepath.Glob(filepath.Join(x.dir, "store", "*.zap"))
		if len(files) <= want {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// Segments is the number of segments the index consults per query.
func (x *Index) Segments() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return segments(x.bi)
}

// segments counts the segments of bi's current snapshot (0 if unknown).
func segments(bi bleve.Index) int {
	a, err := bi.Advanced()
	if err != nil {
		return 0
	}
	r, err := a.Reader()
	if err != nil {
		return 0
	}
	defer r.Close()
	if is, ok := r.(*scorch.IndexSnapshot); ok {
		return len(is.Segments())
	}
	return 0
}

// Reindex rebuilds the index from the store into a fresh directory beside
// the current one and swaps it in. Searches keep using the old index until
// the swap. progress is called with the mark as the rebuild advances.
func (x *Index) Reindex(ctx context.Context, progress func(through, last uint64)) error {
	tmp := x.dir + ".rebuild"
	os.RemoveAll(tmp)
	nbi, err := openBleve(tmp, true)
	if err != nil {
		return err
	}
	nx := newIndex(x.st, tmp, x.log, nbi)
	nx.batchBytes = x.batchBytes
	if _, err := nx.CatchUp(ctx, func(t uint64) {
		if progress != nil {
			progress(t, x.st.LastSeq())
		}
	}); err != nil {
		nbi.Close()
		os.RemoveAll(tmp)
		return err
	}
	if err := nx.Compact(ctx); err != nil {
		nbi.Close()
		os.RemoveAll(tmp)
		return err
	}
	if err := nx.Close(); err != nil {
		return fmt.Errorf("index: close rebuilt index: %w", err)
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.bi.Close(); err != nil {
		x.log.Warn("closing old index", "err", err)
	}
	old := x.dir + ".old"
	os.RemoveAll(old)
	if err := os.Rename(x.dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("index: move old index aside: %w", err)
	}
	if err := os.Rename(tmp, x.dir); err != nil {
		return fmt.Errorf("index: swap in rebuilt index: %w", err)
	}
	os.RemoveAll(old)
	bi, err := openBleve(x.dir, x.bulk)
	if err != nil {
		return err
	}
	x.bi = bi
	x.scheme = schemeOf(bi) // rebuilt by this binary
	x.through.Store(0)
	if err := x.loadMark(); err != nil {
		return err
	}
	return nil
}
