//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only: its pages are the kernel's to
// keep or drop, never the Go heap's.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("index: open postings: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("index: open postings: %w", err)
	}
	if fi.Size() == 0 {
		return nil, func() error { return nil }, nil
	}
	if fi.Size() > 1<<40 {
		return nil, nil, fmt.Errorf("index: postings %s is %d bytes, too large to be one", path, fi.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("index: map postings %s: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
