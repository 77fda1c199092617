package ingest

import (
	"sync"
	"time"
)

// FirstScan is how far a watcher's first scan is: the journals it found
// changed since they were last read (every journal, for a new data
// directory), read in the order their sessions began. A server answers
// searches meanwhile over what is read so far.
type FirstScan struct {
	Files     int       // journals to read
	FilesDone int       // read (or given up on)
	Bytes     int64     // their size when found
	BytesDone int64     // the size of those read
	Entries   int       // entries stored from them
	Started   time.Time // when the scan began
	Done      bool      // every journal found was read
	Took      time.Duration
}

// firstScan tracks the first scan's journals until each is read; it logs
// when it starts, every progressEvery while it runs, and when it ends.
type firstScan struct {
	mu      sync.Mutex
	begun   bool
	st      FirstScan
	pending map[string]int64 // path -> size when found
	logged  time.Time
	now     func() time.Time
	done    chan struct{} // closed once st.Done; made by the first to ask
}

// doneChan returns fs.done, making it first (under fs.mu).
func (fs *firstScan) doneChan() chan struct{} {
	if fs.done == nil {
		fs.done = make(chan struct{})
	}
	return fs.done
}

// finish marks the first scan done and wakes those waiting (under fs.mu).
func (fs *firstScan) finish() {
	fs.st.Done = true
	close(fs.doneChan())
}

// progressEvery is how often a long first scan logs how far it is.
const progressEvery = 5 * time.Second

// beginFirstScan records the journals of the first scan with their sizes
// as the scan found them; later scans are not tracked. It says whether
// this was the first.
func (w *Watcher) beginFirstScan(files []string, sizes map[string]int64) bool {
	fs := &w.first
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.begun {
		return false
	}
	fs.begun = true
	if fs.now == nil {
		fs.now = time.Now
	}
	fs.pending = make(map[string]int64, len(files))
	for _, f := range files {
		fs.pending[f] = sizes[f]
		fs.st.Bytes += sizes[f]
	}
	fs.st.Files = len(files)
	fs.st.Started = fs.now()
	fs.logged = fs.st.Started
	if len(files) == 0 {
		fs.finish()
		return true
	}
	w.log.Info("reading Pi's sessions: the list and searches are partial until this ends", "journals", len(files), "MB", mb(fs.st.Bytes))
	return true
}

// readFirst notes that path was read (added entries), if the first scan
// waits for it.
func (w *Watcher) readFirst(path string, added int) {
	fs := &w.first
	fs.mu.Lock()
	defer fs.mu.Unlock()
	size, ok := fs.pending[path]
	if !ok {
		return
	}
	delete(fs.pending, path)
	fs.st.FilesDone++
	fs.st.BytesDone += size
	fs.st.Entries += added
	now := fs.now()
	if len(fs.pending) == 0 {
		fs.st.Took = now.Sub(fs.st.Started)
		fs.finish()
		w.log.Info("read every journal of Pi's sessions", "journals", fs.st.Files, "entries", fs.st.Entries, "MB", mb(fs.st.Bytes),
			"seconds", fs.st.Took.Round(10*time.Millisecond).Seconds(), "entriesPerSecond", rate(fs.st.Entries, fs.st.Took))
		return
	}
	if now.Sub(fs.logged) >= progressEvery {
		fs.logged = now
		w.log.Info("reading Pi's sessions", "journals", fs.st.FilesDone, "of", fs.st.Files, "percent", pctOf(fs.st.BytesDone, fs.st.Bytes),
			"entries", fs.st.Entries, "entriesPerSecond", rate(fs.st.Entries, now.Sub(fs.st.Started)))
	}
}

// forgetFirst drops path from the first scan (gone before it was read).
func (w *Watcher) forgetFirst(path string) { w.readFirst(path, 0) }

// FirstScan is how far the watcher's first scan is; ok is false before it
// began.
func (w *Watcher) FirstScan() (st FirstScan, ok bool) {
	fs := &w.first
	fs.mu.Lock()
	defer fs.mu.Unlock()
	st = fs.st
	if !st.Done && fs.now != nil {
		st.Took = fs.now().Sub(st.Started)
	}
	return st, fs.begun
}

// FirstScanDone is closed once the first scan has read every journal it
// found. A server holds back its warm-up until then: the warm-up's lists
// of first occurrences, built before the scan, would be kept up to date by
// every batch the scan stores, under the store's write lock, which slowed
// the first scan of a new data directory well below an import's rate
// (docs/decisions/260-the-first-scan-before-the-warm-up.md; runs in
// docs/measurements/2026-12-06-first-scan-against-import.md).
func (w *Watcher) FirstScanDone() <-chan struct{} {
	fs := &w.first
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.doneChan()
}

func mb(b int64) float64 { return float64(b*10/1e6) / 10 }

func pctOf(a, b int64) int {
	if b <= 0 {
		return 100
	}
	return int(a * 100 / b)
}

func rate(n int, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(float64(n) / d.Seconds())
}
