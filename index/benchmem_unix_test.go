//go:build unix

package index

import (
	"runtime"
	"syscall"
	"testing"
)

// reportMemory adds the Go heap in use and the process's peak RSS at the
// end of a benchmark to its figures (the house rule: every benchmark
// prints the memory its speed took).
func reportMemory(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB") // kB on Linux
	}
}
