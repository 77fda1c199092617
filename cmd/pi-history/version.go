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
version; one built in a checkout names the commit (with "modified" when the tree
had uncommitted changes). Quote it in bug reports.`,
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
	version, commit, when, modified := "(unknown)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
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
	line := "pi-history " + version
	// Go names a checkout's build by its commit (v0.0.0-TIME-COMMIT+dirty);
	// older releases and -buildvcs builds of other kinds say "(devel)".
	if short := commit[:min(12, len(commit))]; short != "" && !strings.Contains(version, short) {
		line += " commit " + short
		if when != "" {
			line += " of " + when
		}
		if modified {
			line += " (modified)"
		}
	}
	return line + fmt.Sprintf(", %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
