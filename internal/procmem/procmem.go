// Package procmem holds the process-wide memory settings of a server: the
// Go memory limit and the collector's pace (TuneServe), and what is done
// to the process's memory once the preload is over (Settle: the heap's
// headroom touched, then the memory collapsed into huge pages). Each
// changes the whole process, so only main packages call them
// (cmd/pi-history and bench/search); library packages set nothing
// process-wide (TestOnlyMainPackagesSetProcessSettings).
package procmem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/pi-history/pi-history/internal/hugepages"
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

// Settled says what Settle did to the process's memory and how long each
// part took.
type Settled struct {
	Headroom     int64 // bytes allocated and written once for the heap to grow into (see touchHeadroom)
	HeadroomTime time.Duration
	Huge         hugepages.Stats // the process's memory collapsed into huge pages
	HugeErr      error           // why none was (hugepages.ErrUnsupported), or nil
	HugeTime     time.Duration
}

// Settle is what a server does to its memory after the preload
// (service.Service.Warm), once the heap holds what it will keep: it
// touches the memory the heap will grow into (touchHeadroom), then, unless
// smallPages, asks the kernel to move the process's memory, now holding
// all of that, into huge pages (hugepages.Collapse): searches read it
// scattered, and with small pages each read to a part not read lately
// missed the TLB too (docs/decisions/005-memory-in-huge-pages-after-the-warm-up.md). Where
// the kernel cannot collapse memory, Settled.HugeErr says so and the
// error is nil; it stops when ctx ends.
func Settle(ctx context.Context, smallPages bool) (Settled, error) {
	var s Settled
	t0 := time.Now()
	s.Headroom = touchHeadroom()
	s.HeadroomTime = time.Since(t0)
	if smallPages {
		return s, nil
	}
	t0 = time.Now()
	var err error
	s.Huge, err = hugepages.Collapse(ctx)
	s.HugeTime = time.Since(t0)
	switch {
	case errors.Is(err, hugepages.ErrUnsupported):
		s.HugeErr = err // searches run as well as small pages let them
	case err != nil:
		return s, fmt.Errorf("collapse memory into huge pages: %w", err)
	}
	return s, nil
}

// touchHeadroom collects, then allocates and writes once as many bytes as
// the heap may grow by before its next collection (GOGC percent of what
// it holds) and lets them go, and returns how many. Searches then
// allocate on pages the process has touched already. Otherwise the first
// collection cycle after the warm-up hands out pages the process never
// touched, each a page fault when first written (see ServeGCPercent;
// docs/measurements/2026-12-03-headroom-and-branch-pages.md has the runs).
func touchHeadroom() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pace := debug.SetGCPercent(-1) // no collection while the room is held
	defer debug.SetGCPercent(pace)
	if pace <= 0 {
		return 0
	}
	room := make([]byte, ms.HeapAlloc*uint64(pace)/100)
	for i := 0; i < len(room); i += 4096 {
		room[i] = 1
	}
	n := int64(len(room))
	runtime.GC() // room is garbage from here on
	return n
}
