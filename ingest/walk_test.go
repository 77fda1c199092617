package ingest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWalkFollowsLinkedDirectories: a root that is a link, a linked
// project directory and a linked journal are all walked, under the names
// they have below the root; a link back up the tree and a second link to
// one directory are entered once; a dangling link is skipped.
func TestWalkFollowsLinkedDirectories(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "disk", "sessions")
	other := filepath.Join(base, "elsewhere", "proj-b")
	for _, d := range []string{filepath.Join(real, "proj-a"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, sid string) {
		if err := os.WriteFile(p, []byte(header(sid)+"\n"+userLine(sid+"1", "", "hello")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(real, "proj-a", "a.jsonl"), "wa")
	write(filepath.Join(other, "b.jsonl"), "wb")
	write(filepath.Join(base, "loose.jsonl"), "wl")
	links := map[string]string{
		filepath.Join(base, "sessions"):                 real,                               // the root
		filepath.Join(real, "proj-b"):                   other,                              // a project on another disk
		filepath.Join(real, "proj-b2"):                  other,                              // the same, twice
		filepath.Join(real, "proj-a", "up"):             real,                               // a loop
		filepath.Join(real, "proj-a", "linked.jsonl"):   filepath.Join(base, "loose.jsonl"), // one journal
		filepath.Join(real, "proj-a", "dangling.jsonl"): filepath.Join(base, "missing"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "sessions")
	var got []string
	if err := Walk(root, func(p string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, rel)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	// proj-b2 (a second name for proj-b) and proj-a/up (the root again)
	// are not shown: a watch under a second name would take its files.
	want := []string{"proj-a/", "proj-a/a.jsonl", "proj-a/linked.jsonl", "proj-b/", "proj-b/b.jsonl"}
	if !slices.Equal(got, want) {
		t.Fatalf("walked %q, want %q", got, want)
	}

	// The watcher over the linked root stores what is there and what is
	// appended later.
	st := openStore(t)
	startWatcher(t, st, root)
	for _, sid := range []string{"wa", "wb", "wl"} {
		waitStored(t, st, sid, sid+"1", 10*time.Second)
	}
	appendLine(t, filepath.Join(root, "proj-b", "b.jsonl"), userLine("wb2", "wb1", "appended through the link"))
	waitStored(t, st, "wb", "wb2", 10*time.Second)
}
