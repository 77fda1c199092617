package testutil

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ShortFS is a file system (the operating system's, or another) that
// reports, while Avail is set, that only Avail bytes are free: tests of a
// full disk set it and clear it again.
type ShortFS struct {
	vfs.FS
	Avail atomic.Uint64
}

// GetDiskUsage reports the wrapped file system's usage, with Avail free
// while it is set.
func (f *ShortFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	du, err := f.FS.GetDiskUsage(path)
	if a := f.Avail.Load(); a != 0 {
		du.AvailBytes = a
		return du, nil
	}
	return du, err
}
