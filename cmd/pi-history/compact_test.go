package main

import (
	"strings"
	"testing"
)

func TestCompactKeepsWhatIsStoredAndReportsSizes(t *testing.T) {
	e := newTestEnv(t)
	e.journal("--home-dev-shop--", "s1", exportJournal("s1")...)
	e.mustCLI("import")
	before := e.mustCLI("search", "--all", "--json", "e")
	out := e.mustCLI("compact")
	if !strings.HasPrefix(out, "compacted in ") || !strings.Contains(out, "store") || !strings.Contains(out, "index") {
		t.Errorf("compact printed %q", out)
	}
	if after := e.mustCLI("search", "--all", "--json", "e"); after != before {
		t.Errorf("search answers differ after compacting:\n%s\nvs\n%s", before, after)
	}
	e.serve()
	if _, stderr, code := e.cli("compact"); code == 0 || !strings.Contains(stderr, "in use by process") {
		t.Errorf("compact while a server owns the data: exit %d, %q; want a failure naming the owner", code, stderr)
	}
}
