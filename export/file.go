package export

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrExists is returned by WriteFile for an existing file when force is off.
var ErrExists = errors.New("output file exists")

// tempFile is the part of *os.File WriteFile uses (replaceable in tests).
type tempFile interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

var createTemp = func(dir, pattern string) (tempFile, error) { return os.CreateTemp(dir, pattern) }

// WriteFile writes a file through write, atomically: the bytes go to a
// temporary file beside path (".NAME.partial-*"), which is synced and then
// renamed to path only when write and the sync succeed. On any failure the
// temporary file is removed and path is left as it was, so a partial export
// never looks complete. An existing path is refused with ErrExists unless
// force is set (then it is replaced, atomically).
func WriteFile(path string, force bool, write func(w io.Writer) error) (err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dir, base := filepath.Split(abs)
	if info, err := os.Stat(abs); err == nil {
		if info.IsDir() {
			return fmt.Errorf("output %s is a directory", path)
		}
		if !force {
			return fmt.Errorf("output %s: %w (use --force to replace it)", path, ErrExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output %s: %w", path, err)
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("output %s: directory %s does not exist", path, dir)
	}
	f, err := createTemp(dir, "."+base+".partial-*")
	if err != nil {
		return fmt.Errorf("output %s: cannot create a file in %s: %w", path, dir, unwrapPath(err, ""))
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	failed := func(err error) error {
		return fmt.Errorf("writing %s: %w%s; the partial output was removed", path, unwrapPath(err, tmp), hint(err))
	}
	if err := write(f); err != nil {
		return failed(err)
	}
	if err := f.Sync(); err != nil {
		return failed(err)
	}
	if err := f.Close(); err != nil {
		done = true
		os.Remove(tmp)
		return failed(err)
	}
	done = true
	if !force {
		// Link refuses to replace a file that appeared meanwhile.
		if err := os.Link(tmp, abs); err == nil {
			os.Remove(tmp)
			return nil
		} else if errors.Is(err, fs.ErrExist) {
			os.Remove(tmp)
			return fmt.Errorf("output %s: %w (it appeared during the export; use --force to replace it)", path, ErrExists)
		}
		// No hard links on this file system: fall back to rename.
	}
	if err := os.Rename(tmp, abs); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("output %s: %w", path, unwrapPath(err, tmp))
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func hint(err error) string {
	if errors.Is(err, syscall.ENOSPC) {
		return " (the disk is full)"
	}
	if errors.Is(err, syscall.EDQUOT) {
		return " (the disk quota is exhausted)"
	}
	return ""
}

// unwrapPath drops the temporary file's name from an *fs.PathError about
// it (or any path when tmp is ""), which would only confuse: the message
// names the destination instead.
func unwrapPath(err error, tmp string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (tmp == "" || pe.Path == tmp) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
