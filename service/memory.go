package service

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// DefaultMemoryBytes is a server's memory budget when not told
// (serve --memory-mb): a background service beside every agent keeps to
// a quarter of a gigabyte. A machine (or cgroup) with less than a
// gigabyte gets a quarter of what it has, and never less than MinMemoryBytes.
const DefaultMemoryBytes = 256 << 20

// MinMemoryBytes is the smallest budget a server accepts: below it the
// block cache and the collector's headroom leave searches nothing.
const MinMemoryBytes = 64 << 20

// ServeMemoryBytes is the budget a server takes when not told:
// DefaultMemoryBytes, or a quarter of the memory this process may use when
// that is smaller.
func ServeMemoryBytes() int64 { return memoryFor(totalMemory()) }

// memoryFor is ServeMemoryBytes for a process that may use total bytes
// (0: unknown).
func memoryFor(total int64) int64 {
	if total > 0 && total/4 < DefaultMemoryBytes {
		return max(total/4, MinMemoryBytes)
	}
	return DefaultMemoryBytes
}

// Memory is how a server divides its budget among what it keeps. Each
// part is a bound, not a reservation: a small history takes less.
type Memory struct {
	// Total is the budget (serve --memory-mb).
	Total int64
	// Cache is Pebble's cache of decompressed store blocks (a quarter).
	Cache int64
	// MemTable is the size of one of Pebble's memtables, two of which
	// may be in memory at once: a sixty-fourth of the budget, 2-32 MB.
	MemTable int64
	// GoLimit is the Go memory limit: the budget less what Pebble
	// allocates outside the Go heap (its cache and memtables, in a build
	// with cgo) and three sixteenths for what the C allocator and the Go
	// runtime keep beyond them.
	GoLimit int64
}

// SplitMemory divides total bytes among a server's parts. What is left
// (three quarters, less the memtables) is for the Go heap: each session's
// current branch, the index's open segment and readers, requests in
// flight and the collector's headroom. (The index's segment files and
// the store's text file are mapped: their pages are the kernel's page
// cache, not the budget's.)
func SplitMemory(total int64) Memory {
	m := Memory{Total: total, Cache: total / 4, MemTable: min(max(total/64, 2<<20), 32<<20)}
	m.GoLimit = total
	if pebbleOffHeap {
		m.GoLimit -= m.Cache + 2*m.MemTable + total*3/16
	}
	return m
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
