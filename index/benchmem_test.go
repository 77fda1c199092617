package index

import (
	"runtime"
	"testing"
)

// reportMemory adds the Go heap in use and, where the system gives it,
// the process's peak RSS at the end of a benchmark to its figures (the
// house rule: every benchmark prints the memory its speed took).
func reportMemory(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	if mb, ok := peakRSSMB(); ok {
		b.ReportMetric(mb, "peak-RSS-MB")
	}
}
