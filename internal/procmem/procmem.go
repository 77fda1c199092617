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
// is 100), unless GOGC is set. A server keeps about a gigabyte in its heap
// for good at a million entries (sketches, records, current branches), so
// at the default pace the heap may grow by as much again before a
// collection: until then every search's allocations land on pages the
// process never touched, each a page fault. In `bench/search` runs, a
// group of 200 first pages took 3,600-6,500 faults (0.04-0.12 s of system
// time) in some processes and ~50 in others, depending on where the
// preload's last collection fell; the faulting ones were up to 2.6x
// slower (1-2 characters p50 0.36-0.38 against 0.12-0.14 ms). At 25, each
// collection comes after ~250 MB and recycles pages already touched: 11
// runs in a row were all the fast kind, and the heap stays near 1.25x
// what it keeps instead of 2x.
const ServeGCPercent = 25

// ServeOtherHeap is what a server keeps in its Go heap for good besides
// its sketch cache and block cache: each session's current branch, cached
// trees, the index's readers (~400 MB at a million entries), with room
// for the garbage of searches in flight.
const ServeOtherHeap = 1 << 30

// TuneServe sets the Go memory limit (ServeOtherHeap, plus the sketch
// cache's bound of sketch bytes and the block cache of cache bytes) and
// the collector's pace (ServeGCPercent) as a server runs, unless
// GOMEMLIMIT or GOGC say otherwise. A server keeps much in its heap for
// good (at a million entries ~1.1 GB), so under the 768 MiB of other
// commands the collector ran whenever ~60 MB had been allocated, marking
// the whole heap each time; under this limit it runs at the pace
// ServeGCPercent sets. Built without cgo, Pebble keeps its block cache in
// the Go heap: the limit leaves it room on top of what the server keeps.
func TuneServe(cache, sketch int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(ServeOtherHeap + sketch + cache)
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
// missed the TLB too (three pairs of bench/search runs: p50 of 6-12
// character first pages 0.41 -> 0.37 ms, of 13-40 0.52 -> 0.43). Where
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
// touched, each a page fault when first written (see ServeGCPercent):
// in one bench/search run, the first group of 200 first pages (3-5
// characters) took 2,999 faults and a p50 of 0.211 ms; with the headroom
// touched, the next run took 13 and 0.054 ms.
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
