//go:build !cgo

package service

// pebbleOffHeap: built without cgo, Pebble's block cache and memtables
// live in the Go heap, under its memory limit.
const pebbleOffHeap = false
