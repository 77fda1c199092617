//go:build unix

package store

import (
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// mapText maps length bytes of f from its start, read-only, or returns nil
// when f has no descriptor (a file of a test's file system) or the map
// fails: the text file is then read with positioned reads.
func mapText(f vfs.File, length int64) []byte {
	fd := f.Fd()
	if fd == vfs.InvalidFd || length <= 0 || int64(int(length)) != length {
		return nil
	}
	b, err := syscall.Mmap(int(fd), 0, int(length), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

// unmapText releases a mapping from mapText.
func unmapText(b []byte) {
	if b != nil {
		syscall.Munmap(b)
	}
}
