package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/pi-history/pi-history/trigram"
)

// Run indexes new entries as the store commits them, until ctx ends.
func (x *Index) Run(ctx context.Context) {
	if x.readOnly {
		<-ctx.Done()
		return
	}
	var failing time.Time // when the current run of failures began
	failures := 0
	for {
		ch := x.st.Changed()
		_, err := x.CatchUp(ctx, nil)
		if err == nil && failures > 0 {
			x.log.Info("indexing works again", "failingFor", time.Since(failing).Round(time.Millisecond).String(), "failures", failures)
			failures = 0
			x.failing.Store(nil)
		}
		if err != nil && ctx.Err() == nil {
			// Said once per run of failures (a full disk fails every
			// try), and again once indexing works.
			if failures == 0 {
				failing = time.Now()
				x.failing.Store(&Failure{Cause: err.Error(), Since: failing})
				x.log.Error("indexing failed; retrying every second, searches scan what is not indexed meanwhile", "err", err)
			}
			failures++
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// writers is how many batches Bleve may build at once. Bleve builds a
// batch's segment in the goroutine that calls Batch, so with one batch at
// a time indexing used one core: an import read its files in half its
// time and then indexed alone on one core and a half.
const writers = 2

// CatchUp indexes every stored entry above the mark and applies pending
// deletions. progress, if set, is called after each batch with the mark.
//
// Batches are pipelined: one goroutine reads the next batch from the store
// and works out its trigrams while Bleve builds the segments of up to
// writers earlier ones, each in its own goroutine. Those may be applied in
// any order, so they carry no mark: once a batch and every one before it
// are applied, a batch of its own moves the mark past it (advance), and
// only then do readers see the new mark. Documents of a batch applied
// before an earlier one lie above the mark meanwhile, where searches do
// not look (they scan the store above it), and a crash leaves them to be
// indexed again.
func (x *Index) CatchUp(ctx context.Context, progress func(through uint64)) (int, error) {
	if x.readOnly {
		return 0, nil
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if err := x.applyDeletes(); err != nil {
		return 0, err
	}
	from := x.through.Load() + 1
	if from > x.st.LastSeq() {
		return 0, nil
	}
	type built struct {
		p   pendingBatch
		err error
	}
	cb := &commonBuilder{set: x.common.Load()}
	if x.scheme != schemeEvery {
		if !x.ct.loaded {
			if err := x.loadCounts(); err != nil {
				return 0, err
			}
		}
		cb.ct = &x.ct
	}
	next := make(chan built, 1)
	set := x.blockSet()
	building := false
	build := func(from uint64) {
		building = true
		go func() {
			p, err := x.build(set, cb, from, x.st.LastSeq())
			next <- built{p, err}
		}()
	}
	type flight struct {
		p    pendingBatch
		done chan error
	}
	var (
		inFlight []flight
		total    int
		failed   error
	)
	// finish waits for the oldest batch in flight and moves the mark past
	// it, unless it or one before it failed.
	finish := func() {
		f := inFlight[0]
		inFlight = inFlight[1:]
		err := <-f.done
		if failed != nil {
			return
		}
		if err == nil {
			err = x.advance(f.p.through)
		}
		if err != nil {
			failed = err
			return
		}
		total += len(f.p.docs)
		if progress != nil {
			progress(f.p.through)
		}
	}
	build(from)
	for building && failed == nil {
		b := <-next // nothing is being built after this until build is called
		building = false
		if b.err != nil {
			failed = b.err
			break
		}
		if b.p.through < b.p.from {
			break // only an incomplete block is left
		}
		if ctx.Err() == nil {
			build(b.p.through + 1) // an empty batch ends the loop
		}
		if b.p.common != nil {
			// Readers learn of the new common trigrams before any document
			// that leaves them out can be in their snapshot. Batches start
			// in the order they were built, so the set only grows.
			x.common.Store(b.p.common)
		}
		f := flight{p: b.p, done: make(chan error, 1)}
		go func() { f.done <- x.write(f.p) }()
		inFlight = append(inFlight, f)
		for len(inFlight) >= writers || len(inFlight) > 0 && failed != nil {
			finish()
		}
	}
	for len(inFlight) > 0 {
		finish()
	}
	if building {
		<-next
	}
	if failed != nil {
		x.ct.loaded = false // counted blocks that were not written
		return total, failed
	}
	return total, ctx.Err()
}

// pendingBatch is the documents of the complete blocks from..through,
// analysed and ready for Bleve. through < from when there were none.
type pendingBatch struct {
	docs          []*document.Document
	from, through uint64
	common        *commonSet // the common trigrams, when this batch adds some
}

// build reads the complete blocks from the block starting at from up to
// last, until the batch is full, and works out their trigrams with set.
func (x *Index) build(set *trigramSet, cb *commonBuilder, from, last uint64) (pendingBatch, error) {
	p := pendingBatch{from: from, through: from - 1}
	size := 0
	for lo := from; lo+BlockSize-1 <= last && size < x.batchBytes; lo += BlockSize {
		hi := lo + BlockSize - 1
		doc, n, err := x.blockDoc(lo, hi, set, cb)
		if err != nil {
			return p, err
		}
		if doc != nil {
			p.docs = append(p.docs, doc)
		}
		size += n
		p.through = hi
	}
	p.common = cb.next()
	return p, nil
}

// write indexes the documents of a built batch.
func (x *Index) write(p pendingBatch) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b := x.bi.NewBatch()
	for _, doc := range p.docs {
		if err := b.IndexAdvanced(doc); err != nil {
			return fmt.Errorf("index: block %s: %w", doc.ID(), err)
		}
	}
	if err := x.bi.Batch(b); err != nil {
		return fmt.Errorf("index: write batch of blocks %d-%d: %w", p.from, p.through, err)
	}
	return nil
}

// advance moves the mark to through, every block up to it being applied:
// a batch of its own carries the mark, and the common trigrams when they
// changed, so that whatever reaches disk with the mark holds both.
func (x *Index) advance(through uint64) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b := x.bi.NewBatch()
	b.SetInternal([]byte(markKey), binary.BigEndian.AppendUint64(nil, through))
	b.SetInternal([]byte(blockKey), []byte(strconv.Itoa(BlockSize)))
	if err := x.apply(b, x.common.Load()); err != nil {
		return fmt.Errorf("index: write mark %d: %w", through, err)
	}
	x.through.Store(through)
	x.cmu.Lock()
	close(x.changed)
	x.changed = make(chan struct{})
	x.cmu.Unlock()
	return nil
}

// apply applies b as the newest batch (see track), writing the common set
// c in it unless a batch already did: every batch that moves the mark or
// rebuilds blocks below it carries the set its blocks left out.
func (x *Index) apply(b *bleve.Batch, c *commonSet) error {
	if c != x.savedCommon {
		b.SetInternal([]byte(commonKey), c.enc)
	}
	x.track(b)
	if err := x.bi.Batch(b); err != nil {
		return err
	}
	x.savedCommon = c
	return nil
}

// snapshot returns a reader of the index's current snapshot and the
// common trigrams read after it, in that order (see common.go): no
// trigram outside the set is missing from a document the reader sees. The
// caller holds x.mu (read) and closes the reader.
func (x *Index) snapshot() (bindex.IndexReader, *commonSet, error) {
	a, err := x.bi.Advanced()
	if err != nil {
		return nil, nil, err
	}
	rd, err := a.Reader()
	if err != nil {
		return nil, nil, err
	}
	return rd, x.common.Load(), nil
}

// track makes b the newest batch, whose persistence Close waits for.
func (x *Index) track(b *bleve.Batch) {
	done := make(chan struct{})
	b.SetPersistedCallback(func(error) { close(done) })
	x.pmu.Lock()
	x.persisted = done
	x.pmu.Unlock()
}

// loadCounts rebuilds the indexer's counts of blocks per trigram from the
// index's dictionary.
func (x *Index) loadCounts() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	rd, common, err := x.snapshot()
	if err != nil {
		return err
	}
	defer rd.Close()
	n, err := rd.DocCount()
	if err != nil {
		return err
	}
	return x.ct.load(rd, common, n)
}

// sep separates entry texts inside a block document (see trigram.Sep).
const sep = trigram.Sep

// blockDoc builds the document of block [lo, hi], its trigrams worked out
// with set and cb (see trigramSet.analyze); nil when no entry of the
// block has searchable text.
func (x *Index) blockDoc(lo, hi uint64, set *trigramSet, cb *commonBuilder) (*document.Document, int, error) {
	var buf []byte
	err := x.st.ScanTexts(lo, hi, false, func(seq uint64, text []byte) bool {
		if len(buf) > 0 {
			buf = append(buf, sep)
		}
		buf = append(buf, text...)
		return true
	})
	if err != nil {
		return nil, 0, fmt.Errorf("index: read store: %w", err)
	}
	if len(buf) == 0 {
		return nil, 0, nil
	}
	f := &trigramField{value: buf}
	set.analyze(f, cb)
	doc := document.NewDocument(docID(lo))
	doc.AddField(f)
	if x.scheme != schemeSelected {
		// Older schemes keep the numeric seq field their binaries'
		// range queries need (see Candidates).
		doc.AddField(document.NewNumericFieldWithIndexingOptions(fieldSeq, nil, float64(lo), bindex.IndexField))
	}
	return doc, len(buf), nil
}

func (x *Index) applyDeletes() error {
	// Rebuilt blocks leave out the trigrams already common, and count
	// nothing: their blocks were counted when first indexed.
	set, cb := x.blockSet(), &commonBuilder{set: x.common.Load()}
	// In a bulk store a batch that deletes is on disk before its writer
	// lets go, but later entries are not: the blocks are rebuilt from
	// what no crash can take back. Writers are held only when there is
	// something to rebuild (a marker seen without the hold is seen again
	// under it), not at every catch-up.
	if seqs, err := x.st.Deleted(1); err != nil || len(seqs) == 0 {
		return err
	}
	release := x.st.HoldWrites()
	defer release()
	for {
		seqs, err := x.st.Deleted(4096)
		if err != nil || len(seqs) == 0 {
			return err
		}
		x.mu.RLock()
		b := x.bi.NewBatch()
		mark := x.through.Load()
		done := map[uint64]bool{}
		for _, q := range seqs {
			lo, hi := blockOf(q)
			if hi > mark || done[lo] {
				continue // not indexed yet, or already rebuilt in this pass
			}
			done[lo] = true
			doc, _, err := x.blockDoc(lo, hi, set, cb)
			if err != nil {
				x.mu.RUnlock()
				return err
			}
			if doc == nil {
				b.Delete(docID(lo))
			} else if err := b.IndexAdvanced(doc); err != nil {
				x.mu.RUnlock()
				return err
			}
		}
		// The rebuilt blocks lie below the mark: the set they leave out
		// goes to disk with them, should a failed pass have published a
		// set that no mark carried.
		err = x.apply(b, cb.set)
		x.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("index: apply deletions: %w", err)
		}
		if err := x.st.ClearDeleted(seqs); err != nil {
			return err
		}
	}
}

func docID(seq uint64) string { return strconv.FormatUint(seq, 36) }

func parseDocID(id string) (uint64, error) { return strconv.ParseUint(id, 36, 64) }
