//go:build unix

package index

import "syscall"

// peakRSSMB is the process's peak RSS in MB.
func peakRSSMB() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return float64(ru.Maxrss) / 1024, true // kB on Linux
}
