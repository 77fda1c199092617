//go:build cgo

package service

// pebbleOffHeap: built with cgo, Pebble allocates its block cache and
// memtables with C's allocator, outside the Go heap and its memory limit.
const pebbleOffHeap = true
