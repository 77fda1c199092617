//go:build !unix

package index

// peakRSSMB: this system does not give it.
func peakRSSMB() (float64, bool) { return 0, false }
