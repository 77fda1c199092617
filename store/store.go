// Package store is pi-history's source of truth: every entry of every Pi
// journal it has read, kept in Pebble.
//
// For each entry it keeps the original JSON line byte for byte, its
// searchable text (see package journal), and its place in the session tree.
// For each journal file it keeps how far it has been read, so ingestion
// resumes where it stopped. Every write is a synced Pebble batch: once Apply
// or Push returns, the entries survive kill -9 and a power cut. A store
// opened for a bulk load (Options.Bulk) has no log instead: its writes are
// durable, and only then visible, once flushed (Persist).
//
// Entries get a store-wide sequence number (seq) when first stored. The
// search index (package index) follows the store by seq and is always
// rebuildable from it; nothing here depends on the index.
package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	pihistory "github.com/pi-history/pi-history"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pi-history/pi-history/journal"
)

// Sentinel errors; test with errors.Is. Each has a pihistory.Kind
// (NotFound, Conflict), so every HTTP route answers them alike.
var (
	ErrNotFound = pihistory.Sentinel("not found", pihistory.NotFound)
	ErrConflict = pihistory.ErrConflict
)

// SessionInfo describes one session.
type SessionInfo struct {
	ID            string `json:"id"`
	File          string `json:"file"`
	Cwd           string `json:"cwd"`
	Created       string `json:"created"`
	Version       int    `json:"version"`
	ParentSession string `json:"parentSession,omitempty"`
	Name          string `json:"name"`
	Entries       int    `json:"entries"`
	Searchable    int    `json:"searchable"`
	Bytes         int64  `json:"bytes"`
	LastActivity  string `json:"lastActivity"`
	Leaf          string `json:"leaf"`
	LeafSeq       uint64 `json:"leafSeq"`
	LeafWindow    int    `json:"leafWindow"` // windows on the current branch
	Header        string `json:"header"`     // the header line exactly as written
	// FirstUser is the seq of the session's first user message among its
	// first TitleScan entries (0: none), when FirstUserKnown: the store
	// keeps it from a session's first entry on, so that a title costs one
	// text instead of a walk of the session's records. A record written
	// before it was kept, or whose session had an entry replaced by one
	// of another kind, does not know it (see Store.FirstUser).
	FirstUser      uint64 `json:"firstUser,omitempty"`
	FirstUserKnown bool   `json:"firstUserKnown,omitempty"`
	// FirstTitle is the title line of that message (journal.TitleLine),
	// kept with it so that a title costs no read of the message: "" when
	// the store does not know it (a record written before it was kept;
	// see index.SessionTitle).
	FirstTitle string `json:"firstTitle,omitempty"`
}

// titleFrom keeps the title line of e, stored as m, when m is the
// session's first user message.
func (si *SessionInfo) titleFrom(m *Meta, e *journal.Entry) {
	if si.FirstUserKnown && si.FirstUser != 0 && m.Seq == si.FirstUser {
		si.FirstTitle = journal.TitleLine(e.Text, journal.TitleRunes)
	}
}

// TitleScan is how many entries from a session's start are looked at for
// its first user message (a session's first entries are its model and
// thinking level; a session that begins with more is rare).
const TitleScan = 64

// FileState records how far a journal file has been read.
type FileState struct {
	Path      string        `json:"path"`
	Session   string        `json:"session"`
	Offset    int64         `json:"offset"`    // bytes consumed: always the end of a complete line
	HeadHash  uint64        `json:"headHash"`  // hash of the header line, to notice a rewrite
	TailHash  uint64        `json:"tailHash"`  // hash of the last consumed line
	TailLen   int           `json:"tailLen"`   // its length including the newline
	Parser    journal.State `json:"parser"`    // parser state after Offset
	Skipped   int           `json:"skipped"`   // lines skipped as unreadable, in total
	LastError string        `json:"lastError"` // the last such reason, with its line
}

// Store is an open store. It is safe for concurrent use; writes are serialized.
type Store struct {
	db         *pebble.DB
	dir        string
	cacheBytes int64 // the block cache's size

	readOnly    bool          // opened with Options.ReadOnly
	texts       *textLog      // the texts stored once (see textLogName)
	branchWalks atomic.Uint64 // see BranchesWorkedOut

	wmu     sync.Mutex // serializes writers
	nextSeq uint64
	// lastSeq is the last seq published to readers: nextSeq-1 as of the
	// last commit, published after the commit (under wmu) so that readers
	// never wait for a synced write. In a bulk store, as of the last
	// completed flush instead (see Options.Bulk).
	lastSeq atomic.Uint64
	// committed is nextSeq-1 as of the last commit (under wmu); it runs
	// ahead of lastSeq in a bulk store.
	committed uint64

	// bulk: the store is written without a write-ahead log (Options.Bulk).
	// unflushed counts the batch bytes committed since the last flush was
	// started, deletes says the batch being written leaves deletion
	// markers; both under wmu. flushes tracks the goroutines that publish
	// a started flush once it completes.
	bulk       bool
	flushBytes int
	unflushed  int
	deletes    bool
	flushes    sync.WaitGroup

	cmu     sync.Mutex
	changed chan struct{} // closed and replaced after every commit
	trees   *treeCache

	closed atomic.Bool // Close was called

	// fs is the file system the store lives in; reserve the free space
	// under which writes are refused (see Options.ReserveBytes). faults
	// tracks what keeps the store from working normally; probes are the
	// goroutines watching for space to come back, ended by stop.
	// sharedMin is Options.SharedTextMin; sums maps the SHA-256 of the
	// texts the batch being written stored once to their references (see
	// share), under wmu: emptied as each write call starts, so that a
	// batch never committed leaves nothing behind.
	sharedMin int
	sums      map[[16]byte]TextRef

	fs         vfs.FS
	reserve    int64
	probeEvery time.Duration
	faults     faults
	probes     sync.WaitGroup
	stop       chan struct{}
}

// Open opens (creating if needed) the store in dir. The caller must hold the
// data directory's lock (package datadir): Pebble allows one process only.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// Options tune an open store.
type Options struct {
	// CacheBytes is the memory for decompressed blocks read from disk
	// (DefaultCacheBytes when 0). Search reads one block of 32 KiB per
	// text it confirms that is not cached: a long-running server over a
	// large history gains from more (a million entries hold ~1 GB of
	// text).
	CacheBytes int64
	// Bulk writes the store without Pebble's write-ahead log, for a
	// process that loads much at once and acknowledges it at the end (an
	// import): a commit reaches only memory, and it is on disk once the
	// memtable holding it has been flushed. Flushes happen every
	// FlushBytes of committed batches, at once after a batch that deletes
	// entries, and on Persist and Close. Readers (the indexer above all)
	// see an entry only once it is flushed, so after a crash the index
	// holds nothing the store lost; what the store lost is a suffix of
	// the commits, file read positions included, and the next import
	// reads those lines again. Without the log an import writes a second
	// copy of nothing and syncs nothing until it flushes (decision 003;
	// docs/measurements/2026-11-30-store-layout-and-log-free-import.md).
	Bulk bool
	// FlushBytes is how many bytes of committed batches a bulk store
	// holds in memory before it starts a flush (DefaultFlushBytes when 0).
	FlushBytes int
	// ReadOnly opens an existing store for reading only: nothing is
	// written to dir, and every write fails.
	ReadOnly bool
	// Brief: the process reads a little and exits (a one-shot command).
	// Pebble then does not collect its tables' statistics in the
	// background, which opens every table of the store (over a thousand
	// at a million entries) for the compaction heuristics of a process
	// that will not live to use them.
	Brief bool
	// SharedTextMin is the length from which a searchable text is stored
	// once however many entries hold it (DefaultSharedTextMin when 0;
	// never when negative). See tagShared.
	SharedTextMin int
	// MemTableBytes is the size of one Pebble memtable (32 MB when 0).
	// Pebble keeps up to two in memory while one flushes.
	MemTableBytes int64
	// FS is the file system the store lives in (the operating system's
	// when nil); tests give one that drops unsynced writes or fails.
	FS vfs.FS
	// Log receives the store's faults (writes stopped and resumed,
	// Pebble's background errors), once when each starts and once when
	// it clears; nothing of Pebble's goes to stderr. Discarded when nil.
	Log *slog.Logger
	// ReserveBytes is the free space on the store's disk under which
	// writes are refused with ErrWritesStopped instead of reaching Pebble,
	// whose commit pipeline does not survive a failed write
	// (DefaultReserveBytes when 0, no check when negative).
	ReserveBytes int64
	// ProbeEvery is how often a store refusing writes for want of space
	// looks again (a second when 0).
	ProbeEvery time.Duration
}

// DefaultFlushBytes is a bulk store's FlushBytes when none is given: half
// a memtable, so that a flush starts before Pebble's own would.
const DefaultFlushBytes = memTableBytes / 2

// memTableBytes is the size of one Pebble memtable.
const memTableBytes = 32 << 20

// DefaultCacheBytes is the block cache of a store opened without one.
const DefaultCacheBytes = 128 << 20

// readOnlyFS is the file system of a store opened for reading only. Pebble
// takes its directory lock by creating a LOCK file, which a read-only file
// system refuses; the data directory's shared lock (package datadir)
// already keeps writers out, so this lock is none.
type readOnlyFS struct{ vfs.FS }

func (readOnlyFS) Lock(string) (io.Closer, error) { return noLock{}, nil }

type noLock struct{}

func (noLock) Close() error { return nil }

// OpenWith opens or creates the store in dir with options o.
func OpenWith(dir string, o Options) (*Store, error) {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.FS == nil {
		o.FS = defaultFS
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ReserveBytes == 0 {
		o.ReserveBytes = DefaultReserveBytes
	}
	if o.ReadOnly {
		o.FS = readOnlyFS{o.FS}
	} else if err := mkdirSynced(o.FS, dir); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", dir, err)
	}
	s := &Store{dir: dir, readOnly: o.ReadOnly, cacheBytes: o.CacheBytes, sharedMin: cmp.Or(o.SharedTextMin, DefaultSharedTextMin), changed: make(chan struct{}), trees: newTreeCache(treeCacheEntries), bulk: o.Bulk, flushBytes: o.FlushBytes,
		fs: o.FS, reserve: o.ReserveBytes, probeEvery: cmp.Or(o.ProbeEvery, defaultProbeEvery), stop: make(chan struct{}),
		faults: faults{log: o.Log, dir: dir, resumed: make(chan struct{}), restart: make(chan struct{})}}
	// A bulk store (an import) reads its texts once, to index them:
	// mapped, every page of the file would stay in its RSS to the end.
	texts, err := openTextLog(o.FS, filepath.Clean(dir), o.ReadOnly, o.Bulk)
	if err != nil {
		return nil, err
	}
	s.texts = texts
	opts := &pebble.Options{FormatMajorVersion: pebble.FormatNewest, FS: o.FS, ReadOnly: o.ReadOnly}
	// Tables end where a key kind (its first byte) ends: most kinds are
	// keyed by seq, which only grows, so a flushed table of one kind
	// overlaps no older table of that kind and compactions move it down
	// the levels instead of rewriting it. Moved tables keep the
	// compression they were written with, hence one setting at every
	// level (an import then writes and compresses much less,
	// `docs/measurements/2026-12-07-figures-from-code-comments.md`): zstd
	// level 3, what Pebble's "good" setting gives the last level, for the
	// raw lines, and MinLZ for every other kind (see splitByKind).
	opts.Experimental.SpanPolicyFunc = splitByKind
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		cs := pebble.DBCompressionGood
		for i := range cs.Levels {
			cs.Levels[i] = cs.Levels[len(cs.Levels)-1]
		}
		return cs
	})
	opts.Cache = pebble.NewCache(o.CacheBytes)
	defer opts.Cache.Unref()
	opts.MemTableSize = uint64(cmp.Or(o.MemTableBytes, memTableBytes))
	opts.DisableTableStats = o.Brief
	opts.DisableWAL = o.Bulk
	opts.Logger = pebbleLogger{&s.faults}
	opts.EventListener = s.faults.eventListener()
	opts.EventListener.FlushBegin = func(pebble.FlushInfo) {
		// The memtables about to be flushed may refer to texts written
		// but not synced yet (a bulk store's commits).
		if err := s.texts.syncWritten(); err != nil {
			s.faults.stopWrites(err, true)
		}
	}
	for i := range opts.Levels {
		opts.Levels[i].BlockSize = 32 << 10
		// A record read by key (a hit's meta, a text) lives in one table;
		// the filters let the other tables whose key range spans it be
		// passed without reading their blocks. ~1% false positives for
		// 10 bits a key, ~8 bytes an entry.
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(filepath.Clean(dir), opts)
	if err != nil {
		texts.close()
		return nil, fmt.Errorf("store: open pebble at %s: %w", dir, err)
	}
	s.db = db
	if s.flushBytes <= 0 {
		s.flushBytes = DefaultFlushBytes
	}
	v, err := s.getMeta("seq")
	if err != nil && !errors.Is(err, ErrNotFound) {
		db.Close()
		texts.close()
		return nil, err
	}
	if len(v) == 8 {
		s.nextSeq = binary.BigEndian.Uint64(v)
	}
	if s.nextSeq == 0 {
		s.nextSeq = 1
	}
	s.lastSeq.Store(s.nextSeq - 1)
	s.committed = s.nextSeq - 1
	if !o.ReadOnly {
		if err := s.dropSearchData(); err != nil {
			db.Close()
			texts.close()
			return nil, err
		}
		if err := s.dropMovedTexts(); err != nil {
			db.Close()
			texts.close()
			return nil, err
		}
	}
	return s, nil
}

// mkdirSynced creates dir (mode 0700) and any missing parents, and syncs
// the directory above each one it creates: until then a power cut can
// take the new directory's name away, and the store in it with it, however
// well synced its files are. (Pebble does this for a directory it
// creates, but it finds this one made.)
func mkdirSynced(fs vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	var made []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		made = append(made, d)
		up := fs.PathDir(d)
		if up == d {
			break
		}
		d = up
	}
	if len(made) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range made {
		parent, err := fs.OpenDir(fs.PathDir(d))
		if err != nil {
			return err
		}
		err = parent.Sync()
		parent.Close()
		if err != nil {
			return fmt.Errorf("sync the directory holding %s: %w", d, err)
		}
	}
	return nil
}

// Close flushes and closes the store. Closing it again does nothing.
// While a fault is current (see Faults), Pebble is given faultCloseWait
// to close, and then left to the process's exit (see closeFaulted).
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	s.probes.Wait()
	var err error
	if f := s.faults.list(); len(f) > 0 {
		err = s.closeFaulted(f[0])
	} else {
		err = s.closeDB()
	}
	if cerr := s.texts.close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: close %s: %w", s.texts.path, cerr)
	}
	return err
}

// closeDB flushes the memtables and closes Pebble.
func (s *Store) closeDB() error {
	err := s.db.Flush()
	s.flushes.Wait()
	if err != nil {
		s.db.Close()
		return fmt.Errorf("store: flush %s: %w", s.dir, err)
	}
	return s.db.Close()
}

// syncWrites is the write option of a commit that must be durable when it
// returns: synced through the log, or, in a bulk store (which has no log),
// left to the flush that publishes it.
func (s *Store) syncWrites() *pebble.WriteOptions {
	if s.bulk {
		return pebble.NoSync
	}
	return pebble.Sync
}

// Persist makes every commit so far durable and visible to readers. A
// bulk store flushes its memtables; any other store has nothing to do,
// its commits being synced already.
func (s *Store) Persist() error {
	if !s.bulk {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushNow()
}

// flushNow flushes a bulk store's memtables and publishes what they held;
// wmu is held.
func (s *Store) flushNow() error {
	seq := s.committed
	if err := s.texts.syncWritten(); err != nil {
		s.faults.stopWrites(err, true)
		return fmt.Errorf("store: flush %s: %w (what this process stored since its last flush is not on disk)", s.dir, err)
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store: flush %s: %w (what this process stored since its last flush is not on disk)", s.dir, err)
	}
	s.unflushed = 0
	s.publish(seq)
	return nil
}

// flushLater starts a flush of a bulk store's memtables and publishes what
// they held once it completes; wmu is held.
func (s *Store) flushLater() error {
	seq := s.committed
	done, err := s.db.AsyncFlush()
	if err != nil {
		return fmt.Errorf("store: start a flush of %s: %w", s.dir, err)
	}
	s.unflushed = 0
	s.flushes.Add(1)
	go func() {
		defer s.flushes.Done()
		<-done
		if s.texts.broken() {
			return // the flushed references may name texts the disk lost
		}
		s.publish(seq)
	}()
	return nil
}

// HoldWrites keeps writers out until the returned function is called, in
// a bulk store: there a commit is in memory until its flush, and a reader
// that must see only what is on disk (the index applying deletions) reads
// under it, since a batch that deletes is flushed before its writer lets
// go. In any other store it holds nothing.
func (s *Store) HoldWrites() (release func()) {
	if !s.bulk {
		return func() {}
	}
	s.wmu.Lock()
	return s.wmu.Unlock
}

// splitByKind makes Pebble end an output table at the end of each key
// kind (keys of one kind share their first byte).
func splitByKind(start []byte) (pebble.SpanPolicy, []byte, error) {
	if len(start) == 0 || start[0] == 0xff {
		return pebble.SpanPolicy{}, nil, nil
	}
	// Every kind a search or a list reads a record at a time (records,
	// short texts, references, ids, orders) takes Pebble's fastest codec:
	// such a read decompresses a whole block, and MinLZ does it two to
	// three times faster than zstd for a fifth more bytes. The raw lines,
	// two thirds of the store, are read by export and show alone, and keep
	// zstd (decision 400). Texts stored once under X (stores of formats 3
	// and 4, until Compact moves them) are packed one by one (see
	// packMark): the fast codec finds too little in them to keep, and
	// their blocks are stored as they are.
	return pebble.SpanPolicy{PreferFastCompression: start[0] != tagRaw}, []byte{start[0] + 1}, nil
}

// CacheBytes is the size of the store's block cache.
func (s *Store) CacheBytes() int64 { return s.cacheBytes }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// LastSeq is the highest seq committed so far (0 when empty). It does not
// wait for a write in progress: entries of an uncommitted batch are not
// counted until their commit returns.
func (s *Store) LastSeq() uint64 { return s.lastSeq.Load() }

// Changed returns a channel closed at the next commit.
func (s *Store) Changed() <-chan struct{} {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	return s.changed
}

// notify is called, with wmu held, after every successful commit of
// size bytes: it publishes the new last seq and wakes waiters. A bulk
// store publishes once the commit is flushed: at once for a batch that
// deletes, else when enough is committed to start a flush.
func (s *Store) notify(size int) error {
	s.committed = s.nextSeq - 1
	if !s.bulk {
		s.publish(s.committed)
		return nil
	}
	s.unflushed += size
	switch {
	case s.deletes:
		s.deletes = false
		return s.flushNow()
	case s.unflushed >= s.flushBytes:
		return s.flushLater()
	}
	return nil
}

// publish makes the entries through seq visible to readers and wakes
// those waiting for a change (also when seq is not new: a deletion is a
// change too).
func (s *Store) publish(seq uint64) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if seq > s.lastSeq.Load() {
		s.lastSeq.Store(seq)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Deleted returns the seqs removed since they were stored (after from), for
// the index to forget, and ClearDeleted drops those markers once handled.
func (s *Store) Deleted(limit int) ([]uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagDeleted}, UpperBound: []byte{tagDeleted + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []uint64
	for it.First(); it.Valid() && len(out) < limit; it.Next() {
		out = append(out, binary.BigEndian.Uint64(it.Key()[1:]))
	}
	return out, it.Error()
}

// ClearDeleted removes deletion markers the index has applied.
func (s *Store) ClearDeleted(seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	if s.writable() != nil {
		return nil // the markers stay until writes resume; the index forgets them twice
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, q := range seqs {
		if err := b.Delete(seqKey(tagDeleted, q), nil); err != nil {
			return err
		}
	}
	return s.commitBatch(b, pebble.NoSync) // losing this only makes the index forget twice
}

// Compact rewrites the whole store into Pebble's last level, where blocks
// get its strongest compression: after a large import most data still sits
// in upper levels, compressed for speed. A store of an earlier build gets
// its long texts stored once (ShareTexts) and moved to the text file
// (MoveTexts) first. Reads and writes go on
// meanwhile.
func (s *Store) Compact(ctx context.Context) error {
	if _, err := s.ShareTexts(ctx); err != nil {
		return err
	}
	if _, err := s.MoveTexts(ctx); err != nil {
		return err
	}
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("store: compact %s: %w", s.dir, err)
	}
	return nil
}

// DiskSize is the store's size on disk in bytes: Pebble's live files and
// the text file. Tables a compaction replaced, deleted once no reader
// holds them (or at the next open), are not counted: a compaction's report
// counted them as growth.
func (s *Store) DiskSize() int64 {
	m := s.db.Metrics()
	gone := m.Table.Local.ObsoleteSize + m.Table.Local.ZombieSize + m.WAL.ObsoletePhysicalSize
	return int64(m.DiskSpaceUsage()-min(gone, m.DiskSpaceUsage())) + s.texts.bytes()
}
