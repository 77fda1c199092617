package export

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-history/pi-history/search"
)

// TestHostileHTML: a session full of markup and script in every field a
// page shows renders to a page with only the tags the template writes, no
// event-handler attributes, no javascript: URLs, and the hostile text
// visible as text.
func TestHostileHTML(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/hostile.jsonl")
	for _, o := range []Options{{Format: HTML}, {Format: HTML, Window: 2}, {Format: HTML, Leaf: "h0000005"}} {
		x, err := New(st, search.New(st, nil), sid, o)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := x.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		checkInert(t, buf.String())
	}
}

var allowedTags = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "header": true,
	"h1": true, "h2": true, "h3": true, "dl": true, "dt": true, "dd": true, "code": true, "main": true,
	"section": true, "span": true, "p": true, "article": true, "a": true, "div": true, "details": true,
	"summary": true, "pre": true, "blockquote": true, "footer": true,
}

func checkInert(t *testing.T, page string) {
	t.Helper()
	low := strings.ToLower(page)
	for _, bad := range []string{"<script", "<img", "<iframe", "<svg", "<object", "<embed", "<base", "<form", "<link", "<textarea"} {
		if strings.Contains(low, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)`).FindAllStringSubmatch(page, -1) {
		if !allowedTags[strings.ToLower(m[1])] {
			t.Errorf("page contains a <%s> tag the template does not write", m[1])
		}
	}
	// Real tags start with '<'; escaped text has "&lt;" instead.
	for _, tag := range regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(page, -1) {
		if regexp.MustCompile(`(?i)[\s"'/]on[a-z]+\s*=`).MatchString(tag) {
			t.Errorf("page has an event-handler attribute: %s", tag)
		}
		if regexp.MustCompile(`(?i)javascript:|data:|vbscript:`).MatchString(tag) {
			t.Errorf("page has a script URL in a tag: %s", tag)
		}
	}
	// The one <style> element holds exactly the page's own CSS.
	if strings.Count(low, "<style") != 1 || !strings.Contains(page, "<style>"+pageCSS+"</style>") {
		t.Error("the <style> element holds something besides the page CSS")
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'`) {
		t.Error("page lacks its Content-Security-Policy")
	}
}

// TestHostileHTMLFull also covers the escaped forms of every hostile field.
func TestHostileHTMLFull(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/hostile.jsonl")
	x, _ := New(st, search.New(st, nil), sid, Options{Format: HTML})
	var buf bytes.Buffer
	x.WriteTo(&buf)
	page := buf.String()
	for _, want := range []string{
		"&lt;img src=x onerror=alert(1)&gt;",
		"[click](javascript:alert(1))",
		"&lt;a href=&#34;javascript:alert(1)&#34;&gt;link&lt;/a&gt;",
		"<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>",
		"&lt;svg/onload=alert(7)&gt;",
		"<details class=\"out error\">", // the long hostile tool output is collapsed
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// failingFile is a temporary file whose writes fail with ENOSPC after
// limit bytes, as on a disk that fills mid-export.
type failingFile struct {
	*os.File
	limit int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.File.Write(p[:f.limit])
		f.limit = 0
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.limit -= len(p)
	return f.File.Write(p)
}

func TestWriteFile(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/branches.jsonl")
	x, _ := New(st, search.New(st, nil), sid, Options{Format: Markdown})
	write := func(w io.Writer) error { _, err := x.WriteTo(w); return err }
	dir := t.TempDir()
	out := filepath.Join(dir, "t.md")

	if err := WriteFile(out, false, write); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	if len(first) == 0 {
		t.Fatal("empty export")
	}
	t.Run("existing file refused", func(t *testing.T) {
		err := WriteFile(out, false, func(w io.Writer) error { _, err := w.Write([]byte("other")); return err })
		if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("got %v, want ErrExists mentioning --force", err)
		}
		if now, _ := os.ReadFile(out); !bytes.Equal(now, first) {
			t.Fatal("the existing file changed")
		}
	})
	t.Run("force replaces", func(t *testing.T) {
		if err := WriteFile(out, true, func(w io.Writer) error { _, err := w.Write([]byte("other")); return err }); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.ReadFile(out); string(now) != "other" {
			t.Fatalf("file holds %q", now)
		}
	})
	t.Run("disk full mid-export", func(t *testing.T) {
		old := createTemp
		defer func() { createTemp = old }()
		createTemp = func(dir, pattern string) (tempFile, error) {
			f, err := os.CreateTemp(dir, pattern)
			if err != nil {
				return nil, err
			}
			return &failingFile{File: f, limit: 3000}, nil
		}
		full := filepath.Join(dir, "full.md")
		err := WriteFile(full, false, write)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "disk is full") {
			t.Fatalf("got %v, want a disk-full error", err)
		}
		if strings.Contains(err.Error(), ".partial-") {
			t.Errorf("the error names the temporary file: %v", err)
		}
		if _, err := os.Stat(full); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal("a partial export was left under the final name")
		}
		assertOnly(t, dir, "t.md")
	})
	t.Run("missing directory", func(t *testing.T) {
		err := WriteFile(filepath.Join(dir, "no", "such", "x.md"), false, write)
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("output is a directory", func(t *testing.T) {
		if err := WriteFile(dir, true, write); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unwritable directory", func(t *testing.T) {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		defer os.Chmod(ro, 0o700)
		if f, err := os.Create(filepath.Join(ro, "probe")); err == nil {
			f.Close()
			t.Skip("running with privileges that ignore directory permissions")
		}
		err := WriteFile(filepath.Join(ro, "x.md"), false, write)
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("got %v, want a permission error", err)
		}
	})
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var got []string
	for _, e := range ents {
		if !e.IsDir() {
			got = append(got, e.Name())
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("directory holds %v, want %v", got, names)
	}
}
