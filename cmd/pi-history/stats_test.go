package main

import (
	"strings"
	"testing"

	"github.com/pi-history/pi-history/service"
)

// The text output gives the count of what a server's watcher leaves out,
// when it comes from a server that watches.
func TestStatsShowsWhatTheWatcherSkips(t *testing.T) {
	three, none := 3, 0
	for _, tc := range []struct {
		skipped *int
		want    string
	}{
		{&three, "watcher:     3 paths left out"},
		{&none, "watcher:     0 paths left out"},
		{nil, ""},
	} {
		var b strings.Builder
		printStats(&b, service.Stats{SkippedPaths: tc.skipped})
		got := b.String()
		if tc.want == "" && strings.Contains(got, "watcher:") || !strings.Contains(got, tc.want) {
			t.Errorf("skipped %v: output\n%s\nwant a line with %q", tc.skipped, got, tc.want)
		}
	}
}
