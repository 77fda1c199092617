package main

import (
	"strings"
	"testing"

	"github.com/pi-history/pi-history/service"
)

// The text output says when the index is of an older format, and only
// then.
func TestStatsTellsWhenTheIndexIsOfAnOlderFormat(t *testing.T) {
	for _, tc := range []struct {
		st   service.Stats
		want bool
	}{
		{service.Stats{IndexFormat: "pihist-trigram-v3"}, false},
		{service.Stats{IndexFormat: "pihist-trigram-v2", IndexOutdated: true}, true},
	} {
		var b strings.Builder
		printStats(&b, tc.st)
		got := strings.Contains(b.String(), "pi-history reindex") && strings.Contains(b.String(), tc.st.IndexFormat)
		if got != tc.want {
			t.Errorf("format %s, outdated %v: output mentions reindex %v, want %v:\n%s", tc.st.IndexFormat, tc.st.IndexOutdated, got, tc.want, b.String())
		}
	}
}

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
