//go:build !cgo || !linux

package main

// limitMallocArenas does nothing: built without cgo, nothing in the
// process allocates with C's malloc.
func limitMallocArenas() {}
