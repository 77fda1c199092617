//go:build !amd64

package store

// prefetch would ask the processor for the cache line holding p; here it
// does nothing.
func prefetch(p *byte) {}
