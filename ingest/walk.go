package ingest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WalkOptions bound a walk.
type WalkOptions struct {
	// Within are the directories a link may lead into: a link is followed
	// only when its target, resolved, lies inside one of them. Default: the
	// root.
	Within []string
	// Skipped, if set, hears of what the walk leaves out and why: a link
	// leading outside Within or into /proc, /sys or /dev, a directory it
	// cannot read. A dangling link or a directory gone meanwhile is not
	// reported.
	Skipped func(path, reason string)
}

// Walk is WalkWithin with the default options: links are followed only
// inside root.
func Walk(root string, fn func(path string, d fs.DirEntry) error) error {
	return WalkWithin(root, WalkOptions{}, fn)
}

// WalkWithin calls fn for everything below root (root itself not
// included), directories before what they hold, in lexical order,
// following symbolic links while their targets stay inside o.Within (the
// root included: a sessions directory is often a link to another disk,
// and filepath.WalkDir would see only the link). Each directory is entered
// once (a link back up the tree, or a second link to the same directory,
// is neither followed nor shown to fn), and /proc, /sys and /dev never.
// Paths stay under root as given, not where the links point, so that a
// journal keeps one name. Directories reached through links are walked
// after everything else, so that a directory found both under its own name
// and through a link keeps its own name, wherever the link sorts. An entry
// that is a link reaches fn with its target's type; dangling links and
// unreadable directories are skipped (o.Skipped hears of the latter). fn
// returning fs.SkipDir for a directory skips what it holds; any other
// error stops the walk.
func WalkWithin(root string, o WalkOptions, fn func(path string, d fs.DirEntry) error) error {
	within := o.Within
	if len(within) == 0 {
		within = []string{root}
	}
	b := newBounds(within)
	skipped := func(path, reason string) {
		if o.Skipped != nil {
			o.Skipped(path, reason)
		}
	}
	seen := map[dirID]bool{}
	// enter reports whether dir (real, resolved) is a directory not entered
	// before, and marks it entered. A directory a link leads back to (or a
	// second link to it) is neither entered nor shown to fn: a watch on it
	// under a second name would report its files under that name.
	enter := func(dir, real string) bool {
		if inKernelDir(real) {
			skipped(dir, real+" is a kernel file system; not entered")
			return false
		}
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
		path, real string
		d          fs.DirEntry
	}
	var later []linked // directories reached through links, walked last
	var walk func(dir, real string) error
	// dirInto shows a directory to fn and walks it, unless it was entered
	// before or fn skips it.
	dirInto := func(p, real string, e fs.DirEntry) error {
		if !enter(p, real) {
			return nil
		}
		switch err := fn(p, e); {
		case err == fs.SkipDir:
			return nil
		case err != nil:
			return err
		}
		return walk(p, real)
	}
	walk = func(dir, real string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				skipped(dir, "cannot read the directory ("+cause(err)+"); what it holds is not read")
			}
			// What ReadDir read before the error is still walked.
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			rp := filepath.Join(real, e.Name())
			link := e.Type()&fs.ModeSymlink != 0
			if link {
				r, err := filepath.EvalSymlinks(p)
				if err != nil {
					continue // dangling
				}
				if why := b.refuse(r); why != "" {
					skipped(p, why)
					continue
				}
				fi, err := os.Stat(p)
				if err != nil {
					continue
				}
				e, rp = fs.FileInfoToDirEntry(fi), r
			}
			switch {
			case !e.IsDir():
				if err := fn(p, e); err != nil {
					return err
				}
			case link:
				later = append(later, linked{p, rp, e})
			default:
				if err := dirInto(p, rp, e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	realRoot := resolve(root)
	if why := b.refuse(realRoot); why != "" {
		skipped(root, why)
		return nil
	}
	if !enter(root, realRoot) {
		return nil
	}
	if err := walk(root, realRoot); err != nil {
		return err
	}
	for len(later) > 0 {
		l := later[0]
		later = later[1:]
		if err := dirInto(l.path, l.real, l.d); err != nil {
			return err
		}
	}
	return nil
}

// cause is what went wrong in err, without the path it names.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

type dirID struct{ dev, ino uint64 }

func idOf(info fs.FileInfo) (dirID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, false
	}
	return dirID{uint64(st.Dev), uint64(st.Ino)}, true
}
