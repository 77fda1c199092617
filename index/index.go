// Package index keeps a Bleve index of trigrams over the store's searchable
// text, used to find candidate entries for a literal search quickly.
//
// The index is derived data. It follows the store by sequence number: an
// indexer tails the store above the index's "indexed through" mark and
// writes Bleve batches that carry the new mark in the same batch, so after a
// crash the mark and the documents agree and indexing resumes from the mark.
// Search must treat entries above the mark as not indexed (scan them), and
// must confirm every candidate against the stored text: a trigram match is
// only a candidate. Reindex rebuilds the whole index from the store into a
// new directory and swaps it in.
//
// The unit of the index is a block: BlockSize consecutive seqs, indexed as
// one document holding the distinct trigrams of all their texts. Entries of
// one block share most of their trigrams (the same code, the same words), so
// a block costs the index far fewer postings than its entries would one by
// one, and building the index is several times faster; a candidate block is
// confirmed by scanning its (at most BlockSize) texts, which is cheap. Only
// complete blocks are indexed: the mark always ends a block, and the newest
// entries above it, fewer than BlockSize, are scanned by search.
//
// A block's document does not hold every trigram: of every trigram.Window
// consecutive trigrams of a text, only the one a fixed order ranks first
// (trigram.Selected), and no trigram that has become common (common.go). A
// needle that holds a whole window selects the same trigrams as every text
// that holds it, so those are what a search asks for; a shorter needle is
// scanned. Half the postings of every trigram, for the same answers.
package index

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/pi-history/pi-history/store"
	"github.com/pi-history/pi-history/trigram"
)

const (
	fieldText = "t"
	fieldSeq  = "s"
	markKey   = "indexed_through"
	blockKey  = "block_size"
)

// DefaultBatchBytes bounds one Bleve batch by text bytes unless
// Options.BatchBytes says otherwise. Bleve holds a batch's analysed terms,
// ~30 bytes per byte of text, and up to writers+2 batches are in memory
// (being built by Bleve, analysed, waiting): 2 MB keeps that near 250 MB.
// (Peak RSS of a 351 MB import with two batches in memory: 873 MB, against
// 1,238 MB with 4 MB batches, for ~15% more CPU in segment merges.)
const DefaultBatchBytes = 2 << 20

// BlockSize is the number of consecutive seqs indexed as one document.
const BlockSize = 16

// blockOf returns the first and last seq of the block holding seq.
func blockOf(seq uint64) (uint64, uint64) {
	lo := (seq-1)/BlockSize*BlockSize + 1
	return lo, lo + BlockSize - 1
}

// Block is a range of seqs proposed by the index.
type Block struct{ Lo, Hi uint64 }

// Index is an open trigram index that follows a store.
type Index struct {
	st      *store.Store
	dir     string
	log     *slog.Logger
	mu      sync.RWMutex // guards bi against a swap by Reindex
	bi      bleve.Index
	through atomic.Uint64
	wmu     sync.Mutex              // one indexing pass at a time
	failing atomic.Pointer[Failure] // set while Run's passes fail
	common  atomic.Pointer[commonSet]
	starts  blockStarts // block starts of documents, per segment
	ct      counter     // guarded by wmu
	// savedCommon is the common set the last mark batch wrote (wmu)
	savedCommon *commonSet
	// scheme is what the index's blocks hold, fixed by the analyzer
	// version that made it: an index of an earlier version keeps being
	// written as it was, so that the binaries that made it can still read
	// it ('pi-history reindex' upgrades it). Written under wmu and mu
	// (by Reindex), read under either.
	scheme     scheme
	bulk       bool // opened with Options.Bulk
	batchBytes int  // text bytes per batch (Options.BatchBytes)
	readOnly   bool // opened with Options.ReadOnly: never written

	changed chan struct{}
	cmu     sync.Mutex

	// persisted is closed when the newest batch reaches disk; Close waits
	// for it so that a clean shutdown needs no replay.
	pmu       sync.Mutex
	persisted chan struct{}
}

// Open opens or creates the index in dir for store st.
func Open(dir string, st *store.Store, log *slog.Logger) (*Index, error) {
	return OpenWith(dir, st, Options{Log: log})
}

// Options configure OpenWith.
type Options struct {
	Log *slog.Logger // nil: discard
	// Bulk merges segments for a process that loads much at once (see
	// bulkMergePlan); a long-running server leaves it false.
	Bulk bool
	// BatchBytes bounds one Bleve batch by text bytes (DefaultBatchBytes
	// when 0): smaller batches take less memory and more CPU.
	BatchBytes int
	// ReadOnly opens an existing index for reading only and writes
	// nothing to dir (a data directory this process cannot write to). Such
	// an index is not run; searches scan what it lacks.
	ReadOnly bool
}

// OpenWith opens or creates the index in dir for store st.
func OpenWith(dir string, st *store.Store, o Options) (*Index, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ReadOnly {
		return openReadOnly(dir, st, log)
	}
	bi, err := openBleve(dir, o.Bulk)
	if err != nil {
		return nil, err
	}
	// An index built with another block size cannot be read: its documents
	// cover other seq ranges. It is derived data, so it is rebuilt.
	if v, err := bi.GetInternal([]byte(blockKey)); err == nil && string(v) != strconv.Itoa(BlockSize) {
		mark, _ := bi.GetInternal([]byte(markKey))
		if len(v) > 0 || len(mark) > 0 {
			log.Warn("index was built with another block size; rebuilding it from the store", "dir", dir, "was", string(v), "now", BlockSize)
			bi.Close()
			if err := os.RemoveAll(dir); err != nil {
				return nil, fmt.Errorf("index: remove outdated index %s: %w", dir, err)
			}
			if bi, err = openBleve(dir, o.Bulk); err != nil {
				return nil, err
			}
		}
	}
	x := newIndex(st, dir, log, bi)
	x.bulk = o.Bulk
	if o.BatchBytes > 0 {
		x.batchBytes = o.BatchBytes
	}
	if err := x.loadMark(); err != nil {
		bi.Close()
		return nil, err
	}
	if err := x.fallBackTo(st.LastSeq()); err != nil {
		bi.Close()
		return nil, err
	}
	return x, nil
}

// openReadOnly opens the index in dir for reading only. A missing index,
// one of another block size or one whose mark lies past the store's last
// entry would need writing to be used; each is an error saying so.
func openReadOnly(dir string, st *store.Store, log *slog.Logger) (*Index, error) {
	if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err != nil {
		return nil, fmt.Errorf("index: open %s for reading: %w (the data directory cannot be written, so the index cannot be made; open it once where it can be written)", dir, err)
	}
	bi, err := bleve.OpenUsing(dir, map[string]interface{}{"read_only": true})
	if err != nil {
		return nil, fmt.Errorf("index: open %s for reading: %w", dir, err)
	}
	if v, err := bi.GetInternal([]byte(blockKey)); err == nil && len(v) > 0 && string(v) != strconv.Itoa(BlockSize) {
		bi.Close()
		return nil, fmt.Errorf("index: %s was built with blocks of %s entries, this version uses %d; open the data directory once where it can be written, to rebuild the index", dir, v, BlockSize)
	}
	x := newIndex(st, dir, log, bi)
	if err := x.loadMark(); err != nil {
		bi.Close()
		return nil, err
	}
	if x.through.Load() > st.LastSeq() {
		bi.Close()
		return nil, fmt.Errorf("index: the mark of %s lies past the store's last entry (%d); open the data directory once where it can be written, to index it again", dir, st.LastSeq())
	}
	x.readOnly = true
	return x, nil
}

// FellBackWarning is what the log says when an index's mark lay past the
// store's last entry and fell back (see fallBackTo).
const FellBackWarning = "index: its mark lies past the store's last entry (the store lost entries the index had seen); indexing again from the last whole block"

// fallBackTo moves a mark that lies past the store's last entry back to the
// last whole block below it. Only a store that lost entries the index had
// seen leaves such a mark (an import's store shows the indexer nothing a
// crash can take back, but older binaries did), and the store gives those
// seqs to other entries: the index would never look at them again. Blocks
// below the new mark hold the entries the store kept; those above it are
// indexed again as the store refills them, their documents replaced (a
// document above the mark is never a candidate meanwhile).
func (x *Index) fallBackTo(last uint64) error {
	mark := x.through.Load()
	if mark <= last {
		return nil
	}
	to := Target(last)
	x.log.Warn(FellBackWarning, "dir", x.dir, "mark", mark, "store", last, "from", to+1)
	if err := x.advance(to); err != nil {
		return fmt.Errorf("index: move the mark of %s back from %d to %d, below the store's last entry: %w", x.dir, mark, to, err)
	}
	return nil
}

// scheme is what the documents of an index hold of their blocks' text.
type scheme uint8

const (
	// schemeSelected (AnalyzerName): the trigrams that windows select
	// (trigram.Window), except common ones.
	schemeSelected scheme = iota
	// schemeUncommon (v2): every trigram except common ones.
	schemeUncommon
	// schemeEvery (v1): every trigram.
	schemeEvery
)

// analyzerOf names the analyzer version of each scheme.
var analyzerOf = [...]string{schemeSelected: AnalyzerName, schemeUncommon: analyzerV2, schemeEvery: analyzerV1}

// schemeOf tells the scheme of an index by the analyzer its mapping names;
// a name it does not know keeps every trigram, which no reader can miss.
func schemeOf(bi bleve.Index) scheme {
	m, ok := bi.Mapping().(*mapping.IndexMappingImpl)
	if !ok {
		return schemeSelected
	}
	for sc, name := range analyzerOf {
		if m.DefaultAnalyzer == name {
			return scheme(sc)
		}
	}
	return schemeEvery
}

func newIndex(st *store.Store, dir string, log *slog.Logger, bi bleve.Index) *Index {
	x := &Index{st: st, dir: dir, log: log, bi: bi, changed: make(chan struct{}), batchBytes: DefaultBatchBytes}
	x.common.Store(emptyCommon)
	x.scheme = schemeOf(bi)
	return x
}

// Format names the analyzer version whose scheme the index follows
// (AnalyzerName, or an older one that 'pi-history reindex' upgrades).
func (x *Index) Format() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return analyzerOf[x.scheme]
}

// blockSet returns a trigram set that analyses blocks as the index's
// scheme wants them.
func (x *Index) blockSet() *trigramSet {
	return &trigramSet{winnow: x.scheme == schemeSelected}
}

func newMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	tf := bleve.NewTextFieldMapping()
	tf.Analyzer = AnalyzerName
	tf.Store, tf.IncludeTermVectors, tf.DocValues, tf.SkipFreqNorm = false, false, false, true
	doc.AddFieldMappingsAt(fieldText, tf)
	nf := bleve.NewNumericFieldMapping()
	nf.Store, nf.DocValues = false, false
	doc.AddFieldMappingsAt(fieldSeq, nf)
	m.DefaultMapping = doc
	return m
}

// bulkMergePlan is how Scorch merges segments during a bulk load (an
// import by the CLI, a reindex). Its default plan counts segment sizes in
// documents from a floor of 2,000, and our documents are blocks (~15,600
// at a million entries), so while batches pour in it keeps the whole index
// in a few segments by rewriting the biggest again and again: a 297 MB
// import wrote 458 MB of merged segments for a 55 MB index. Counted in
// bytes from a 4 MB floor, 20 segments to a tier, it writes 165 MB and
// the import takes 70 s instead of 85 (1M entries: 367 -> 339 s). A
// server keeps the default: its batches are small and few segments make
// each search cheaper (in-process searches of a 100k corpus under a writer
// ran ~25% slower with this plan).
var bulkMergePlan = map[string]interface{}{
	"MaxSegmentsPerTier":   20,
	"TierGrowth":           10.0,
	"SegmentsPerMergeTask": 10,
	"FloorSegmentFileSize": 4 << 20,
	"FloorSegmentSize":     2000,
	"MaxSegmentSize":       5_000_000,
	"MaxSegmentFileSize":   4 << 30,
	"ReclaimDeletesWeight": 2.0,
}

// testMergePlan, when set (by tests only), replaces the merge plan of
// every index opened.
var testMergePlan map[string]interface{}

func openBleve(dir string, bulk bool) (bleve.Index, error) {
	cfg := map[string]interface{}{"unsafe_batch": true}
	switch {
	case testMergePlan != nil:
		cfg["scorchMergePlanOptions"] = testMergePlan
	case bulk:
		cfg["scorchMergePlanOptions"] = bulkMergePlan
	}
	if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err == nil {
		bi, err := bleve.OpenUsing(dir, cfg)
		if err == nil {
			return bi, nil
		}
		if holdsSegments(dir) {
			return nil, fmt.Errorf("index: open %s: %w (run 'pi-history reindex' to rebuild it from the store)", dir, err)
		}
		// No segment: an index whose creation was cut short (killed
		// before its mapping reached disk, which persistNew waits for).
		// It holds nothing, so it is made again.
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a directory without index_meta.json, or without a mapping, is a half-created index
	bi, err := bleve.NewUsing(dir, newMapping(), "scorch", "scorch", cfg)
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	}
	if err := persistNew(bi); err != nil {
		bi.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	}
	return bi, nil
}

// holdsSegments reports whether the index in dir has a segment file: an
// index without one holds nothing the store cannot give again.
func holdsSegments(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
	return len(m) > 0
}

// persistNew waits until a new index's mapping is on disk. Bleve keeps it
// with the index's internal values, which reach disk with the first
// persisted snapshot; with unsafe batches, closing the index before that
// leaves a directory that cannot be opened (seen under CPU load when an
// import stored too few entries to index a block).
func persistNew(bi bleve.Index) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := bi.NewBatch()
	b.SetInternal([]byte(blockKey), []byte(strconv.Itoa(BlockSize)))
	if err := batchPersisted(ctx, bi, b); err != nil {
		return fmt.Errorf("write the new index to disk: %w", err)
	}
	return nil
}

// batchPersisted applies b to bi and waits until it is on disk.
func batchPersisted(ctx context.Context, bi bleve.Index, b *bleve.Batch) error {
	done := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := bi.Batch(b); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (x *Index) loadMark() error {
	v, err := x.bi.GetInternal([]byte(markKey))
	if err != nil {
		return fmt.Errorf("index: read mark: %w", err)
	}
	if len(v) == 8 {
		x.through.Store(binary.BigEndian.Uint64(v))
	}
	v, err = x.bi.GetInternal([]byte(commonKey))
	if err != nil {
		return fmt.Errorf("index: read common trigrams: %w", err)
	}
	c := emptyCommon
	if len(v) > 0 {
		if c, err = decodeCommon(v); err != nil {
			return err
		}
	}
	x.common.Store(c)
	x.savedCommon = c
	x.ct = counter{}
	return nil
}

// IndexedThrough is the highest seq whose entry is in the index: every
// entry at or below it is indexed, none above it is. It always ends a block.
func (x *Index) IndexedThrough() uint64 { return x.through.Load() }

// Target is the mark the index reaches once it has caught up with a store
// whose last seq is last: the end of the last complete block.
func Target(last uint64) uint64 { return last / BlockSize * BlockSize }

// Lag is how many entries the index still has to take in, with its mark at
// through and the store's last seq at last: the entries below Target(last)
// it has not reached. The newest entries, less than a block, are searched
// by scanning the store and are not lag, so that a caught-up index reports
// 0 (every place that reports the lag reports this figure).
func Lag(through, last uint64) uint64 {
	if t := Target(last); t > through {
		return t - through
	}
	return 0
}

// CommonTrigrams is how many trigrams the index has declared common (see
// common.go).
func (x *Index) CommonTrigrams() int { return len(x.common.Load().keys) }

// Changed returns a channel closed when the mark next moves.
func (x *Index) Changed() <-chan struct{} {
	x.cmu.Lock()
	defer x.cmu.Unlock()
	return x.changed
}

// Close closes the index. Batches not yet persisted are replayed from the
// store on the next Open.
func (x *Index) Close() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.pmu.Lock()
	done := x.persisted
	x.pmu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			x.log.Warn("index: last batch not persisted after 30s; it will be replayed on next start")
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.bi.Close()
}

// Failure is why indexing has failed since a time.
type Failure struct {
	Cause string
	Since time.Time
}

// Failing reports why Run's passes fail, or nil while they succeed.
// Searches go on meanwhile, scanning what is not indexed.
func (x *Index) Failing() *Failure { return x.failing.Load() }

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

// Plan is how the index would answer a needle.
type Plan struct {
	// Trigrams are the distinct trigrams of the needle the plan uses: the
	// uncommon ones that the index's blocks hold (in an index of selected
	// trigrams, those the needle's windows select), or the first of them
	// when those were selective enough (see planEnough).
	Trigrams []string
	// AllCommon is set when every trigram of the needle is common (see
	// common.go): the index cannot narrow the needle down, so the caller
	// scans, testing each entry's sketch.
	AllCommon bool
	Zero      string // a trigram no document has: nothing indexed can match
	Rarest    uint64 // document frequency of the rarest trigram

	// Direct is set when the rarest trigram was rare enough for PlanNeedle
	// to intersect the postings of every trigram itself: Blocks then holds,
	// in ascending order, the start of every block holding all the
	// trigrams, as of an index state at least as new as the mark read
	// before the call. Window selects from it what Candidates would return.
	Direct bool
	Blocks []uint64
	// Broad is set instead of Direct when the intersection found more
	// blocks than the bound given to PlanNeedleWithin: it stopped there,
	// and the caller is to scan rather than test that many blocks.
	Broad bool
}

// directMax bounds the document frequency of a needle's rarest trigram for
// which PlanNeedle intersects postings over the whole index at once (the
// work is proportional to it); above it, Candidates intersects one window
// of seqs at a time (the documents of the window, from the block starts
// the index keeps per segment, with the trigrams' postings). At a million
// entries, needles whose rarest trigram is in ~3,000 blocks took 7-10 ms
// warm with this bound against 9-12 ms at 2,048 (when windows were range
// queries on a numeric seq field).
const directMax = 8192

// A plan stops looking up trigrams once it has planAtLeast of them and one
// is in at most planEnough blocks. Each lookup opens a reader on every
// segment, which was the largest allocation of a selective search; a
// word-long needle has a dozen trigrams or more.
const (
	planAtLeast = 4
	planEnough  = 64
)

// ErrNoTrigrams means the needle is shorter than three characters: the
// index cannot narrow it down and the caller must scan.
var ErrNoTrigrams = errors.New("needle has fewer than 3 characters")

// ErrNoWindow means the needle holds no whole window of trigrams (it is
// shorter than trigram.Window+2 characters), and the index holds only the
// trigrams windows select: the index cannot narrow it down and the caller
// must scan.
var ErrNoWindow = fmt.Errorf("needle has fewer than %d characters, the shortest the index can narrow down", trigram.Window+2)

// needleTrigrams returns the trigrams of needle that blocks holding it
// hold under the index's scheme (before common ones are left out), or why
// there are none. The caller holds mu.
func (x *Index) needleTrigrams(needle string) ([]string, error) {
	trs := trigram.Distinct
	if x.scheme == schemeSelected {
		trs = trigram.Selected
	}
	switch out := trs(needle); {
	case len(out) > 0:
		return out, nil
	case utf8.RuneCountInString(needle) < 3:
		return nil, ErrNoTrigrams
	}
	return nil, ErrNoWindow
}

// PlanNeedle looks up the document frequency of the needle's trigrams and,
// when the rarest is rare enough, the candidate blocks (see Plan.Direct).
func (x *Index) PlanNeedle(needle string) (Plan, error) {
	return x.PlanNeedleContext(context.Background(), needle)
}

// PlanNeedleContext is PlanNeedle with a context for the intersection.
func (x *Index) PlanNeedleContext(ctx context.Context, needle string) (Plan, error) {
	return x.PlanNeedleWithin(ctx, needle, 0)
}

// PlanNeedleWithin is PlanNeedleContext that stops intersecting once more
// than maxBlocks blocks hold every trigram and answers Broad (0: no bound).
func (x *Index) PlanNeedleWithin(ctx context.Context, needle string, maxBlocks int) (Plan, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var p Plan
	var err error
	if p.Trigrams, err = x.needleTrigrams(needle); err != nil {
		return p, err
	}
	rd, common, err := x.snapshot()
	if err != nil {
		return p, err
	}
	defer rd.Close()
	if p.Trigrams = common.uncommon(p.Trigrams); len(p.Trigrams) == 0 {
		p.AllCommon = true
		return p, nil
	}
	tfrs := make([]bindex.TermFieldReader, 0, len(p.Trigrams))
	defer func() {
		for _, t := range tfrs {
			t.Close()
		}
	}()
	p.Rarest = ^uint64(0)
	for i, t := range p.Trigrams {
		tfr, err := rd.TermFieldReader(ctx, []byte(t), fieldText, false, false, false)
		if err != nil {
			return p, err
		}
		tfrs = append(tfrs, tfr)
		c := tfr.Count()
		if c == 0 {
			p.Zero, p.Rarest = t, 0
			return p, nil
		}
		if c < p.Rarest {
			p.Rarest = c
		}
		if len(tfrs) >= planAtLeast && p.Rarest <= planEnough && i+1 < len(p.Trigrams) {
			// Enough to narrow the needle to a few blocks: the sketches
			// test the other trigrams for less than their readers cost.
			p.Trigrams = p.Trigrams[:i+1]
			break
		}
	}
	if p.Rarest > directMax {
		return p, nil
	}
	blocks, err := intersect(ctx, x.starts.forSnapshot(rd), tfrs, maxBlocks)
	if err != nil {
		return p, fmt.Errorf("index: search: %w", err)
	}
	if maxBlocks > 0 && len(blocks) > maxBlocks {
		p.Broad = true
		return p, nil
	}
	p.Direct, p.Blocks = true, blocks
	return p, nil
}

// leapfrog walks term readers forward together, as Bleve's conjunction
// does, without the search machinery around it: each reader is moved to
// its first document at or after a target, and remembers where it stands.
type leapfrog struct {
	rs      []bindex.TermFieldReader
	docs    []bindex.TermFieldDoc // one each: a reader keeps its doc's ID
	cur     []uint64
	started []bool
	target  bindex.IndexInternalID
}

func newLeapfrog(rs []bindex.TermFieldReader) *leapfrog {
	n := len(rs)
	return &leapfrog{rs: rs, docs: make([]bindex.TermFieldDoc, n), cur: make([]uint64, n),
		started: make([]bool, n), target: bindex.NewIndexInternalID(nil, 0)}
}

// seek moves reader i to its first document at or after t; ok is false
// when it has none.
func (l *leapfrog) seek(i int, t uint64) (doc uint64, ok bool, err error) {
	if l.started[i] && l.cur[i] >= t {
		return l.cur[i], true, nil
	}
	l.target.SetValue(t)
	d, err := l.rs[i].Advance(l.target, &l.docs[i])
	if err != nil || d == nil {
		return 0, false, err
	}
	l.started[i], l.cur[i] = true, d.ID.Value()
	return l.cur[i], true, nil
}

// align seeks the readers from the one numbered from on to document t: it
// returns t when they all hold it, else the first document past t of the
// first one that does not (no document before it can be in all of them);
// ok is false once a reader has no document left at or after t.
func (l *leapfrog) align(t uint64, from int) (next uint64, ok bool, err error) {
	for i := from; i < len(l.rs); i++ {
		v, ok, err := l.seek(i, t)
		if err != nil || !ok || v != t {
			return v, ok, err
		}
	}
	return t, true, nil
}

// intersect returns, ascending, the block starts of the documents in every
// postings list of tfrs, leapfrogging from the rarest list; ids turns
// document numbers into block starts. With limit > 0 it stops at limit+1
// blocks.
func intersect(ctx context.Context, ids *resolver, tfrs []bindex.TermFieldReader, limit int) ([]uint64, error) {
	rs := slices.Clone(tfrs)
	slices.SortStableFunc(rs, func(a, b bindex.TermFieldReader) int { return cmp.Compare(a.Count(), b.Count()) })
	l := newLeapfrog(rs)
	// At most the rarest reader's documents match: sized once instead of
	// grown (growing them was ~8% of the CPU of slow index-planned
	// first pages, in a profile of 50 of them).
	out := make([]uint64, 0, min(rs[0].Count(), 1<<16))
	for t, steps := uint64(0), 0; limit <= 0 || len(out) <= limit; steps++ {
		if steps%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v, ok, err := l.seek(0, t)
		if err == nil && ok {
			t = v
			v, ok, err = l.align(t, 1)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if v != t {
			t = v
			continue
		}
		if out, err = appendStart(out, ids, t); err != nil {
			return nil, err
		}
		t++
	}
	slices.Sort(out)
	return out, nil
}

// intersectWithin returns, ascending, the block starts of the documents
// of within (ascending global numbers) that every reader of tfrs holds:
// the leapfrog of intersect, led by the list.
func intersectWithin(ctx context.Context, ids *resolver, tfrs []bindex.TermFieldReader, within []uint64) ([]uint64, error) {
	l := newLeapfrog(tfrs)
	var out []uint64
	for j, steps := 0, 0; j < len(within); steps++ {
		if steps%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		t := within[j]
		v, ok, err := l.align(t, 0)
		if err != nil {
			return nil, err
		}
		if !ok {
			break // a reader is done: nothing more
		}
		if v != t {
			// Skip the documents of the list before v.
			j += sort.Search(len(within)-j, func(k int) bool { return within[j+k] >= v })
			continue
		}
		if out, err = appendStart(out, ids, t); err != nil {
			return nil, err
		}
		j++
	}
	slices.Sort(out)
	return out, nil
}

// appendStart appends the block start of document num to out, unless its
// ID is not a block's.
func appendStart(out []uint64, ids *resolver, num uint64) ([]uint64, error) {
	b, ok, err := ids.start(num)
	if err != nil || !ok {
		return out, err
	}
	return append(out, b), nil
}

// Window returns what Candidates(ctx, p.Trigrams, lo, hi) returns, from a
// Direct plan's blocks: the blocks overlapping [lo, hi], clipped to it, in
// ascending order. hi must not exceed the mark read before PlanNeedle.
func (p *Plan) Window(lo, hi uint64) []Block {
	if lo > hi {
		return nil
	}
	first, _ := blockOf(lo)
	i, _ := slices.BinarySearch(p.Blocks, first)
	j, _ := slices.BinarySearch(p.Blocks[i:], hi+1)
	out := make([]Block, 0, j)
	for ; i < len(p.Blocks) && p.Blocks[i] <= hi; i++ {
		b := p.Blocks[i]
		blk := Block{Lo: max(b, lo), Hi: min(b+BlockSize-1, hi)}
		if blk.Lo <= blk.Hi {
			out = append(out, blk)
		}
	}
	return out
}

// Candidates returns, in ascending order, the blocks overlapping [lo, hi]
// whose indexed text holds every trigram of the needle, clipped to
// [lo, hi]. hi is capped at the mark. trigrams that have become common
// since the plan was made are dropped; when none is left, the whole range
// is one candidate. The window's documents are found by their block
// starts (see resolver.docsIn), so block documents need no seq field.
func (x *Index) Candidates(ctx context.Context, trigrams []string, lo, hi uint64) ([]Block, error) {
	if m := x.through.Load(); hi > m {
		hi = m
	}
	if lo > hi || len(trigrams) == 0 {
		return nil, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	rd, common, err := x.snapshot()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if trigrams = common.uncommon(trigrams); len(trigrams) == 0 {
		return []Block{{Lo: lo, Hi: hi}}, nil
	}
	tfrs := make([]bindex.TermFieldReader, 0, len(trigrams))
	defer func() {
		for _, t := range tfrs {
			t.Close()
		}
	}()
	for _, t := range trigrams {
		tfr, err := rd.TermFieldReader(ctx, []byte(t), fieldText, false, false, false)
		if err != nil {
			return nil, fmt.Errorf("index: search: %w", err)
		}
		tfrs = append(tfrs, tfr)
	}
	first, _ := blockOf(lo)
	ids := x.starts.forSnapshot(rd)
	within, err := ids.docsIn(ctx, first, hi)
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	starts, err := intersectWithin(ctx, ids, tfrs, within)
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	out := make([]Block, 0, len(starts))
	for _, b := range starts {
		if blk := (Block{Lo: max(b, lo), Hi: min(b+BlockSize-1, hi)}); blk.Lo <= blk.Hi {
			out = append(out, blk)
		}
	}
	return out, nil
}

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
