// Package procmem holds the process-wide memory settings of a server: the
// Go memory limit and the collector's pace (TuneServe). They change the
// whole process, so only main packages call it (cmd/pi-history and
// bench/search); library packages set nothing process-wide
// (TestOnlyMainPackagesSetProcessSettings).
package procmem

import (
	"os"
	"runtime/debug"
)

// ServeGCPercent is the collector's pace in a server (GOGC), unless GOGC
// is set: Go's default. A server's caches live outside the Go heap
// (Pebble's, in C memory) or in the page cache (the index's files), and
// its searches keep little heap: a slower pace makes the collector run
// every few megabytes of allocation (decision 420, which amends decision
// 004).
const ServeGCPercent = 100

// TuneServe sets the Go memory limit (limit bytes: the part of the
// server's budget that lives in the Go heap, service.Memory.GoLimit) and
// the collector's pace (ServeGCPercent), unless GOMEMLIMIT or GOGC say
// otherwise. The parts the server keeps in the Go heap are bounded below
// the limit (service.SplitMemory), leaving the collector room to work.
func TuneServe(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(ServeGCPercent)
	}
}

// OneShotGCPercent is the collector's pace in a one-shot search, unless
// GOGC is set. With --all its heap holds a page or two of hits, so at the
// default pace it collects many times over one such command
// (docs/measurements/2026-12-07-goals-with-the-text-file.md); a first page
// collects several times at the default pace, mostly the garbage of
// opening the store and index, and each collection's signals and wake-ups
// cost time (docs/measurements/2026-12-07-a-slower-kernel.md). A slower
// pace costs a few megabytes for less time.
const OneShotGCPercent = 400

// TuneOneShot sets the collector's pace of a one-shot search
// (OneShotGCPercent), unless GOGC says otherwise.
func TuneOneShot() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(OneShotGCPercent)
	}
}
