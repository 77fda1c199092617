package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pi-history/pi-history/store"
)

// Serial runs File for one path at a time, so that the watcher, a sync
// request and anything else reading the same journal never interleave their
// batches for it. Different paths proceed in parallel (the store serializes
// their commits).
type Serial struct {
	st    *store.Store
	mu    sync.Mutex
	locks map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

// NewSerial returns a Serial reading into st.
func NewSerial(st *store.Store) *Serial {
	return &Serial{st: st, locks: map[string]*pathLock{}}
}

// Store is the store read into.
func (s *Serial) Store() *store.Store { return s.st }

// File is File(st, path, progress), serialized per path.
func (s *Serial) File(path string, progress Progress) (FileReport, error) {
	s.mu.Lock()
	l := s.locks[path]
	if l == nil {
		l = &pathLock{}
		s.locks[path] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	defer func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, path)
		}
		s.mu.Unlock()
	}()
	return File(s.st, path, progress)
}

// WatchOptions tune a Watcher; zero values pick the defaults.
type WatchOptions struct {
	// Debounce is how long a changed file waits before it is read, so that a
	// burst of appends costs one read. Default 10ms.
	Debounce time.Duration
	// Rescan is the period of the full rescan that catches anything the
	// file-system events missed (overflow, network file systems, a
	// directory created before its watch was added). Default 30s.
	Rescan time.Duration
	// Workers read files in parallel. Default 2.
	Workers int
	// MaxWatches bounds the directories watched. A tree with more (or one
	// the system's limit on watches cannot cover) is polled instead: a
	// rescan every Poll, with one warning. Default 8192.
	MaxWatches int
	// Poll is the rescan period once the watcher polls. Default 2s.
	Poll time.Duration
	// Serial is shared with other readers of the same files (the API's
	// sync). Default: a new one.
	Serial *Serial
	Log    *slog.Logger
	// OnIngest, if set, is called after each file read (tests, metrics).
	OnIngest func(path string, rep FileReport, err error)
}

// WatchStatus describes a Watcher.
type WatchStatus struct {
	Running     bool
	Dirs        []string
	WatchedDirs int
	Ingests     uint64
	Errors      uint64
	LastError   string
	LastRescan  time.Time
	// Polling: the tree is too large to watch (see WatchOptions.MaxWatches);
	// it is rescanned every WatchOptions.Poll instead.
	Polling bool
	// Skipped is what the watcher leaves out now, with the reasons (at
	// most maxSkips); Skips counts every skip noted since it started, each
	// path and cause once.
	Skipped []Skip
	Skips   uint64
	// FirstScan is how far the first scan is (nil before it began).
	FirstScan *FirstScan
}

// Watcher follows Pi's sessions directories (each holds one --<cwd>--
// folder per project, each with one .jsonl journal per session) and reads
// every journal that changes into the store, within milliseconds of the
// append. A periodic rescan is the safety net for missed events.
type Watcher struct {
	serial *Serial
	dirs   []string
	o      WatchOptions
	log    *slog.Logger
	first  firstScan // the first scan's progress

	live chan string // files changed by an event: read first
	bulk chan string // files found by a rescan

	mu       sync.Mutex
	fsw      *fsnotify.Watcher
	watched  map[string]bool
	byID     map[dirID]string // watched directories by identity: a second name for one is not watched
	files    map[string]*fileSched
	seen     map[string]fileSig // size and mtime at the last read
	running  bool
	polling  bool // too many directories to watch: rescanned every o.Poll
	lastErr  string
	lastScan time.Time
	ctx      context.Context

	ingests atomic.Uint64
	errs    atomic.Uint64
	rescanC chan struct{}
	skips   skips
}

type fileSched struct {
	timer   *time.Timer
	queued  bool
	running bool
	again   bool
	// gone: forgotten while a read was pending or running; the read's
	// end forgets it, unless it was scheduled again meanwhile.
	gone bool
}

type fileSig struct {
	size  int64
	mtime time.Time
}

// NewWatcher watches dirs (Pi's sessions directories) and reads into st.
func NewWatcher(st *store.Store, dirs []string, o WatchOptions) *Watcher {
	if o.Debounce <= 0 {
		o.Debounce = 10 * time.Millisecond
	}
	if o.Rescan <= 0 {
		o.Rescan = 30 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.MaxWatches <= 0 {
		o.MaxWatches = 8192
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Serial == nil {
		o.Serial = NewSerial(st)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	clean := make([]string, len(dirs))
	for i, d := range dirs {
		clean[i] = filepath.Clean(d)
	}
	return &Watcher{serial: o.Serial, dirs: clean, o: o, log: o.Log,
		live: make(chan string, 1024), bulk: make(chan string, 64),
		watched: map[string]bool{}, byID: map[dirID]string{}, files: map[string]*fileSched{}, seen: map[string]fileSig{},
		rescanC: make(chan struct{}, 1), skips: skips{by: map[skipKey]*skipRec{}, log: o.Log}}
}

// Serial is the per-file serializer the watcher reads through.
func (w *Watcher) Serial() *Serial { return w.serial }

// Status reports what the watcher is doing.
func (w *Watcher) Status() WatchStatus {
	skipped, n := w.skips.list()
	var first *FirstScan
	if fs, ok := w.FirstScan(); ok {
		first = &fs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return WatchStatus{Running: w.running, Dirs: append([]string(nil), w.dirs...), WatchedDirs: len(w.watched),
		Ingests: w.ingests.Load(), Errors: w.errs.Load(), LastError: w.lastErr, LastRescan: w.lastScan,
		Polling: w.polling, Skipped: skipped, Skips: n, FirstScan: first}
}

// SkippedPaths is how many paths the watcher leaves out now, or lines of
// which it skipped (Status lists them, up to a thousand).
func (w *Watcher) SkippedPaths() int {
	skipped, _ := w.skips.list()
	paths := map[string]bool{}
	for _, s := range skipped {
		paths[s.Path] = true
	}
	return len(paths)
}

// Rescan asks for a full rescan now.
func (w *Watcher) Rescan() {
	select {
	case w.rescanC <- struct{}{}:
	default:
	}
}

// Run watches until ctx ends. It starts with a full scan (reading whatever
// changed while nobody watched) and returns after in-progress reads finish.
// It fails only if no file-system watcher can be created at all.
func (w *Watcher) Run(ctx context.Context) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.fsw, w.running, w.ctx = fsw, true, ctx
	w.mu.Unlock()
	var wg sync.WaitGroup
	for range w.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.worker(ctx)
		}()
	}
	for _, d := range w.dirs {
		w.addRoot(d)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.rescanLoop(ctx)
	}()
	w.Rescan()
	w.eventLoop(ctx, fsw)
	fsw.Close()
	w.mu.Lock()
	for _, f := range w.files {
		if f.timer != nil && f.timer.Stop() {
			f.timer = nil
		}
	}
	w.mu.Unlock()
	wg.Wait()
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
	return nil
}

func (w *Watcher) eventLoop(ctx context.Context, fsw *fsnotify.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			w.setErr(err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.Rescan()
			}
		}
	}
}

func (w *Watcher) rescanLoop(ctx context.Context) {
	for {
		w.mu.Lock()
		period := w.o.Rescan
		if w.polling {
			period = min(period, w.o.Poll)
		}
		w.mu.Unlock()
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-w.rescanC:
			t.Stop()
		}
		w.rescan(ctx)
	}
}

func isJournal(p string) bool { return strings.HasSuffix(p, ".jsonl") }

func (w *Watcher) handle(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	switch {
	case ev.Has(fsnotify.Create):
		info, err := os.Stat(p)
		if err != nil {
			return
		}
		if info.IsDir() {
			if w.isRoot(p) || w.underRoot(p) {
				for _, f := range w.addTree(p) {
					w.schedule(f, true)
				}
			}
			return
		}
		if isJournal(p) {
			w.schedule(p, true)
		}
	case ev.Has(fsnotify.Write):
		if isJournal(p) {
			w.schedule(p, true)
		}
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		w.skips.drop(p, skipWalk)
		w.mu.Lock()
		w.forget(p)
		if w.watched[p] {
			delete(w.watched, p)
			w.fsw.Remove(p) // usually gone already; the error says so
			for d := range w.watched {
				if strings.HasPrefix(d, p+string(filepath.Separator)) {
					delete(w.watched, d)
				}
			}
			for id, d := range w.byID {
				if d == p || strings.HasPrefix(d, p+string(filepath.Separator)) {
					delete(w.byID, id)
				}
			}
		}
		w.mu.Unlock()
	}
}

// forget drops what the watcher keeps about a journal that is gone, unless
// a read of it is pending or running: without it, the maps would keep every
// path ever seen. A file of that name that appears later is read as new
// (the store still knows how far it got). w.mu is held.
func (w *Watcher) forget(p string) {
	w.skips.drop(p, skipUnread, skipLines)
	delete(w.seen, p)
	if f := w.files[p]; f != nil {
		if f.timer == nil && !f.queued && !f.running {
			w.forgetFirst(p) // gone before its read: the first scan waits no more
			delete(w.files, p)
		} else {
			f.gone = true
		}
	}
}

func (w *Watcher) isRoot(p string) bool {
	for _, d := range w.dirs {
		if d == p {
			return true
		}
	}
	return false
}

func (w *Watcher) underRoot(p string) bool {
	for _, d := range w.dirs {
		if strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// addRoot watches a sessions directory, or its parent until it appears.
func (w *Watcher) addRoot(d string) {
	if info, err := os.Stat(d); err == nil && info.IsDir() {
		w.addTree(d)
		return
	}
	parent := filepath.Dir(d)
	if info, err := os.Stat(parent); err == nil && info.IsDir() {
		w.addWatch(parent)
	}
}

func (w *Watcher) addWatch(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[dir] || w.fsw == nil {
		return w.watched[dir]
	}
	if len(w.watched) >= w.o.MaxWatches {
		w.startPolling(fmt.Sprintf("more than %d directories to watch", w.o.MaxWatches))
		return false
	}
	if err := w.fsw.Add(dir); err != nil {
		switch {
		case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EMFILE):
			// inotify's max_user_watches or max_user_instances.
			w.startPolling(fmt.Sprintf("the system's limit on watches is reached at %d directories (%v)", len(w.watched), err))
		case !errors.Is(err, fs.ErrNotExist):
			w.lastErr = "watch " + dir + ": " + err.Error()
			w.log.Warn("ingest: cannot watch directory; the periodic rescan still covers it", "dir", dir, "err", err)
		}
		return false
	}
	w.watched[dir] = true
	if info, err := os.Stat(dir); err == nil {
		if id, ok := idOf(info); ok {
			w.byID[id] = dir
		}
	}
	return true
}

// startPolling turns to polling the tree, too large to watch, saying so
// once: directories already watched stay so, the others are seen by a
// rescan every o.Poll. w.mu is held.
func (w *Watcher) startPolling(why string) {
	if w.polling {
		return
	}
	w.polling = true
	w.log.Warn("ingest: too many directories to watch; polling them instead", "why", why, "watched", len(w.watched), "every", w.o.Poll)
	select {
	case w.rescanC <- struct{}{}: // the rescan loop takes the shorter period
	default:
	}
}

// elsewhere reports whether dir is a directory the watcher already watches
// under another name: a link made to a project directory (or to the
// sessions directory) while it runs. Walked, its journals would be read a
// second time, under a second name, on every append. Walk keeps one name
// within a walk; this keeps the first name across walks and events. A
// recorded name that is gone, or that is now another directory (its inode
// reused), no longer counts.
func (w *Watcher) elsewhere(dir string) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	id, ok := idOf(info)
	if !ok {
		return false
	}
	w.mu.Lock()
	other, known := w.byID[id]
	w.mu.Unlock()
	if !known || other == dir {
		return false
	}
	if oi, err := os.Stat(other); err == nil {
		if oid, ok := idOf(oi); ok && oid == id {
			return true
		}
	}
	w.mu.Lock()
	if w.byID[id] == other {
		delete(w.byID, id)
	}
	w.mu.Unlock()
	return false
}

// addTree watches dir and every directory below it, returning the journals
// found (they may have been written before the watch existed).
//
// dir and every link below it are followed only while they resolve inside
// a sessions directory (see bounds); what is left out is noted as skipped.
// The walk stops when the watcher does.
func (w *Watcher) addTree(dir string) []string {
	if why := newBounds(w.dirs).refuse(resolve(dir)); why != "" {
		w.skips.note(skipWalk, dir, 0, why)
		return nil
	}
	if w.elsewhere(dir) {
		return nil
	}
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	var files []string
	w.addWatch(dir)
	skipped := func(p, why string) { w.skips.note(skipWalk, p, 0, why) }
	WalkWithin(dir, WalkOptions{Within: w.dirs, Skipped: skipped}, func(p string, d fs.DirEntry) error {
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if w.elsewhere(p) {
				return fs.SkipDir
			}
			w.addWatch(p)
			return nil
		}
		if isJournal(p) && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// rescan walks every sessions directory, adds missing watches, and queues
// the journals whose size or mtime changed since they were last read.
func (w *Watcher) rescan(ctx context.Context) {
	start := time.Now()
	var changed []string
	sizes := map[string]int64{} // of the changed journals, for the first scan's progress
	found, whole := map[string]bool{}, true
	for _, d := range w.dirs {
		if _, err := os.Stat(d); err != nil {
			w.addRoot(d)
			whole = false
			continue
		}
		for _, f := range w.addTree(d) {
			found[f] = true
			info, err := os.Stat(f)
			if err != nil {
				continue
			}
			w.mu.Lock()
			sig, ok := w.seen[f]
			w.mu.Unlock()
			if ok && sig.size == info.Size() && sig.mtime.Equal(info.ModTime()) {
				continue
			}
			changed = append(changed, f)
			sizes[f] = info.Size()
		}
	}
	if whole && ctx.Err() == nil {
		// Journals gone without an event for them (their directory moved
		// away, say) are forgotten here.
		w.mu.Lock()
		for p := range w.seen {
			if !found[p] {
				w.forget(p)
			}
		}
		for p := range w.files {
			if !found[p] {
				w.forget(p)
			}
		}
		w.mu.Unlock()
		w.skips.dropWalkBefore(start)
	}
	// A first scan stores every session: oldest first, across projects.
	SortByStart(changed)
	w.beginFirstScan(changed, sizes)
	for _, f := range changed {
		if ctx.Err() != nil {
			return
		}
		w.schedule(f, false)
	}
	w.mu.Lock()
	w.lastScan = time.Now()
	w.mu.Unlock()
}

// schedule queues a read of path: after the debounce for a live change,
// at once (behind live work) for a rescan. A file already waiting is not
// queued twice; a file being read is read again afterwards.
func (w *Watcher) schedule(path string, live bool) {
	w.mu.Lock()
	ctx := w.ctx
	if ctx == nil || ctx.Err() != nil {
		w.mu.Unlock()
		return
	}
	f := w.files[path]
	if f == nil {
		f = &fileSched{}
		w.files[path] = f
	}
	f.gone = false
	switch {
	case f.timer != nil || f.queued:
		w.mu.Unlock()
		return
	case f.running:
		f.again = true
		w.mu.Unlock()
		return
	}
	if !live {
		f.queued = true
		w.mu.Unlock()
		w.send(ctx, w.bulk, path) // blocks the rescan, not the events
		return
	}
	f.timer = time.AfterFunc(w.o.Debounce, func() {
		w.mu.Lock()
		f.timer = nil
		f.queued = true
		w.mu.Unlock()
		w.send(ctx, w.live, path)
	})
	w.mu.Unlock()
}

func (w *Watcher) send(ctx context.Context, ch chan string, path string) {
	select {
	case ch <- path:
	case <-ctx.Done():
	}
}

func (w *Watcher) worker(ctx context.Context) {
	for {
		var p string
		select {
		case p = <-w.live:
		default:
			select {
			case p = <-w.live:
			case p = <-w.bulk:
			case <-ctx.Done():
				return
			}
		}
		w.read(p)
	}
}

func (w *Watcher) read(path string) {
	w.mu.Lock()
	f := w.files[path]
	f.queued, f.running = false, true
	w.mu.Unlock()

	info, statErr := os.Stat(path)
	var rep FileReport
	var err error
	if why := w.outside(path); why != "" {
		w.skips.note(skipWalk, path, 0, why)
	} else if statErr == nil && info.Mode().IsRegular() {
		rep, err = w.serial.File(path, nil)
		w.ingests.Add(1)
		switch {
		case errors.Is(err, store.ErrWritesStopped):
			// The store refuses writes (a full disk) and says so in the
			// log once; the file is read again when writes resume.
			w.mu.Lock()
			w.lastErr = err.Error()
			w.mu.Unlock()
		case err != nil:
			w.errs.Add(1)
			w.setErr(err)
		default:
			w.mu.Lock()
			w.seen[path] = fileSig{size: info.Size(), mtime: info.ModTime()}
			w.mu.Unlock()
			w.noteProblems(path, rep)
		}
		if w.o.OnIngest != nil {
			w.o.OnIngest(path, rep, err)
		}
	}
	if !errors.Is(err, store.ErrWritesStopped) {
		// A read refused for a full disk is read again once writes resume:
		// until then the first scan is not done.
		w.readFirst(path, rep.Added)
	}

	w.mu.Lock()
	f.running = false
	again := f.again
	f.again = false
	if !again && (f.gone || errors.Is(statErr, fs.ErrNotExist)) {
		// Gone before its read ended: a rescan or an event meanwhile
		// could not forget it.
		f.gone = false
		w.forget(path)
	}
	w.mu.Unlock()
	if again {
		w.schedule(path, true)
	}
}

// outside says why the journal path must not be read, a link leading
// outside the sessions directories, or "" if it may.
func (w *Watcher) outside(path string) string {
	li, err := os.Lstat(path)
	if err != nil || li.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "" // dangling: the read finds nothing
	}
	return newBounds(w.dirs).refuse(real)
}

// noteProblems notes what a read of path skipped: the whole file, or
// lines. A file read at last is no longer skipped.
func (w *Watcher) noteProblems(path string, rep FileReport) {
	unread := false
	for _, p := range rep.Problems {
		if p.Unread {
			unread = true
			w.skips.note(skipUnread, path, 0, p.Reason)
		} else {
			w.skips.note(skipLines, path, p.Line, p.Reason)
		}
	}
	if !unread && rep.Session != "" {
		w.skips.drop(path, skipUnread)
	}
}

func (w *Watcher) setErr(err error) {
	w.mu.Lock()
	w.lastErr = err.Error()
	w.mu.Unlock()
	w.log.Warn("ingest: watcher", "err", err)
}
