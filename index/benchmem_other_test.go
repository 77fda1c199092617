//go:build !unix

package index

import (
	"runtime"
	"testing"
)

// reportMemory adds the Go heap in use at the end of a benchmark to its
// figures (the peak RSS is read where the system gives it).
func reportMemory(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
}
