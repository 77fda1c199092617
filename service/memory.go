package service

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// ServeCacheBytes is the block cache a server takes when not told: a
// sixteenth of the memory this process may use, between 256 MB and 2 GB
// (512 MB where that memory cannot be read). Warm fills three quarters of
// it with texts and searches the rest, so a small history never takes it
// all. A million entries hold about 1 GB of text: 1 GB instead of 512 MB
// cut the p99 of first pages of 6-40 character needles by half or more,
// and 1.5 GB (every text cached) took the p99 of 3-5 / 6-12 character
// needles from 20-50 / 31-36 to 14-16 / 24 ms.
func ServeCacheBytes() int64 { return cacheFor(totalMemory()) }

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

// ServeSketchBytes is the bound of a server's sketch cache when not told:
// a sixth of the memory this process may use, between 1 and 8 GB (1 GB
// where that memory cannot be read). The cache takes only what the
// history needs, ~1,150 MB per million entries (sketches, records,
// bit-sliced rows, chunk filters and their run indexes), so on a 24 GB
// machine about 3.5 million entries stay in memory; texts are held in what is left, up to
// seven eighths of the bound (store.WarmHotTexts). What does not fit is the oldest
// history, whose sketches are then read from disk on each search that
// reaches them: 1,000,012 entries under a bound of 500 MB took exact
// counts from 3.7 to 64 ms (p50).
func ServeSketchBytes() int64 { return sketchFor(totalMemory()) }

// sketchFor is ServeSketchBytes for a process that may use total bytes
// (0: unknown).
func sketchFor(total int64) int64 {
	const lo, hi = 1 << 30, 8 << 30
	return min(max(total/6, lo), hi)
}

// ServeOtherHeap is what a server keeps in its Go heap for good besides
// its sketch cache and block cache: each session's current branch, cached
// trees, the index's readers (~400 MB at a million entries), with room
// for the garbage of searches in flight.
const ServeOtherHeap = 1 << 30

// TuneServeMemory sets the Go memory limit (ServeOtherHeap, plus the
// sketch cache's bound of sketch bytes and the block cache of cache
// bytes) and the collector's pace (ServeGCPercent) as a server runs,
// unless GOMEMLIMIT or GOGC say otherwise. A server keeps much in its heap
// for good (at a million entries ~1.1 GB), so under the 768 MiB of other
// commands the collector ran whenever ~60 MB had been allocated, marking
// the whole heap each time; under this limit it runs at the pace
// ServeGCPercent sets. Built without cgo, Pebble keeps its block cache in
// the Go heap: the limit leaves it room on top of what the server keeps.
func TuneServeMemory(cache, sketch int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(ServeOtherHeap + sketch + cache)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(ServeGCPercent)
	}
}

// cacheFor is ServeCacheBytes for a process that may use total bytes (0:
// unknown).
func cacheFor(total int64) int64 {
	const lo, hi, unknown = 256 << 20, 2 << 30, 512 << 20
	if total <= 0 {
		return unknown
	}
	return min(max(total/16, lo), hi)
}

// totalMemory is the memory this process may use: the machine's (Linux:
// MemTotal; macOS: hw.memsize), or its cgroup's limit when lower. 0 when
// neither can be read.
func totalMemory() int64 {
	total := machineMemory()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total <= 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal reads MemTotal (in kB) from the contents of /proc/meminfo, in
// bytes; 0 when absent.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return 0
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
