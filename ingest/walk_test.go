package ingest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWalkFollowsLinkedDirectories: a root that is a link is walked; a
// link is followed only while its target stays inside the directories
// walked (a project on another disk is left out, and said so, unless that
// disk's directory is one of them), under the name it has below the root;
// a link back up the tree and a second link to one directory are entered
// once; a dangling link is skipped.
func TestWalkFollowsLinkedDirectories(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "disk", "sessions")
	elsewhere := filepath.Join(base, "elsewhere")
	other := filepath.Join(elsewhere, "proj-b")
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
		filepath.Join(real, "proj-a", "linked.jsonl"):   filepath.Join(base, "loose.jsonl"), // one journal, outside
		filepath.Join(real, "proj-a", "dangling.jsonl"): filepath.Join(base, "missing"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "sessions")
	walk := func(within ...string) (got, skipped []string) {
		o := WalkOptions{Within: within, Skipped: func(p, why string) {
			rel, _ := filepath.Rel(root, p)
			if !strings.Contains(why, "outside") {
				t.Errorf("%s skipped for %q; want a link leading outside", rel, why)
			}
			skipped = append(skipped, rel)
		}}
		if err := WalkWithin(root, o, func(p string, d fs.DirEntry) error {
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
		slices.Sort(skipped)
		return got, skipped
	}
	// proj-b2 (a second name for proj-b) and proj-a/up (the root again)
	// are not shown: a watch under a second name would take its files.
	cases := []struct {
		name          string
		within        []string
		want, skipped []string
	}{
		{"within the root", nil,
			[]string{"proj-a/", "proj-a/a.jsonl"},
			[]string{"proj-a/linked.jsonl", "proj-b", "proj-b2"}},
		{"within the root and the other disk", []string{root, elsewhere},
			[]string{"proj-a/", "proj-a/a.jsonl", "proj-b/", "proj-b/b.jsonl"},
			[]string{"proj-a/linked.jsonl"}},
	}
	for _, c := range cases {
		got, skipped := walk(c.within...)
		if !slices.Equal(got, c.want) || !slices.Equal(skipped, c.skipped) {
			t.Errorf("%s: walked %q, skipped %q; want %q, %q", c.name, got, skipped, c.want, c.skipped)
		}
	}

	// The watcher over the linked root stores what is there and what is
	// appended later.
	st := openStore(t)
	startWatcher(t, st, root)
	waitStored(t, st, "wa", "wa1", 10*time.Second)
	appendLine(t, filepath.Join(root, "proj-a", "a.jsonl"), userLine("wa2", "wa1", "appended through the linked root"))
	waitStored(t, st, "wa", "wa2", 10*time.Second)
	for _, sid := range []string{"wb", "wl"} {
		if _, err := st.Session(sid); err == nil {
			t.Errorf("session %s, reached only through a link leading outside, was read", sid)
		}
	}
}

// TestWalkKeepsADirectorysOwnName: a directory found under its own name
// and through a link that sorts before it is walked under its own name.
func TestWalkKeepsADirectorysOwnName(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "--z--"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "--z--", "s.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "--z--"), filepath.Join(root, "--a--")); err != nil {
		t.Fatal(err)
	}
	var got []string
	Walk(root, func(p string, d fs.DirEntry) error {
		rel, _ := filepath.Rel(root, p)
		got = append(got, rel)
		return nil
	})
	if want := []string{"--z--", filepath.Join("--z--", "s.jsonl")}; !slices.Equal(got, want) {
		t.Errorf("walked %q, want %q", got, want)
	}
}

// TestWatcherIgnoresASecondNameForAWatchedDirectory: a link made, while
// the watcher runs, to a project directory it watches is not watched, and
// the project's journal is not read under the link's name (it was, on
// every append).
func TestWatcherIgnoresASecondNameForAWatchedDirectory(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	journal := filepath.Join(root, "--p--", "s.jsonl")
	os.MkdirAll(filepath.Dir(journal), 0o755)
	appendLine(t, journal, header("s"))
	appendLine(t, journal, userLine("s1", "", "hello"))
	w := startWatcher(t, st, root)
	waitStored(t, st, "s", "s1", 10*time.Second)
	for _, link := range []string{filepath.Join(root, "--a-link--"), filepath.Join(root, "--p--", "self")} {
		if err := os.Symlink(filepath.Join(root, "--p--"), link); err != nil {
			t.Fatal(err)
		}
	}
	// An append after the links, then a rescan, then another append: by
	// then the links' events have been handled.
	appendLine(t, journal, userLine("s2", "s1", "after the link"))
	waitStored(t, st, "s", "s2", 10*time.Second)
	before := w.Status().LastRescan
	w.Rescan()
	for deadline := time.Now().Add(10 * time.Second); w.Status().LastRescan.Equal(before); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rescan did not run")
		}
	}
	appendLine(t, journal, userLine("s3", "s2", "after the rescan"))
	waitStored(t, st, "s", "s3", 10*time.Second)
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.watched {
		if strings.Contains(d, "link") || strings.HasSuffix(d, "self") {
			t.Errorf("watching %s, a second name for %s", d, filepath.Dir(journal))
		}
	}
	for p := range w.files {
		if p != journal {
			t.Errorf("read %s, the journal %s under a second name", p, journal)
		}
	}
}
