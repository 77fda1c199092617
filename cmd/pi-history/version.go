package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register(&command{
		name:    "version",
		usage:   "",
		summary: "print the version, the commit it was built from and the Go release",
		help: `Also 'pi-history --version'. A binary installed with 'go install' names its module
version; one built in a git checkout with 'go build -buildvcs=true' names the
commit and its time (with "modified" when the tree had uncommitted changes).
'go run', and builds where GOFLAGS holds -buildvcs=false, record neither, and
say so. Quote it in bug reports.`,
		run: func(g *globals, args []string) error {
			if len(args) > 0 {
				return usagef("version takes no arguments")
			}
			fmt.Fprintln(g.stdout, versionLine())
			return nil
		},
	})
}

// versionLine describes this binary: module version, commit and its time,
// Go release and platform.
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(bi) + fmt.Sprintf(", %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// buildHint says how to get a binary that names its build.
const buildHint = "build it in a git checkout with 'go build -buildvcs=true ./cmd/pi-history', or install a release with 'go install'"

// describeBuild names the build bi describes (nil: none): the module
// version of a 'go install'ed release, else the commit and its time when
// the toolchain recorded them, else says that the binary does not know.
func describeBuild(bi *debug.BuildInfo) string {
	version, commit, when, modified := "", "", "", false
	if bi != nil {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	short := commit[:min(12, len(commit))]
	if version == "" || version == "(devel)" {
		if short == "" {
			return "pi-history (built without version information: " + buildHint + ")"
		}
		version = "(devel)"
	}
	line := "pi-history " + version
	// Go names a checkout's build by its commit (v0.0.0-TIME-COMMIT+dirty);
	// "(devel)" builds name it only in the settings.
	if short != "" && !strings.Contains(version, short) {
		line += " commit " + short
		if when != "" {
			line += " of " + when
		}
		if modified {
			line += " (modified)"
		}
	}
	return line
}
