package ingest

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Walk calls fn for everything below root (root itself not included),
// directories before what they hold, in lexical order, following symbolic
// links to directories, the root included: a sessions directory is often a
// link to another disk, and filepath.WalkDir would see only the link. Each
// directory is entered once (a link back up the tree, or a second link to
// the same directory, is neither followed nor shown to fn). Paths stay under root as
// given, not where the links point, so that a journal keeps one name. An
// entry that is a link reaches fn with its target's type; dangling links
// and unreadable directories are skipped. fn returning fs.SkipDir for a
// directory skips what it holds; any other error stops the walk.
func Walk(root string, fn func(path string, d fs.DirEntry) error) error {
	seen := map[dirID]bool{}
	// enter reports whether dir is a directory not entered before, and
	// marks it entered. A directory a link leads back to (or a second link
	// to it) is neither entered nor shown to fn: a watch on it under a
	// second name would report its files under that name.
	enter := func(dir string) bool {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return false
		}
		if id, ok := idOf(info); ok {
			if seen[id] {
				return false
			}
			seen[id] = true
		}
		return true
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				fi, err := os.Stat(p)
				if err != nil {
					continue // dangling
				}
				e = fs.FileInfoToDirEntry(fi)
			}
			if !e.IsDir() {
				if err := fn(p, e); err != nil {
					return err
				}
				continue
			}
			if !enter(p) {
				continue
			}
			switch err := fn(p, e); {
			case err == fs.SkipDir:
				continue
			case err != nil:
				return err
			}
			if err := walk(p); err != nil {
				return err
			}
		}
		return nil
	}
	if !enter(root) {
		return nil
	}
	return walk(root)
}

type dirID struct{ dev, ino uint64 }

func idOf(info fs.FileInfo) (dirID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, false
	}
	return dirID{uint64(st.Dev), uint64(st.Ino)}, true
}
