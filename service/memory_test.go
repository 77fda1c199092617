package service

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestCacheForTakesASixteenthWithinBounds: a sixteenth of the memory,
// never below 256 MB or above 2 GB, and 512 MB when the memory is unknown.
func TestCacheForTakesASixteenthWithinBounds(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		total, want int64
	}{
		{0, 512 * mb},
		{-1, 512 * mb},
		{2048 * mb, 256 * mb},
		{8192 * mb, 512 * mb},
		{12288 * mb, 768 * mb},
		{24576 * mb, 1536 * mb},
		{32768 * mb, 2048 * mb},
		{256 << 30, 2048 * mb},
	} {
		if got := cacheFor(tc.total); got != tc.want {
			t.Errorf("cacheFor(%d MB) = %d MB, want %d MB", tc.total/mb, got/mb, tc.want/mb)
		}
	}
}

// TestSketchForTakesASixthWithinBounds: a sixth of the memory, never below
// 1 GB (also when the memory is unknown) or above 8 GB.
func TestSketchForTakesASixthWithinBounds(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		total, want int64
	}{
		{0, 1024 * mb},
		{-1, 1024 * mb},
		{4096 * mb, 1024 * mb},
		{8192 * mb, 1365 * mb},
		{24576 * mb, 4096 * mb},
		{48 << 30, 8192 * mb},
		{256 << 30, 8192 * mb},
	} {
		if got := sketchFor(tc.total); got/mb != tc.want/mb {
			t.Errorf("sketchFor(%d MB) = %d MB, want %d MB", tc.total/mb, got/mb, tc.want/mb)
		}
	}
}

// TestMemTotalReadsProcMeminfo: MemTotal's kB in bytes; 0 without it.
func TestMemTotalReadsProcMeminfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"MemTotal:       24558684 kB\nMemFree:        17000000 kB\n", 24558684 << 10},
		{"MemFree:        17000000 kB\nMemTotal: 1024 kB\n", 1024 << 10},
		{"MemFree:        17000000 kB\n", 0},
		{"MemTotal: lots kB\n", 0},
		{"", 0},
	} {
		if got := memTotal([]byte(tc.in)); got != tc.want {
			t.Errorf("memTotal(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestMachineMemoryIsReadWhereSupported: on Linux and macOS the machine's
// memory is known.
func TestMachineMemoryIsReadWhereSupported(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("memory is not read on", runtime.GOOS)
	}
	if n := machineMemory(); n < 64<<20 {
		t.Errorf("machineMemory() = %d bytes, want the machine's memory", n)
	}
}

// TestServeMemoryTuning: a server sets the memory limit (room for its
// sketch cache and block cache on top of ServeOtherHeap) and the
// collector's pace, and
// leaves either alone when the environment sets it (GOMEMLIMIT, GOGC).
func TestServeMemoryTuning(t *testing.T) {
	oldPct, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPct); debug.SetMemoryLimit(oldLimit) })
	const cache, sketch = 64 << 20, 1 << 30
	for _, tc := range []struct {
		gogc, memlimit string
		wantPct        int
		wantLimit      int64
	}{
		{"", "", ServeGCPercent, ServeOtherHeap + sketch + cache},
		{"50", "", 100, ServeOtherHeap + sketch + cache},
		{"", "1GiB", ServeGCPercent, 3 << 30},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.memlimit)
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(3 << 30)
		TuneServeMemory(cache, sketch)
		if pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); pct != tc.wantPct || limit != tc.wantLimit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: pace %d, limit %d; want %d, %d", tc.gogc, tc.memlimit, pct, limit, tc.wantPct, tc.wantLimit)
		}
	}
}
