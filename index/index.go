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
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/pi-history/pi-history/store"
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
