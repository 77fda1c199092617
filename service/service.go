// Package service opens everything pi-history keeps in a data directory (the
// store, the index, the lock that says who owns them) and offers the
// operations that the CLI and the HTTP API share: import, stats, reindex.
// It is the one place that wires the store to its index.
package service

import (
	"context"
	"errors"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/store"
)

// Options configure Open.
type Options struct {
	DataDir      string   // resolved data directory
	SessionsDirs []string // Pi's sessions directories (for import defaults and the watcher)
	Log          *slog.Logger
	// Memory bounds what the store keeps in memory (see SplitMemory); the
	// store's defaults for an import or a one-shot command when zero.
	Memory Memory
	// Bulk: the process loads much at once and acknowledges it at the end
	// (an import). The store is written without its log (store.Options)
	// and the index merges for a load (index.Options).
	Bulk bool
	// FlushBytes is how much a bulk store commits between flushes
	// (store.DefaultFlushBytes when 0).
	FlushBytes int
	// Brief: a one-shot command that reads (store.Options.Brief).
	Brief bool
	// MustExist: a missing data directory is a datadir.NoHistoryError, not
	// one to create (the commands that only read).
	MustExist bool
	// ReadOnly opens store and index for reading only, under a shared
	// lock, writing nothing to the data directory: for reading a directory
	// this process cannot write to. The index does not catch up (searches
	// scan what it lacks), and nothing is ingested.
	ReadOnly bool
	// StoreFS is the file system the store lives in (the operating
	// system's when nil); tests give one that drops unsynced writes or
	// runs out of space. The index and the lock are always on disk.
	StoreFS vfs.FS
	// FollowSessions opens the session word index (index.Sessions) at
	// once and keeps it up to date in the background (a server); else it
	// is opened, and caught up, when MatchSessions is first called.
	FollowSessions bool
	// ReserveBytes is the free space under which the store refuses writes
	// (store.Options.ReserveBytes: store.DefaultReserveBytes when 0, no
	// check when negative).
	ReserveBytes int64
}

// Service is an open data directory.
type Service struct {
	Dir          string
	SessionsDirs []string
	Store        *store.Store
	Index        *index.Index
	Log          *slog.Logger
	lock         *datadir.Lock
	cancel       context.CancelFunc
	done         chan struct{}
	compacting   atomic.Bool
	serial       *ingest.Serial
	readOnly     bool

	// The session word index (sessionwords.go): opened on first use,
	// followed by a server.
	swMu       sync.Mutex
	sw         *index.Sessions
	swClosed   bool
	swFollowed atomic.Bool
	swDone     sync.WaitGroup
}

// Serial reads journal files into the store one reader per path at a time:
// the watcher, sync requests and Import all read through it, so that two
// never interleave their batches for one journal (after a rewrite, each
// would replace the session, and the entries' order could end up wrong).
func (s *Service) Serial() *ingest.Serial { return s.serial }

// Open takes the data directory's lock, opens store and index, replays what
// the index missed, and starts the background indexer.
func Open(o Options) (*Service, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	lock, err := datadir.AcquireWith(o.DataDir, datadir.Mode{Create: !o.MustExist, Shared: o.ReadOnly})
	if err != nil {
		return nil, err
	}
	if !o.ReadOnly {
		tidyReindex(o.DataDir, o.Log)
	}
	st, err := store.OpenWith(filepath.Join(o.DataDir, "store"), store.Options{CacheBytes: o.Memory.Cache, Bulk: o.Bulk, FlushBytes: o.FlushBytes, MemTableBytes: o.Memory.MemTable,
		FS: o.StoreFS, Log: o.Log, ReserveBytes: o.ReserveBytes, ReadOnly: o.ReadOnly, Brief: o.Brief})
	if err != nil {
		lock.Release()
		return nil, err
	}
	ix, err := index.OpenWith(filepath.Join(o.DataDir, "index"), st, index.Options{Log: o.Log, ReadOnly: o.ReadOnly})
	if err != nil {
		st.Close()
		lock.Release()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{Dir: o.DataDir, SessionsDirs: o.SessionsDirs, Store: st, Index: ix, Log: o.Log, lock: lock, cancel: cancel, done: make(chan struct{}),
		serial: ingest.NewSerial(st), readOnly: o.ReadOnly}
	go func() {
		defer close(s.done)
		ix.Run(ctx)
	}()
	if o.FollowSessions && !o.ReadOnly {
		s.swDone.Add(1)
		go func() {
			defer s.swDone.Done()
			// Titles first: the session word index takes them.
			if n, err := st.KnowFirstUsers(ctx); err != nil && ctx.Err() == nil {
				s.Log.Warn("sessions: cannot keep their first user messages; titles walk their records instead", "err", err)
			} else if n > 0 {
				s.Log.Info("sessions: kept the first user message and its title of sessions stored by an older version", "sessions", n)
			}
			s.followSessionWords(ctx)
		}()
	}
	return s, nil
}

// tidyReindex clears what a reindex killed before it finished left in dir
// (no reindex runs while this process holds the lock): its half-built
// index.rebuild, and the index.old it moves the index to while swapping;
// killed between the swap's two renames, the index is index.old, and is
// moved back.
func tidyReindex(dir string, log *slog.Logger) {
	ix, old, tmp := filepath.Join(dir, "index"), filepath.Join(dir, "index.old"), filepath.Join(dir, "index.rebuild")
	if _, err := os.Stat(ix); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(old); err == nil {
			if err := os.Rename(old, ix); err != nil {
				log.Warn("cannot move back the index a killed reindex moved aside; it will be rebuilt", "from", old, "err", err)
			}
		}
	}
	for _, p := range []string{tmp, old} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			log.Warn("cannot remove what a killed reindex left behind", "dir", p, "err", err)
		} else {
			log.Info("removed what a killed reindex left behind", "dir", p)
		}
	}
}

// OnWritesResumed calls retry each time the store's writes resume after a
// fault cleared by itself (space came back), until ctx ends: a server
// passes its watcher's Rescan, so that the journals whose reads were
// refused meanwhile are read at once, not at the next periodic rescan.
// Nothing is lost while writes are stopped: a refused read leaves the
// file's stored read position where it was.
func (s *Service) OnWritesResumed(ctx context.Context, retry func()) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.Store.WritesResumed():
				s.Log.Info("ingest: reading the journals again now that writes resume")
				retry()
			}
		}
	}()
}

// Close stops the indexers, closes the indexes and the store, and releases
// the lock.
func (s *Service) Close() error {
	s.cancel()
	<-s.done
	s.swDone.Wait()
	if err := s.closeSessionWords(); err != nil {
		s.Log.Warn("session word index: close", "err", err)
	}
	err1 := s.Index.Close()
	err2 := s.Store.Close()
	s.lock.Release()
	if err1 != nil {
		return err1
	}
	return err2
}

// Warmed says what Warm brought into memory and how long each part took.
type Warmed struct {
	Branches   int // sessions whose current branch is known
	BranchTime time.Duration
}

// Warm brings into memory what the first branch searches would otherwise
// load piece by piece: every session's current branch
// (store.WarmBranches). Nothing of the search's derived data needs
// warming: the index's files are read in place. It sets nothing
// process-wide. A server calls it once in the background after it
// starts; it stops when ctx ends.
func (s *Service) Warm(ctx context.Context) (Warmed, error) {
	var w Warmed
	t0 := time.Now()
	var err error
	if w.Branches, err = s.Store.WarmBranches(ctx); err != nil {
		return w, fmt.Errorf("preload the sessions' current branches: %w", err)
	}
	w.BranchTime = time.Since(t0)
	return w, nil
}

// Reindex builds every file of the index again from the store, one at a
// time, each swapped in when it is written (index.Index.Rebuild), then
// takes in what arrived meanwhile. progress, when not nil, is called with
// the stage ("index") and how far it is. Searches and ingest go on
// meanwhile, exact throughout.
func (s *Service) Reindex(ctx context.Context, progress func(stage string, done, last uint64)) error {
	var report func(done, last uint64)
	if progress != nil {
		report = func(done, last uint64) { progress("index", done, last) }
	}
	return s.Index.Rebuild(ctx, report)
}

// Upkeep says what opening the data directory for writing would do at
// once, or "" when nothing: what a killed reindex left (tidyReindex), the
// store's own (store.Store.Upkeep), or entries the index has not taken in (after a kill, or a file it could not
// use). A service opened for reading only searches correctly meanwhile,
// scanning what the index lacks, but does it again on every open.
func (s *Service) Upkeep() (string, error) {
	for _, name := range []string{"index.rebuild", "index.old"} {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err == nil {
			return "what a killed reindex left to clear (" + name + ")", nil
		}
	}
	if why, err := s.Store.Upkeep(); why != "" || err != nil {
		return why, err
	}
	if n := index.Lag(s.Index.IndexedThrough(), s.Store.LastSeq()); n > 0 {
		return fmt.Sprintf("%d entries for the index to take in", n), nil
	}
	return "", nil
}

// Settle waits until no upkeep is due (Upkeep says ""), or ctx ends: the
// index's catch-up runs in the background of a service opened for
// writing.
func (s *Service) Settle(ctx context.Context) error {
	for {
		ch := s.Index.Changed()
		why, err := s.Upkeep()
		if err != nil || why == "" {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("upkeep still due (%s): %w", why, ctx.Err())
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitIndexed blocks until the index covers every entry stored so far, or
// ctx ends.
func (s *Service) WaitIndexed(ctx context.Context) error {
	for {
		ch := s.Index.Changed()
		if s.Index.IndexedThrough() >= s.Store.LastSeq() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stats summarises the data directory (a wire type: see pihistory.StoreStats).
type Stats = pihistory.StoreStats

// Stats counts what is stored.
func (s *Service) Stats() (Stats, error) {
	ss, err := s.Store.Sessions()
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Sessions: len(ss), DataDir: s.Dir}
	for _, si := range ss {
		st.Entries += si.Entries
		st.Searchable += si.Searchable
		st.Bytes += si.Bytes
	}
	files, err := s.Store.Files()
	if err != nil {
		return Stats{}, err
	}
	st.Files = len(files)
	for _, f := range files {
		st.SkippedLines += f.Skipped
	}
	st.StoreBytes = s.Store.DiskSize()
	st.IndexBytes = DirSize(filepath.Join(s.Dir, "index"))
	st.LastSeq = s.Store.LastSeq()
	st.IndexedThrough = s.Index.IndexedThrough()
	st.IndexLag = index.Lag(st.IndexedThrough, st.LastSeq)
	st.IndexHealthy = st.IndexedThrough <= st.LastSeq
	st.IndexFormat = s.Index.Format()
	st.IndexSegments = s.Index.Segments()
	return st, nil
}

// DirSize is the bytes of the files below dir (0 for what cannot be read).
func DirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// ImportSummary says what an import did (see pihistory.ImportSummary).
type ImportSummary = pihistory.ImportSummary

// WaitingFile is a file whose last bytes have no newline yet.
type WaitingFile = pihistory.WaitingFile

// ImportProgress reports progress: files done of total, bytes read of total,
// entries added so far.
type ImportProgress func(filesDone, files int, bytes, totalBytes int64, entries int)

// ImportStatus is how far an import is, as ImportWatched reports it (see
// pihistory.ImportStatus).
type ImportStatus = pihistory.ImportStatus

// ImportWatched is Import telling watch how far it is, so that a long
// import never looks stuck: at most every 200 ms (and when the last file
// is read) while files are read, then every 250 ms while the index catches
// up or compacts. watch is called by one goroutine at a time; all calls
// have returned when ImportWatched does.
func (s *Service) ImportWatched(ctx context.Context, paths []string, watch func(ImportStatus)) (ImportSummary, error) {
	var (
		mu        sync.Mutex // one call of watch at a time
		last      time.Time
		filesDone atomic.Bool
	)
	progress := func(done, files int, b, total int64, entries int) {
		mu.Lock()
		defer mu.Unlock()
		if done == files {
			filesDone.Store(true)
		}
		if time.Since(last) < 200*time.Millisecond && done < files {
			return
		}
		last = time.Now()
		// How far the index is behind, too: it lags while files are read.
		watch(ImportStatus{FilesDone: done, Files: files, Bytes: b, TotalBytes: total, Entries: entries,
			Through: s.Index.IndexedThrough(), Target: s.Store.LastSeq()})
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if !filesDone.Load() {
				continue
			}
			st := ImportStatus{Compacting: s.Compacting()}
			if !st.Compacting {
				st.Through, st.Target = s.Index.IndexedThrough(), s.Store.LastSeq()
				if st.Indexing = st.Through < st.Target; !st.Indexing {
					continue
				}
			}
			mu.Lock()
			watch(st)
			mu.Unlock()
		}
	}()
	sum, err := s.Import(ctx, paths, progress)
	close(stop)
	<-stopped
	return sum, err
}

// FindJournals lists the journals under paths (files or directories),
// oldest session first (ingest.SortByStart), with their total size: in directories, every .jsonl file and
// every session archive (.tar.zst or .tzst, see ingest.IsArchive) at any
// depth; a file named directly is taken whatever its name. Missing paths
// are errors. Links are followed only inside the directory named (see
// ingest.WalkWithin).
func FindJournals(paths []string) ([]string, int64, error) {
	return findJournals(paths, nil)
}

// findJournals is FindJournals telling skipped, if set, of each link not
// followed and each directory not read.
func findJournals(paths []string, skipped func(path, reason string)) ([]string, int64, error) {
	var out []string
	var total int64
	seen := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, 0, err
		}
		info, err := os.Stat(abs)
		if err != nil {
			return nil, 0, fmt.Errorf("import %s: %w", p, err)
		}
		if !info.IsDir() {
			if !seen[abs] {
				seen[abs] = true
				out = append(out, abs)
				total += info.Size()
			}
			continue
		}
		// Links are followed while they stay inside abs (a sessions
		// directory that is a link to another disk is); vanished or
		// unreadable directories are skipped.
		err = ingest.WalkWithin(abs, ingest.WalkOptions{Skipped: skipped}, func(path string, d fs.DirEntry) error {
			if !d.IsDir() && (strings.HasSuffix(path, ".jsonl") || ingest.IsArchive(path)) && !seen[path] {
				if info, err := d.Info(); err == nil {
					seen[path] = true
					out = append(out, path)
					total += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	ingest.SortByStart(out)
	return out, total, nil
}

// Compact compacts the store (see store.Store.Compact): after a large
// import it is bigger on disk than it needs to be. The index needs no
// compaction: its runs are merged into segments as they fill.
func (s *Service) Compact(ctx context.Context) error {
	s.compacting.Store(true)
	defer s.compacting.Store(false)
	return s.Store.Compact(ctx)
}

// Compacting reports whether Compact is running.
func (s *Service) Compacting() bool { return s.compacting.Load() }

// CompactAfter is the number of new entries from which an import ends by
// compacting the index (see index.Index.Compact): below it, the merge of a
// large index would cost more than it saves.
const CompactAfter = 100_000

// importSessionWords brings the session word index up to the store after
// an import, and merges it (see index.Sessions.Settle): what is left
// unmerged costs disk only, until the next open merges it, so a failed
// merge is logged, not returned.
func (s *Service) importSessionWords(ctx context.Context) error {
	sw, err := s.sessionWords()
	var pass index.SessionsPass
	if err == nil {
		pass, err = sw.CatchUp(ctx)
	}
	if err != nil {
		return fmt.Errorf("index the sessions' words: %w", err)
	}
	if pass.Indexed == 0 {
		return nil
	}
	if err := sw.Settle(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.Log.Warn("session word index: could not merge its segments; the next open will", "err", err)
	}
	return nil
}

// Import reads journal files (and directories of them) into the store.
// Files already read are resumed where they stopped, so importing again adds
// nothing new.
func (s *Service) Import(ctx context.Context, paths []string, progress ImportProgress) (ImportSummary, error) {
	start := time.Now()
	var left []ingest.Problem // links not followed, directories not read
	files, total, err := findJournals(paths, func(path, reason string) {
		left = append(left, ingest.Problem{File: path, Reason: reason, Unread: true})
	})
	if err != nil {
		return ImportSummary{}, err
	}
	sum := ImportSummary{Files: len(files), Problems: append([]ingest.Problem{}, left...)}
	sessions := map[string]bool{}
	var done int64
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		base := done
		prog := func(b int64, n int) {
			if progress != nil {
				progress(i, len(files), base+b, total, sum.Entries+n)
			}
		}
		var reps []ingest.FileReport
		switch {
		case ingest.IsArchive(f): // a .tar.zst written by 'pi-history export'
			reps, err = ingest.Archive(s.Store, f, prog)
		case ingest.IsCompressedJournal(f): // one session written by 'export --zstd'
			var rep ingest.FileReport
			rep, err = ingest.CompressedJournal(s.Store, f, prog)
			reps = []ingest.FileReport{rep}
		default:
			var rep ingest.FileReport
			rep, err = s.serial.File(f, prog)
			reps = []ingest.FileReport{rep}
		}
		if errors.Is(err, store.ErrWritesStopped) {
			// The disk is full or failing: every other file would fail
			// alike. What was stored so far stays; importing again once
			// the disk takes writes goes on from there.
			return sum, fmt.Errorf("import stopped at %s: %w", f, err)
		}
		if err != nil {
			sum.Problems = append(sum.Problems, ingest.Problem{File: f, Reason: err.Error(), Unread: true})
		}
		for _, rep := range reps {
			if rep.Session != "" {
				sessions[rep.Session] = true
			}
			sum.Entries += rep.Added
			sum.Dups += rep.Dups
			sum.Bytes += rep.Bytes
			for _, p := range rep.Problems {
				if !p.Unread {
					sum.Skipped++ // a line skipped; a file not read is not a line
				}
			}
			sum.Problems = append(sum.Problems, rep.Problems...)
			if rep.Pending > 0 {
				sum.Waiting = append(sum.Waiting, WaitingFile{File: rep.Path, Bytes: rep.Pending})
			}
		}
		if info, err := os.Stat(f); err == nil {
			done += info.Size()
		}
		if progress != nil {
			progress(i+1, len(files), done, total, sum.Entries)
		}
	}
	sum.Sessions = len(sessions)
	for sid := range sessions {
		if si, err := s.Store.Session(sid); err == nil {
			sum.Stored += si.Entries
		}
	}
	sum.Stored = max(sum.Stored-sum.Entries, 0)
	// Nothing is acknowledged before it is on disk: a bulk store holds
	// its last commits in memory until a flush.
	if err := s.Store.Persist(); err != nil {
		return sum, err
	}
	// The sessions' current branches, kept in the store, so that the
	// next search marking hits on or off them reads each instead of
	// walking its session (store.CurrentBranchSeqs): those of the
	// sessions it stored. A cache: what it cannot keep is worked out later.
	if sum.Entries > 0 && !s.readOnly {
		for sid := range sessions {
			if ctx.Err() != nil {
				break
			}
			if _, err := s.Store.CurrentBranchSeqs(sid); err != nil && !errors.Is(err, store.ErrNotFound) {
				s.Log.Warn("import: could not work out a session's current branch now; searches will", "session", sid, "err", err)
			}
		}
	}
	if err := s.WaitIndexed(ctx); err != nil {
		return sum, err
	}
	// The sessions' word index too, so that the first server on these
	// sessions starts with nothing to build (a server's own follows the
	// store by itself).
	if sum.Entries > 0 && !s.swFollowed.Load() && !s.readOnly {
		if err := s.importSessionWords(ctx); err != nil {
			return sum, err
		}
	}
	if sum.Entries >= CompactAfter {
		if err := s.Compact(ctx); err != nil {
			return sum, err
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}
