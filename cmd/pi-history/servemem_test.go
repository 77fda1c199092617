package main

import (
	"runtime/debug"
	"testing"

	"github.com/pi-history/pi-history/service"
)

// TestServerMemoryTuning: a server sets the memory limit (room for its
// block cache) and the collector's pace, and leaves either alone when the
// environment sets it (GOMEMLIMIT, GOGC).
func TestServerMemoryTuning(t *testing.T) {
	oldPct, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPct); debug.SetMemoryLimit(oldLimit) })
	const cache = 64 << 20
	for _, tc := range []struct {
		gogc, memlimit string
		wantPct        int
		wantLimit      int64
	}{
		{"", "", service.ServeGCPercent, serveHeapLimit + cache},
		{"50", "", 100, serveHeapLimit + cache},
		{"", "1GiB", service.ServeGCPercent, 3 << 30},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.memlimit)
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(3 << 30)
		tuneServerMemory(cache)
		if pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); pct != tc.wantPct || limit != tc.wantLimit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: pace %d, limit %d; want %d, %d", tc.gogc, tc.memlimit, pct, limit, tc.wantPct, tc.wantLimit)
		}
	}
}
