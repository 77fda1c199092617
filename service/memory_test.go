package service

import (
	"runtime"
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
