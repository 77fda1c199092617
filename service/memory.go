package service

import (
	"bufio"
	"bytes"
	"os"
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
