package ingest

import (
	"path/filepath"
	"runtime"
	"strings"
)

// kernelDirs are file systems that hold no journals and whose trees are
// endless or change under a walk (a process's task list, device nodes):
// never entered, whatever leads to them.
var kernelDirs = []string{"/proc", "/sys", "/dev"}

// bounds are the directories, resolved (links and all), that a walk may
// enter: a link is followed only while its target lies inside one of them,
// so that a link to / (or to a home directory) in a sessions directory
// cannot take the walk, and the watches, across the whole machine.
type bounds []string

// newBounds resolves dirs. A directory that does not exist (yet) counts
// under its cleaned absolute name.
func newBounds(dirs []string) bounds {
	b := make(bounds, 0, len(dirs))
	for _, d := range dirs {
		b = append(b, resolve(d))
	}
	return b
}

// resolve is the absolute path of p with every link in it followed, or p
// made absolute when that fails (p is gone, or a link in it dangles).
func resolve(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether the resolved path real lies in (or is) one of b.
func (b bounds) within(real string) bool {
	for _, d := range b {
		if real == d || strings.HasPrefix(real, d+string(filepath.Separator)) || d == string(filepath.Separator) {
			return true
		}
	}
	return false
}

// refuse says why a walk must not follow a link (or enter a directory) to
// the resolved path real, or "" if it may.
func (b bounds) refuse(real string) string {
	if inKernelDir(real) {
		return "a link into " + real + ", a kernel file system; not followed"
	}
	if !b.within(real) {
		return "a link leading outside the directories read, to " + real + "; not followed"
	}
	return ""
}

// inKernelDir reports whether the resolved path real is in /proc, /sys or
// /dev (on Linux and the like; Windows has no such tree).
func inKernelDir(real string) bool {
	if runtime.GOOS == "windows" {
		return false
	}
	for _, k := range kernelDirs {
		if real == k || strings.HasPrefix(real, k+"/") {
			return true
		}
	}
	return false
}
