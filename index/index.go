// Package index keeps the search's derived data: for every byte trigram of
// the store's searchable texts, the entries that hold it. It is the one
// place search asks which entries of some seq ranges may hold a needle
// (MayHold); the store stays the source of truth, and every candidate is
// confirmed against its text.
//
// The postings lie in files laid out to be read in place (segment.go),
// mapped read-only, so that the pages are the kernel's and the heap holds
// only the open run: the entries past the last file, in memory until a
// run's span of seqs is covered (Options.RunSpan), when they are written
// as a run file. The runs that fill an aligned segment are merged into one
// segment file. Files are derived data: one written by another format
// version, one that fails its checksums and one past the store's last
// entry are deleted and built again from the store. Close saves the open
// run; after a crash it is read again from the store on the next start.
// Ranked word search over sessions (sessions.go) is Bleve's, apart.
package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-history/pi-history/store"
)

// Index is the postings of a store's texts, following the store.
type Index struct {
	st       *store.Store
	dir      string
	log      *slog.Logger
	readOnly bool
	closed   bool      // Close ran (under wmu)
	gather   *gatherer // the writer's (under wmu; see Index.gatherer)
	runSpan  uint32    // seqs a run covers
	segSpan  uint32    // seqs a segment covers

	// fmu guards files and gen; a reader holds it while it reads a
	// mapped file, so a file is unmapped only under the write lock.
	fmu   sync.RWMutex
	files []*postingFile // ascending and contiguous from seq 1
	gen   uint64         // bumped whenever files change
	bad   map[string]error

	// bmu guards open, the run being gathered in memory.
	bmu  sync.RWMutex
	open openRun
	// openSaved says the saved open run (openName) holds the open run as
	// it is: loaded by Open and not changed since, so Close need not
	// write it again (see changeOpen).
	openSaved atomic.Bool

	through atomic.Uint64
	wmu     sync.Mutex // one writer at a time
	failing atomic.Pointer[Failure]

	cmu     sync.Mutex
	changed chan struct{}
}

// openRun is the postings of the entries past the last file: those of the
// run that starts at lo, up to the index's mark.
type openRun struct {
	lo    uint64
	lists *postingLists
}

// Options configure OpenWith.
type Options struct {
	Log *slog.Logger // nil: discard
	// ReadOnly opens existing files for reading only and writes nothing
	// (a data directory this process cannot write to): what they do not
	// cover is scanned.
	ReadOnly bool
	// RunSpan and SegmentSpan are the seqs a run and a segment cover
	// (DefaultRunSpan, DefaultSegmentSpan when 0): powers of two from 16,
	// a segment at most 65,536 and a whole number of runs. Files of other
	// spans are built again. Tests make them small to span many files.
	RunSpan, SegmentSpan uint32
}

// Open opens or creates the index in dir for store st.
func Open(dir string, st *store.Store, log *slog.Logger) (*Index, error) {
	return OpenWith(dir, st, Options{Log: log})
}

// OpenWith opens or creates the index in dir for store st. Files it cannot
// use (another format, corrupt, past the store's last entry, after a gap)
// are deleted, to be built again by CatchUp.
func OpenWith(dir string, st *store.Store, o Options) (*Index, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &Index{st: st, dir: dir, log: log, readOnly: o.ReadOnly, changed: make(chan struct{}), bad: map[string]error{},
		runSpan: cmp.Or(o.RunSpan, DefaultRunSpan), segSpan: cmp.Or(o.SegmentSpan, DefaultSegmentSpan)}
	if r, s := x.runSpan, x.segSpan; r < 16 || r&(r-1) != 0 || s&(s-1) != 0 || s < r || s > maxSpan {
		return nil, fmt.Errorf("index: spans of %d seqs a run and %d a segment are not powers of two from 16 with a segment of at most %d", r, s, maxSpan)
	}
	if !o.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("index: create %s: %w (check the data directory's permissions)", dir, err)
		}
		x.removeStale()
	}
	if err := x.load(st.LastSeq()); err != nil {
		return nil, err
	}
	x.open = openRun{lo: x.through.Load() + 1, lists: newPostingLists(0)}
	x.loadOpen(st.LastSeq())
	return x, nil
}

// removeStale deletes what a crash or an older build left in dir: the
// temporary files of unfinished writes, and the Bleve index of trigram
// blocks that came before these files.
func (x *Index) removeStale() {
	ents, _ := os.ReadDir(x.dir)
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			os.Remove(filepath.Join(x.dir, name))
		case name == "index_meta.json" || name == "store" && e.IsDir():
			x.log.Info("index: removing the Bleve trigram index an older version kept; the postings replace it", "dir", x.dir)
			os.RemoveAll(filepath.Join(x.dir, name))
		}
	}
}

// load opens the files in dir and keeps those that cover seqs 1..n
// without a gap, where n is at most last.
func (x *Index) load(last uint64) error {
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		if os.IsNotExist(err) && x.readOnly {
			return nil
		}
		return fmt.Errorf("index: read %s: %w", x.dir, err)
	}
	var files []*postingFile
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".pg") || e.Name() == openName {
			continue
		}
		path := filepath.Join(x.dir, e.Name())
		f, err := openFile(path)
		if err != nil {
			x.drop(path, err)
			continue
		}
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b *postingFile) int {
		// A segment before the runs it replaces.
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.span, a.span))
	})
	next := uint64(1)
	for _, f := range files {
		switch {
		case f.lo < next:
			// Runs a merge had replaced and a crash left behind.
			x.drop(f.path, nil)
			f.close()
		case f.span != x.runSpan && f.span != x.segSpan:
			x.drop(f.path, fmt.Errorf("covers %d seqs; this index writes runs of %d and segments of %d", f.span, x.runSpan, x.segSpan))
			f.close()
		case f.hi() > last:
			x.log.Warn(PastStoreWarning, "file", filepath.Base(f.path), "covers", fmt.Sprintf("%d-%d", f.lo, f.hi()), "storeLast", last)
			x.drop(f.path, nil)
			f.close()
		case f.lo > next:
			x.drop(f.path, fmt.Errorf("covers seqs %d-%d, past a gap after %d", f.lo, f.hi(), next-1))
			f.close()
		default:
			x.files = append(x.files, f)
			next = f.hi() + 1
		}
	}
	x.through.Store(next - 1)
	return nil
}

// PastStoreWarning is what the log says of a file that covers seqs past
// the store's last entry: the store lost entries the index had seen (an
// import's store shows the index only what no crash can take back), and
// gives those seqs to other entries.
const PastStoreWarning = "index: a postings file covers entries past the store's last one (the store lost entries the index had seen); indexing them again"

// drop deletes a file the index will not use (why: nil for a file merely
// replaced).
func (x *Index) drop(path string, why error) {
	if why != nil {
		x.log.Warn("index: dropping a postings file; its entries are indexed again from the store", "file", filepath.Base(path), "why", why)
	}
	if !x.readOnly {
		os.Remove(path)
	}
}

// IndexedThrough is the highest seq the index has taken in: every entry
// at or below it is in the postings, none above it is.
func (x *Index) IndexedThrough() uint64 { return x.through.Load() }

// Lag is how many entries the index still has to take in, with its mark at
// through and the store's last seq at last.
func Lag(through, last uint64) uint64 {
	if last > through {
		return last - through
	}
	return 0
}

// Format names the layout of the index's files.
func (x *Index) Format() string { return fmt.Sprintf("trigram postings v%d", FormatVersion) }

// Segments is how many files the index has (segments and runs).
func (x *Index) Segments() int {
	x.fmu.RLock()
	defer x.fmu.RUnlock()
	return len(x.files)
}

// DiskSize is the bytes of the index's files.
func (x *Index) DiskSize() int64 {
	x.fmu.RLock()
	defer x.fmu.RUnlock()
	var n int64
	for _, f := range x.files {
		n += int64(len(f.data))
	}
	return n
}

// Changed returns a channel closed when the mark next moves.
func (x *Index) Changed() <-chan struct{} {
	x.cmu.Lock()
	defer x.cmu.Unlock()
	return x.changed
}

func (x *Index) notify() {
	x.cmu.Lock()
	close(x.changed)
	x.changed = make(chan struct{})
	x.cmu.Unlock()
}

// Close saves the open run (see saveOpen) and unmaps the index's files.
func (x *Index) Close() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.fmu.Lock()
	defer x.fmu.Unlock()
	var errs []error
	if !x.readOnly && !x.closed {
		errs = append(errs, x.saveOpen())
	}
	x.closed = true
	for _, f := range x.files {
		errs = append(errs, f.close())
	}
	x.files = nil
	x.gen++
	return errors.Join(errs...)
}

// saveOpen writes the open run as openName, so that the next Open need
// not read its entries from the store again: a one-shot command started
// after a server would otherwise rebuild up to a run's worth of postings
// before its first search. Nothing depends on it: a crash leaves none (or
// a stale one, which loadOpen refuses), and the entries are read again.
// A run loaded from the file and not changed since is there already.
func (x *Index) saveOpen() error {
	through := x.through.Load()
	if through < x.open.lo || x.openSaved.Load() {
		return nil
	}
	_, err := x.open.lists.writeCovering(x.dir, x.open.lo, x.runSpan, uint32(through-x.open.lo+1))
	return err
}

// loadOpen takes the open run saved by the last Close, when it continues
// the files and the store still holds all it covers, and deletes it
// otherwise. A file it takes stays until the open run first changes (see
// changeOpen): a command that only reads leaves it as it found it.
func (x *Index) loadOpen(last uint64) {
	path := filepath.Join(x.dir, openName)
	if _, err := os.Stat(path); err != nil {
		return
	}
	loaded := false
	defer func() {
		if !loaded {
			x.drop(path, nil)
		}
	}()
	f, err := openFile(path)
	if err != nil {
		x.log.Warn("index: the saved open run cannot be read; its entries are read again from the store", "err", err)
		return
	}
	defer f.close()
	through := f.lo + uint64(f.covered) - 1
	if f.lo != x.open.lo || f.span != x.runSpan || through > last {
		return
	}
	lists := newPostingLists(0)
	if err := f.checkAll(); err != nil {
		return
	}
	var buf []uint16
	for i := 0; i < f.keys; i++ {
		c, err := f.entry(i)
		if err == nil {
			if buf, err = c.decode(buf[:0]); err == nil {
				lists.put(f.keyAt(i), buf)
				continue
			}
		}
		x.log.Warn("index: the saved open run fails its checks; its entries are read again from the store", "err", err)
		return
	}
	lists.markOrdered() // a file's keys and offsets are in order
	x.open.lists = lists
	x.through.Store(through)
	loaded = true
	x.openSaved.Store(!x.readOnly)
}

// changeOpen is called before the open run changes (an entry taken in,
// the run written as a file, gathered again): the saved copy of it that
// Open loaded goes first, so that a crash from here on leaves none, as it
// did when Open deleted it (a stale copy could miss a replaced text's
// trigrams).
func (x *Index) changeOpen() {
	if x.openSaved.Load() {
		x.drop(filepath.Join(x.dir, openName), nil)
		x.openSaved.Store(false)
	}
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
	var failing time.Time
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
