package store

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	pihistory "github.com/pi-history/pi-history"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrWritesStopped is wrapped by every write refused because the store is
// faulted (its disk is full, or a write failed): nothing of the write was
// stored, and reads go on. Test with errors.Is.
var ErrWritesStopped = pihistory.ErrWritesStopped

// DefaultReserveBytes is the free space under which a store refuses
// writes when Options.ReserveBytes is 0: room for both memtables to be
// flushed and for the compactions that follow, so that Pebble itself never
// meets a full disk (see docs/decisions/160-write-faults.md).
const DefaultReserveBytes = 2*memTableBytes + 64<<20

// defaultProbeEvery is how often a store whose writes stopped for want of
// space looks again.
const defaultProbeEvery = time.Second

// Fault is a condition that keeps the store from working normally.
type Fault struct {
	// Part is what is affected: "writes" (ingest and pushes are refused
	// until it clears) or "background" (Pebble's flushes or compactions
	// fail; writes go on until the space they need runs out).
	Part  string    `json:"part"`
	Cause string    `json:"cause"`
	Since time.Time `json:"since"`
	// Restart: the fault does not clear by itself; writes resume once
	// the process is restarted (a write failed inside Pebble, whose
	// commit pipeline does not recover from that).
	Restart bool `json:"restart,omitempty"`
}

// faults tracks a store's faults. The structured log says when each starts
// and when it clears, once; what happens meanwhile is counted instead.
type faults struct {
	log *slog.Logger
	dir string

	mu         sync.Mutex
	write      *Fault // nil: writes go on
	background *Fault
	refused    int // writes refused during the current write fault
	repeats    int // background errors during the current background fault
	resumed    chan struct{}
	restart    chan struct{} // closed once a restart would resume writes
	probing    bool
	broken     error // the error that broke the commit pipeline; never cleared
}

// list returns a copy of the current faults, writes first.
func (f *faults) list() []Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Fault
	for _, x := range []*Fault{f.write, f.background} {
		if x != nil {
			out = append(out, *x)
		}
	}
	return out
}

// stopWrites records a write fault caused by cause, logging it unless one
// is already current; restart marks a fault that only a restart clears.
func (f *faults) stopWrites(cause error, restart bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if restart && f.broken == nil {
		f.broken = cause
	}
	if f.write != nil && (f.write.Restart || !restart) {
		f.refused++
		return
	}
	f.write = &Fault{Part: "writes", Cause: cause.Error(), Since: time.Now(), Restart: restart}
	f.refused = 0
	if restart {
		f.log.Error("store: a write failed inside Pebble; ingest and pushes are refused until pi-history restarts, searches and reads go on",
			"dir", f.dir, "cause", cause.Error())
		return
	}
	f.log.Warn("store: writes stopped; ingest and pushes are refused until this clears, searches and reads go on",
		"dir", f.dir, "cause", cause.Error())
}

// writesOK clears a write fault that does not need a restart, logging
// that it cleared, and wakes those waiting on resumed.
func (f *faults) writesOK() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.write == nil || f.write.Restart {
		return
	}
	f.log.Info("store: writes resumed", "dir", f.dir, "stoppedFor", time.Since(f.write.Since).Round(time.Millisecond).String(),
		"refused", f.refused, "cause", f.write.Cause)
	f.write = nil
	close(f.resumed)
	f.resumed = make(chan struct{})
}

// resumedChan is closed the next time a write fault clears.
func (f *faults) resumedChan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resumed
}

// backgroundFailed records an error of Pebble's background work (a flush,
// a compaction, a file deletion).
func (f *faults) backgroundFailed(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.background != nil {
		f.repeats++
		return
	}
	f.background = &Fault{Part: "background", Cause: msg, Since: time.Now()}
	f.repeats = 0
	f.log.Warn("store: Pebble's background work is failing; it retries, and this is logged again once it succeeds",
		"dir", f.dir, "cause", msg)
}

// backgroundOK clears a background fault once a flush or compaction
// succeeds.
func (f *faults) backgroundOK() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.background == nil {
		return
	}
	f.log.Info("store: Pebble's background work succeeds again", "dir", f.dir,
		"failingFor", time.Since(f.background.Since).Round(time.Millisecond).String(), "repeats", f.repeats, "cause", f.background.Cause)
	f.background = nil
}

// Faults lists what keeps the store from working normally: empty when
// all is well. A server reports them as degraded health.
func (s *Store) Faults() []Fault { return s.faults.list() }

// WritesResumed returns a channel closed the next time a write fault
// clears by itself (space came back): ingest that was refused can be
// retried at once instead of at its next periodic look.
func (s *Store) WritesResumed() <-chan struct{} { return s.faults.resumedChan() }

// writable says whether a write may be committed now: not when the
// commit pipeline is broken, nor when the disk holds less than the
// reserve. A refusal wraps ErrWritesStopped and records a write fault;
// while space is short, a probe clears the fault once it is back.
func (s *Store) writable() error {
	s.faults.mu.Lock()
	broken := s.faults.broken
	s.faults.mu.Unlock()
	if broken != nil {
		err := fmt.Errorf("%w: a write to the store in %s failed earlier (%v); a server restarts itself once the disk takes writes again, any other command must be run again then", ErrWritesStopped, s.dir, broken)
		s.faults.stopWrites(broken, true)
		return err
	}
	if err := s.spaceShort(); err != nil {
		s.faults.stopWrites(err, false)
		s.startProbe()
		return err
	}
	return nil
}

// spaceShort returns an error wrapping ErrWritesStopped when the store's
// disk has less free space than the reserve. A file system that cannot
// tell (an in-memory one) is never short.
func (s *Store) spaceShort() error {
	if s.reserve <= 0 {
		return nil
	}
	du, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		return nil
	}
	if du.AvailBytes < uint64(s.reserve) {
		return fmt.Errorf("%w: the disk holding %s has %s free, under the %s kept in reserve; free some space and ingest resumes by itself",
			ErrWritesStopped, s.dir, mib(du.AvailBytes), mib(uint64(s.reserve)))
	}
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// startProbe starts, unless one runs, the goroutine that looks every
// probeEvery whether the disk takes writes again: for want of space, it
// clears the write fault once space is back; after a failed write broke
// the commit pipeline, it closes RestartWanted once there is space and a
// small file can be written and synced in the store's directory.
func (s *Store) startProbe() {
	s.faults.mu.Lock()
	if s.faults.probing || s.closed.Load() {
		s.faults.mu.Unlock()
		return
	}
	s.faults.probing = true
	s.faults.mu.Unlock()
	s.probes.Add(1)
	go func() {
		defer s.probes.Done()
		defer func() {
			s.faults.mu.Lock()
			s.faults.probing = false
			s.faults.mu.Unlock()
		}()
		t := time.NewTicker(s.probeEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			if s.spaceShort() != nil {
				continue
			}
			s.faults.mu.Lock()
			broken := s.faults.broken != nil
			s.faults.mu.Unlock()
			if !broken {
				s.faults.writesOK()
				return
			}
			if s.diskTakesWrites() == nil {
				s.faults.wantRestart()
				return
			}
		}
	}()
}

// diskTakesWrites writes, syncs and removes a small file in the store's
// directory.
func (s *Store) diskTakesWrites() error {
	name := s.fs.PathJoin(s.dir, "write-probe.tmp")
	f, err := s.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := s.fs.Remove(name); err == nil {
		err = rerr
	}
	return err
}

// RestartWanted returns a channel closed once writes stopped by a failed
// write could go on, the disk taking writes again: only a new process can
// use Pebble again (see commitBatch), so a server closes and starts
// itself again then, and ingest resumes without anyone's help.
func (s *Store) RestartWanted() <-chan struct{} { return s.faults.restart }

// wantRestart closes restart, once.
func (f *faults) wantRestart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.restart:
		return
	default:
	}
	f.log.Info("store: the disk takes writes again; a restart resumes them", "dir", f.dir)
	close(f.restart)
}

// commitBatch commits b with o, turning what Pebble does on a failed
// commit into an error: Pebble calls its logger's Fatalf (which panics,
// see pebbleLogger) or panics with the log writer's error, and its
// commit pipeline is unusable from then on. The store then refuses writes
// until a restart (a restart replays the log; nothing acknowledged is
// lost); reads go on, since they do not use the pipeline.
func (s *Store) commitBatch(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var cause error
		switch v := r.(type) {
		case pebbleFatal:
			cause = errors.New(string(v))
		case error:
			cause = v
		default:
			panic(r)
		}
		s.faults.stopWrites(cause, true)
		s.startProbe()
		err = fmt.Errorf("store: commit to %s: %w: %v (the write may or may not be stored; a server restarts itself once the disk takes writes again)", s.dir, ErrWritesStopped, cause)
	}()
	if err := b.Commit(o); err != nil {
		s.faults.stopWrites(err, false)
		return fmt.Errorf("store: commit to %s: %w (the write was not stored)", s.dir, err)
	}
	s.faults.writesOK()
	return nil
}

// faultCloseWait is how long Close waits for Pebble while a fault is
// current.
const faultCloseWait = 5 * time.Second

// closeFaulted closes a store with fault f current. A flush on a disk
// that is full may be retried until space is back, and once a failed
// write broke the commit pipeline, Pebble's Close takes the pipeline's
// lock, which the failed commit may still hold: either could keep a
// server from ever stopping. So Pebble is given faultCloseWait (without a
// flush when the pipeline is broken), then left to the process's exit.
// Nothing acknowledged is lost either way: a server's writes are synced
// through the log, which the next open replays, and a bulk store's count
// only once Persist has flushed them.
func (s *Store) closeFaulted(f Fault) error {
	done := make(chan error, 1)
	go func() {
		if f.Restart {
			done <- s.db.Close()
			return
		}
		done <- s.closeDB()
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("store: close %s during a fault (%s): %w", s.dir, f.Cause, err)
		}
		return nil
	case <-time.After(faultCloseWait):
		return fmt.Errorf("store: close %s: Pebble did not close within %v during a fault (%s); its log is replayed at the next open", s.dir, faultCloseWait, f.Cause)
	}
}

// pebbleFatal is the panic value of pebbleLogger.Fatalf.
type pebbleFatal string

// pebbleLogger puts what Pebble logs in the structured log: its
// informational chatter is dropped, its errors become (once per fault) a
// background fault, and a fatal error panics with pebbleFatal instead of
// exiting, so that a failed commit is an error of that commit (see
// commitBatch). Pebble never continues after Fatalf, so it must not
// return; in a background goroutine the panic ends the process as the
// exit did, after a structured line saying why.
type pebbleLogger struct{ f *faults }

func (pebbleLogger) Infof(string, ...interface{}) {}

func (l pebbleLogger) Errorf(format string, args ...interface{}) {
	l.f.backgroundFailed(fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, fatalCommit) { // commitBatch logs those
		l.f.log.Error("store: Pebble reports a fatal error; the process ends", "dir", l.f.dir, "cause", msg)
	}
	panic(pebbleFatal(msg))
}

// fatalCommit starts the message of Pebble's Fatalf for a failed commit
// (DB.applyInternal), raised in the committing goroutine.
const fatalCommit = "pebble: fatal commit error"

// eventListener reports Pebble's background errors as a background fault,
// cleared by the next flush or compaction that succeeds.
func (f *faults) eventListener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) { f.backgroundFailed(err.Error()) },
		FlushEnd: func(i pebble.FlushInfo) {
			if i.Err == nil {
				f.backgroundOK()
			}
		},
		CompactionEnd: func(i pebble.CompactionInfo) {
			if i.Err == nil {
				f.backgroundOK()
			}
		},
	}
}

// defaultFS is the file system of a store opened without Options.FS.
var defaultFS = vfs.Default
