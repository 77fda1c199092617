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

// ServeGCPercent is the collector's pace in a server (GOGC; the Go default
// is 100), unless GOGC is set. A server keeps its caches in the heap for
// good; at the default pace the heap would grow by as much again before a
// collection, and every search's allocations would land on pages the
// process never touched, each a page fault. At 25 a collection recycles
// pages already touched, and the heap stays near 1.25x what it keeps
// (docs/decisions/004-server-gc-pace-and-memory-limit.md).
const ServeGCPercent = 25

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

// OneShotGCPercent is the collector's pace in a one-shot command that
// streams many results (search --all), unless GOGC is set. Its heap holds a
// page or two of hits, so at the default pace it collects many times over
// one such command; a slower pace costs
// it a little more memory for less time
// (docs/measurements/2026-12-07-goals-with-the-text-file.md).
const OneShotGCPercent = 400

// TuneOneShot sets the collector's pace of a one-shot command that streams
// many results (OneShotGCPercent), unless GOGC says otherwise.
func TuneOneShot() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(OneShotGCPercent)
	}
}
