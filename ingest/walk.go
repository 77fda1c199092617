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
// given, not where the links point, so that a journal keeps one name.
// Directories reached through links are walked after everything else, so
// that a directory found both under its own name and through a link keeps
// its own name, wherever the link sorts. An
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
	type linked struct {
		path string
		d    fs.DirEntry
	}
	var later []linked // directories reached through links, walked last
	var walk func(dir string) error
	// dirInto shows a directory to fn and walks it, unless it was entered
	// before or fn skips it.
	dirInto := func(p string, e fs.DirEntry) error {
		if !enter(p) {
			return nil
		}
		switch err := fn(p, e); {
		case err == fs.SkipDir:
			return nil
		case err != nil:
			return err
		}
		return walk(p)
	}
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			link := e.Type()&fs.ModeSymlink != 0
			if link {
				fi, err := os.Stat(p)
				if err != nil {
					continue // dangling
				}
				e = fs.FileInfoToDirEntry(fi)
			}
			switch {
			case !e.IsDir():
				if err := fn(p, e); err != nil {
					return err
				}
			case link:
				later = append(later, linked{p, e})
			default:
				if err := dirInto(p, e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if !enter(root) {
		return nil
	}
	if err := walk(root); err != nil {
		return err
	}
	for len(later) > 0 {
		l := later[0]
		later = later[1:]
		if err := dirInto(l.path, l.d); err != nil {
			return err
		}
	}
	return nil
}

type dirID struct{ dev, ino uint64 }

func idOf(info fs.FileInfo) (dirID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, false
	}
	return dirID{uint64(st.Dev), uint64(st.Ino)}, true
}
