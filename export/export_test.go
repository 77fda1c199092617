package export

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

type journalFile struct {
	name string // golden name: own journals by base name, shared fixtures as "fixture-NAME"
	path string
}

// sharedFixtures is ../shared/fixtures/pi beside the checkout ("" when absent).
func sharedFixtures() string {
	d := filepath.Join(testutil.RepoRoot(), "..", "shared", "fixtures", "pi")
	if env := os.Getenv("PI_HISTORY_SHARED"); env != "" {
		d = filepath.Join(env, "fixtures", "pi")
	}
	if _, err := os.Stat(filepath.Join(d, "FIXTURES.json")); err != nil {
		return ""
	}
	return d
}

// journals are this package's test journals and, when present, the shared
// Pi fixtures.
func journals(t *testing.T) []journalFile {
	t.Helper()
	var out []journalFile
	own, _ := filepath.Glob("testdata/journals/*.jsonl")
	for _, p := range own {
		out = append(out, journalFile{strings.TrimSuffix(filepath.Base(p), ".jsonl"), p})
	}
	if len(out) == 0 {
		t.Fatal("no journals in testdata/journals")
	}
	// Journals the real Pi 1.6.0 wrote (journal/testdata/pi16gen).
	pi16, _ := filepath.Glob("../journal/testdata/pi16/*.jsonl")
	for _, p := range pi16 {
		out = append(out, journalFile{"pi16-" + strings.TrimSuffix(filepath.Base(p), ".jsonl"), p})
	}
	if d := sharedFixtures(); d != "" {
		fx, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		for _, p := range fx {
			out = append(out, journalFile{"fixture-" + strings.TrimSuffix(filepath.Base(p), ".jsonl"), p})
		}
	} else {
		t.Log("shared Pi fixtures absent; using this package's journals only")
	}
	return out
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// load imports a journal file and returns its session id.
func load(t testing.TB, st *store.Store, path string) string {
	t.Helper()
	rep, err := ingest.File(st, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Session == "" {
		t.Fatalf("%s: no session stored (problems %v)", path, rep.Problems)
	}
	return rep.Session
}

type rec struct {
	ID, ParentID, Type string
	Window             int
	Raw, Text          string
}

// records lists a session's entries in file order with their bytes.
func records(t testing.TB, st *store.Store, sid string) []rec {
	t.Helper()
	metas, err := st.SessionMetas(sid)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]rec, 0, len(metas))
	for _, m := range metas {
		raw, err := st.Raw(m.Seq)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := st.Text(m.Seq)
		out = append(out, rec{m.ID, m.ParentID, m.Type, m.Window, string(raw), text})
	}
	return out
}

func pathIDs(t testing.TB, st *store.Store, sid, leaf string) []string {
	t.Helper()
	tr, err := st.Tree(sid)
	if err != nil {
		t.Fatal(err)
	}
	if leaf == "" {
		leaf = tr.Leaf()
	}
	p, err := tr.Path(leaf)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range p {
		ids = append(ids, e.ID)
	}
	return ids
}

// exportTo writes an export to dir/name and returns the path.
func exportTo(t testing.TB, st *store.Store, sid string, o Options, dir, name string) string {
	t.Helper()
	x, err := New(st, search.New(st, nil), sid, o)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := WriteFile(p, false, func(w io.Writer) error { _, err := x.WriteTo(w); return err }); err != nil {
		t.Fatal(err)
	}
	return p
}

func firstLineOf(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	l, _ := r.ReadString('\n')
	return strings.TrimRight(l, "\r\n")
}

// TestJSONLRoundTrip: a whole-session jsonl export imported into a fresh
// store gives the same entries (same raw bytes, same searchable text, same
// windows), the same tree and the same header line.
func TestJSONLRoundTrip(t *testing.T) {
	for _, j := range journals(t) {
		t.Run(j.name, func(t *testing.T) {
			st := openStore(t)
			sid := load(t, st, j.path)
			before := st.LastSeq()
			out := exportTo(t, st, sid, Options{Format: JSONL}, t.TempDir(), "out.jsonl")
			if st.LastSeq() != before {
				t.Fatal("export wrote to the store")
			}
			if got, want := firstLineOf(t, out), firstLineOf(t, j.path); got != want {
				t.Errorf("header line:\n got %s\nwant %s", got, want)
			}
			st2 := openStore(t)
			sid2 := load(t, st2, out)
			a, b := records(t, st, sid), records(t, st2, sid2)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("entries differ after the round trip: %d vs %d entries", len(a), len(b))
			}
			if !reflect.DeepEqual(pathIDs(t, st, sid, ""), pathIDs(t, st2, sid2, "")) {
				t.Error("active path differs")
			}
			t1, _ := st.Tree(sid)
			t2, _ := st2.Tree(sid2)
			if !reflect.DeepEqual(t1.Leaves(), t2.Leaves()) || t1.Name() != t2.Name() || !reflect.DeepEqual(t1.Labels(), t2.Labels()) {
				t.Error("tree (leaves, name or labels) differs")
			}
		})
	}
}

// TestBranchRoundTrip: every branch exported as jsonl is the header and the
// path root→leaf, byte for byte, and a fresh store reads it as a session
// whose current leaf is that leaf.
func TestBranchRoundTrip(t *testing.T) {
	for _, j := range journals(t) {
		t.Run(j.name, func(t *testing.T) {
			st := openStore(t)
			sid := load(t, st, j.path)
			tr, _ := st.Tree(sid)
			dir := t.TempDir()
			for _, leaf := range tr.Leaves() {
				out := exportTo(t, st, sid, Options{Format: JSONL, Leaf: leaf}, dir, "b-"+safeName(leaf)+".jsonl")
				st2 := openStore(t)
				sid2 := load(t, st2, out)
				t2, _ := st2.Tree(sid2)
				if t2.Leaf() != leaf {
					t.Errorf("leaf %s: the exported branch's current leaf is %s", leaf, t2.Leaf())
				}
				want := pathIDs(t, st, sid, leaf)
				if got := pathIDs(t, st2, sid2, ""); !reflect.DeepEqual(got, want) {
					t.Errorf("leaf %s: path %v, want %v", leaf, got, want)
				}
				if n := len(records(t, st2, sid2)); n != len(want) {
					t.Errorf("leaf %s: %d entries, want only the %d of the path", leaf, n, len(want))
				}
				for i, r := range records(t, st2, sid2) {
					m := tr.MetaOf(want[i])
					raw, _ := st.Raw(m.Seq)
					if r.Raw != string(raw) {
						t.Errorf("leaf %s: entry %d is not the original line", leaf, i)
					}
				}
			}
		})
	}
}

func TestWindowExport(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/branches.jsonl")
	_, ws, err := search.New(st, nil).Windows(t.Context(), sid, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("branches.jsonl has %d windows on its current branch, want 3", len(ws))
	}
	path := pathIDs(t, st, sid, "")
	tr, _ := st.Tree(sid)
	for _, w := range ws {
		var buf bytes.Buffer
		x, err := New(st, search.New(st, nil), sid, Options{Window: w.N})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 1+w.Entries {
			t.Fatalf("window %d: %d lines, want header + %d", w.N, len(lines), w.Entries)
		}
		for i, id := range path[w.Start:w.End] {
			raw, _ := st.Raw(tr.MetaOf(id).Seq)
			if lines[1+i] != string(raw) {
				t.Errorf("window %d line %d is not entry %s", w.N, i+1, id)
			}
		}
	}
}

func TestZstdIsTheSameBytes(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/branches.jsonl")
	for _, f := range []Format{JSONL, Markdown, HTML} {
		var plain, packed bytes.Buffer
		x, _ := New(st, search.New(st, nil), sid, Options{Format: f})
		if _, err := x.WriteTo(&plain); err != nil {
			t.Fatal(err)
		}
		z, _ := New(st, search.New(st, nil), sid, Options{Format: f, Zstd: true})
		if _, err := z.WriteTo(&packed); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(z.Name(), "."+string(f)+".zst") || z.ContentType() != "application/zstd" {
			t.Errorf("zstd export named %s (%s)", z.Name(), z.ContentType())
		}
		dec, _ := zstd.NewReader(&packed)
		got, err := io.ReadAll(dec)
		dec.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain.Bytes()) {
			t.Errorf("%s: decompressed export differs from the plain one", f)
		}
	}
}

func TestBadRequests(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/branches.jsonl")
	for _, c := range []struct {
		name string
		sid  string
		o    Options
		want pihistory.Kind
	}{
		{"unknown session", "nope", Options{}, pihistory.NotFound},
		{"unknown leaf", sid, Options{Leaf: "nope"}, pihistory.NotFound},
		{"unknown leaf md", sid, Options{Format: Markdown, Leaf: "nope"}, pihistory.NotFound},
		{"window past the end", sid, Options{Window: 4}, pihistory.NotFound},
		{"window of a short branch", sid, Options{Leaf: "b0000002", Window: 2}, pihistory.NotFound},
		{"negative window", sid, Options{Window: -1}, pihistory.Invalid},
		{"bad format", sid, Options{Format: "pdf"}, pihistory.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(st, search.New(st, nil), c.sid, c.o)
			if err == nil || pihistory.KindOf(err) != c.want {
				t.Fatalf("got %v, want an error of kind %v", err, c.want)
			}
		})
	}
}

// TestGolden compares md and html exports with testdata/golden (rewrite
// them with go test ./export/ -update).
func TestGolden(t *testing.T) {
	type gcase struct {
		name string
		path string
		o    Options
	}
	var cases []gcase
	for _, j := range journals(t) {
		cases = append(cases, gcase{j.name + ".md", j.path, Options{Format: Markdown}}, gcase{j.name + ".html", j.path, Options{Format: HTML}})
	}
	br := "testdata/journals/branches.jsonl"
	cases = append(cases,
		gcase{"branches-leaf-b0000002.md", br, Options{Format: Markdown, Leaf: "b0000002"}},
		gcase{"branches-window-2.md", br, Options{Format: Markdown, Window: 2}},
		gcase{"branches-window-3.html", br, Options{Format: HTML, Window: 3}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t)
			sid := load(t, st, c.path)
			x, err := New(st, search.New(st, nil), sid, c.o)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := x.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", c.name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./export/ -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from the golden file; run go test ./export/ -update and review the diff", c.name)
			}
		})
	}
}

// TestMarkdownShape checks what a transcript must show, independent of
// the golden files' exact layout.
func TestMarkdownShape(t *testing.T) {
	st := openStore(t)
	sid := load(t, st, "testdata/journals/branches.jsonl")
	x, _ := New(st, search.New(st, nil), sid, Options{Format: Markdown})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"# Bestellung: rune count",
		"## Window 1 ", "## Window 2 · after a new context (compaction by an extension)", "## Window 3 · after compaction",
		"**Tool call** `read` (`toolu_r1`)", "**Result (error):**",
		"### Notebook revision 1", "#### Task",
		"### Branch summary", "*[image: image/png, 68 bytes",
		"## Branch ending at `b0000002` (branches off after `a0000007`)",
		"## Branch ending at `a0000020`",
		"Ελληνικά, русский, עברית", "注文",
		"````\n--- FAIL: TestCase01", // output with ``` inside gets a longer fence
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// Every entry appears once: its id is in exactly one heading or line.
	tr, _ := st.Tree(sid)
	for _, e := range tr.Entries {
		if e.Type == "message" && e.Role == "toolResult" {
			continue // shown under its call
		}
		if n := strings.Count(md, "`"+e.ID+"`\n"); n != 1 {
			t.Errorf("entry %s appears %d times as an item", e.ID, n)
		}
	}
	if strings.Contains(md, "iVBORw0KGgo") {
		t.Error("the image is embedded; it must only be referenced")
	}
}

// failingSource is a store that cannot read.
type failingSource struct{ Source }

func (failingSource) Session(string) (*store.SessionInfo, error) {
	return nil, errors.New("pebble: read failed: input/output error")
}

// TestAStoreThatFailsIsNotAMissingSession: a read error of the store is
// reported as itself (a 500 over HTTP), not as "not found".
func TestAStoreThatFailsIsNotAMissingSession(t *testing.T) {
	_, err := New(failingSource{}, nil, "s1", Options{})
	if err == nil || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("err = %v; want the read error, not ErrNotFound", err)
	}
}
