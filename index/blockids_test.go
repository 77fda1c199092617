package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
)

// checkBlockStarts compares, for every document of x's current snapshot,
// the block start the cache answers (twice: once filling it, once from
// it) with the one the index stores, and returns the snapshot's document
// and segment counts.
func checkBlockStarts(t *testing.T, x *Index, stage string) (docs uint64, segs int) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	rd, _, err := x.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, ss := range rd.(*scorch.IndexSnapshot).Segments() {
		docs += ss.Segment().Count()
		segs++
	}
	for pass := range 2 {
		r := x.starts.forSnapshot(rd)
		for num := range docs {
			id, err := rd.ExternalID(bindex.NewIndexInternalID(nil, num))
			if err != nil {
				t.Fatalf("%s: document %d: %v", stage, num, err)
			}
			want, err := parseDocID(id)
			if err != nil {
				t.Fatalf("%s: document %d has ID %q", stage, num, id)
			}
			got, ok, err := r.start(num)
			if err != nil || !ok || got != want {
				t.Fatalf("%s, pass %d: document %d: start %d (ok %v, err %v), want %d", stage, pass, num, got, ok, err, want)
			}
		}
	}
	return docs, segs
}

func TestBlockStartsStayRightAcrossSegmentsMergesAndDeletions(t *testing.T) {
	defer func() { testMergePlan = nil }()
	testMergePlan = map[string]interface{}{"MaxSegmentsPerTier": 1000, "SegmentsPerMergeTask": 10,
		"FloorSegmentSize": 1, "TierGrowth": 10.0, "MaxSegmentSize": 5_000_000}
	dir, st := newStore(t)
	ctx := context.Background()
	// More segments than the cache keeps once they are merged away
	// (twice the current ones plus 16); one index opening per session
	// gives one segment on disk each (within one, Bleve may merge them
	// before they are written).
	const sessions = 20
	for s := range sessions {
		x := openIndex(t, dir, st, Options{})
		var texts []string
		for i := range BlockSize*(s%4+1) + 3 {
			texts = append(texts, fmt.Sprintf("session %d entry %d", s, i))
		}
		pushTexts(t, st, fmt.Sprintf("s%d", s), texts)
		if _, err := x.CatchUp(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	x := openIndex(t, dir, st, Options{})
	defer x.Close()
	n, err := x.WarmBlockStarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	docs, segs := checkBlockStarts(t, x, "a segment a session")
	if segs < sessions || uint64(n) != docs {
		t.Fatalf("warm-up read %d of %d documents in %d segments; want all of them, in %d segments or more", n, docs, segs, sessions)
	}
	if n, err := x.WarmBlockStarts(ctx); err != nil || n != 0 {
		t.Fatalf("a second warm-up read %d documents (%v), want none", n, err)
	}

	cached := func() int {
		x.starts.mu.Lock()
		defer x.starts.mu.Unlock()
		return len(x.starts.segs)
	}
	if got := cached(); got != segs {
		t.Fatalf("the cache holds %d segments, the index %d", got, segs)
	}

	// Merged: the documents are renumbered in a new segment, and the
	// cache forgets the segments merged away.
	if err := x.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, segs := checkBlockStarts(t, x, "compacted"); segs != 1 {
		t.Fatalf("%d segments after compacting, want 1", segs)
	}
	if got := cached(); got != 1 {
		t.Fatalf("after merging %d segments into one the cache holds %d", segs, got)
	}

	// Deleted and rebuilt blocks come in new segments.
	if _, err := st.DropSession("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkBlockStarts(t, x, "after a deletion")
}
