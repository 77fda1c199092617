package service

import (
	"runtime"
	"testing"
)

// TestDefaultBudgetIsAQuarterGigabyteOrAQuarterOfASmallMachine: 256 MB,
// unless the machine (or cgroup) has less than a gigabyte: then a quarter
// of it, never below MinMemoryBytes.
func TestDefaultBudgetIsAQuarterGigabyteOrAQuarterOfASmallMachine(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		total, want int64
	}{
		{0, 256 * mb},
		{-1, 256 * mb},
		{128 * mb, 64 * mb},
		{512 * mb, 128 * mb},
		{1024 * mb, 256 * mb},
		{24576 * mb, 256 * mb},
		{256 << 30, 256 * mb},
	} {
		if got := memoryFor(tc.total); got != tc.want {
			t.Errorf("memoryFor(%d MB) = %d MB, want %d MB", tc.total/mb, got/mb, tc.want/mb)
		}
	}
}

// TestSplitMemoryLeavesTheGoHeapMostOfTheBudget: Pebble's parts (its
// block cache and two memtables) never take more than half the budget,
// whatever its size, and the Go limit, which leaves them out where they
// live outside the Go heap, stays within the budget and keeps the other
// half for the Go heap.
func TestSplitMemoryLeavesTheGoHeapMostOfTheBudget(t *testing.T) {
	for _, total := range []int64{MinMemoryBytes, 100 << 20, 256 << 20, 2 << 30, 1<<40 + 7} {
		m := SplitMemory(total)
		if m.Total != total {
			t.Errorf("SplitMemory(%d).Total = %d", total, m.Total)
		}
		if sum := m.Cache + 2*m.MemTable; sum > total/2 || m.Cache <= 0 || m.MemTable < 2<<20 || m.MemTable > 32<<20 {
			t.Errorf("SplitMemory(%d) = %+v: Pebble's parts sum to %d, want a cache > 0, memtables of 2-32 MB, and the sum <= %d", total, m, sum, total/2)
		}
		if m.GoLimit > total || m.GoLimit < total/2 {
			t.Errorf("SplitMemory(%d).GoLimit = %d: want at most the budget and at least half of it", total, m.GoLimit)
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
