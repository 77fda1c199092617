// Package hugepages asks the kernel to back the process's memory with
// huge pages (2 MB) once it holds what it will keep, so that a search's
// scattered reads through gigabytes of sketches, records and texts cost
// fewer TLB misses: in a virtual machine each miss walks two page tables.
//
// Go's runtime does not ask for huge pages, and with the common setting
// of transparent huge pages (madvise) none are given unasked. Collapse
// asks for them with MADV_COLLAPSE (Linux 6.1 and later), which copies
// what is already in memory into huge pages without changing how later
// faults are served, so memory the process touches afterwards is not
// grown by it. Elsewhere Collapse reports ErrUnsupported and does nothing.
package hugepages

import "errors"

// Stats says what Collapse did.
type Stats struct {
	Bytes   int64 // memory now in huge pages it asked for
	Ranges  int   // mappings it looked at
	Refused int64 // bytes the kernel refused as invalid (marked for small pages)
	Busy    int64 // bytes it could not collapse now (pages busy, no huge page free)
	Sparse  int64 // bytes left alone, mostly not in memory
}

// ErrUnsupported is Collapse's error where the kernel cannot collapse
// memory into huge pages (not Linux, or a kernel before 6.1).
var ErrUnsupported = errors.New("collapsing memory into huge pages is not supported here (it needs Linux 6.1 or later)")
