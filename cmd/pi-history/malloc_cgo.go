//go:build cgo && linux

package main

/*
#include <malloc.h>
static void pih_limit_malloc_arenas(void) {
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, 2);
#endif
}
*/
import "C"

// limitMallocArenas caps C's malloc at two arenas (glibc; a no-op where
// the C library has no such setting). Built with cgo, Pebble allocates its
// block cache and memtables with malloc from many threads, and an arena
// per thread kept memory the budget does not count
// (docs/measurements/2026-12-06-memory-budget.md, decision 340).
func limitMallocArenas() { C.pih_limit_malloc_arenas() }
