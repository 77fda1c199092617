package notebook_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/store"
)

// piWriter drives internal/testutil/pi073/notebook-append.mjs: Pi 0.73.1's own
// SessionManager appending to a real journal file, one command at a time.
type piWriter struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Scanner
	cmd  *exec.Cmd
	file string // the journal, known after the first assistant message
}

type piAnswer struct {
	ID     string `json:"id"`
	File   string `json:"file"`
	Leaf   string `json:"leaf"`
	Error  string `json:"error"`
	Branch []struct {
		ID         string          `json:"id"`
		Type       string          `json:"type"`
		CustomType string          `json:"customType"`
		Data       json.RawMessage `json:"data"`
	} `json:"branch"`
}

func startPiWriter(t *testing.T, cwd, sessions string) *piWriter {
	t.Helper()
	node, script := testutil.Pi073(t, "notebook-append.mjs")
	cmd := exec.Command(node, script, cwd, sessions)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	w := &piWriter{t: t, in: in, out: sc, cmd: cmd}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("append.mjs: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("append.mjs did not exit\n%s", stderr.String())
		}
	})
	return w
}

// do sends one command and returns its answer.
func (w *piWriter) do(cmd map[string]any) piAnswer {
	w.t.Helper()
	line, err := json.Marshal(cmd)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.in.Write(append(line, '\n')); err != nil {
		w.t.Fatalf("send %s: %v", line, err)
	}
	if !w.out.Scan() {
		w.t.Fatalf("append.mjs gave no answer to %s (%v)", line, w.out.Err())
	}
	var a piAnswer
	if err := json.Unmarshal(w.out.Bytes(), &a); err != nil {
		w.t.Fatalf("answer %q: %v", w.out.Text(), err)
	}
	if a.Error != "" {
		w.t.Fatalf("append.mjs: %s", a.Error)
	}
	if a.File != "" {
		w.file = a.File
	}
	return a
}

var msgClock = int64(1772442001000)

func (w *piWriter) user(text string) string {
	msgClock += 1000
	return w.do(map[string]any{"op": "message", "message": map[string]any{"role": "user", "content": text, "timestamp": msgClock}}).ID
}

func (w *piWriter) assistant(text string, input int) string {
	msgClock += 1000
	return w.do(map[string]any{"op": "message", "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"api": "faux", "provider": "faux", "model": "faux-1",
		"usage": map[string]any{"input": input, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + 20,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": "stop", "timestamp": msgClock}}).ID
}

// jsStringify is the record as JSON.stringify writes it: the record's own
// encoding (no HTML escaping; json.Marshal would add it) with U+2028 and
// U+2029 unescaped (the only characters the two escape differently).
func jsStringify(t *testing.T, rec notebook.Record) []byte {
	t.Helper()
	b, err := rec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(`\u2028`), []byte("\u2028"))
	return bytes.ReplaceAll(b, []byte(`\u2029`), []byte("\u2029"))
}

// TestPiRoundTrip: for a sequence of notebook writes, the record Write
// returns is appended by Pi's own SessionManager to a real journal file,
// the file is ingested into a store, and Read on the branch rebuilt from the
// store yields exactly the state the write reported. Pi reopening the file
// finds the same record.
func TestPiRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	w := startPiWriter(t, "/home/dev/notebook-roundtrip", filepath.Join(tmp, "sessions"))
	st, err := store.Open(filepath.Join(tmp, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// path ingests the journal as it is now and returns the current branch,
	// root first, with Raw filled from the store.
	path := func() []*journal.Entry {
		t.Helper()
		rep, err := ingest.File(st, w.file, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("ingest: %v", rep.Problems)
		}
		si, err := st.SessionByFile(w.file)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := st.Tree(si.ID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tr.Path(tr.Leaf())
		if err != nil {
			t.Fatal(err)
		}
		out := make([]*journal.Entry, len(p))
		for i, e := range p {
			m := tr.MetaOf(e.ID)
			if m == nil {
				t.Fatalf("entry %s has no stored record", e.ID)
			}
			raw, err := st.Raw(m.Seq)
			if err != nil {
				t.Fatal(err)
			}
			c := *e
			c.Raw = raw
			out[i] = &c
		}
		return out
	}

	w.user("Fix the checkout bug and keep notes.")
	w.assistant("Looking at the cart handler.", 1200)
	if w.file == "" {
		t.Fatal("Pi wrote no journal file after the first assistant message")
	}
	if got := notebook.Read(path()); got.Exists() {
		t.Fatalf("a notebook before any write: %+v", got)
	}

	intp := func(n int) *int { return &n }
	secs := func(kv ...string) notebook.Sections {
		var s notebook.Sections
		for i := 0; i < len(kv); i += 2 {
			s = append(s, notebook.Section{Name: kv[i], Text: kv[i+1]})
		}
		return s
	}
	steps := []struct {
		name    string
		before  string // an assistant message appended first, when not ""
		req     notebook.WriteRequest
		names   []string // section names after the write, in order
		changed bool
	}{
		{name: "create", req: notebook.WriteRequest{ExpectedRevision: intp(0), ReviewedTokens: intp(1220),
			Sections: secs(
				"Open questions", "Why does\tthe retry \"double-charge\"? </details><script>x</script> \\ back\\slash",
				"Next", "  - run the cart tests\n  - ask about 日本語 naïve délai 🙂🚀  \n\n",
				"State", "Checkout fails with ErrCartEmpty.\u2028Line separator, paragraph separator\u2029, NUL-free.",
				"Task", "Fix the checkout bug."),
		}, names: []string{"Task", "State", "Next", "Open questions"}, changed: true},
		{name: "replace one", before: "Found it: the retry path.", req: notebook.WriteRequest{ExpectedRevision: intp(1), ReviewedTokens: intp(2400),
			Sections: secs("State", "Root cause: retry re-submits the cart 🛒 (see handler.go:42)."),
		}, names: []string{"Task", "State", "Next", "Open questions"}, changed: true},
		{name: "add canonical", req: notebook.WriteRequest{
			Sections: secs("Refs", "handler.go:42\nretry.go:7", "Decisions", "Make the retry idempotent with a key."),
		}, names: []string{"Task", "State", "Next", "Open questions", "Decisions", "Refs"}, changed: true},
		{name: "delete one", before: "Tests written.", req: notebook.WriteRequest{ExpectedRevision: intp(3),
			Sections: secs("Open questions", "  "),
		}, names: []string{"Task", "State", "Next", "Decisions", "Refs"}, changed: true},
		{name: "review", before: "Nothing new to note.", req: notebook.WriteRequest{Reviewed: true, ReviewedTokens: intp(9000)},
			names: []string{"Task", "State", "Next", "Decisions", "Refs"}, changed: false},
		{name: "replaceAll", req: notebook.WriteRequest{ReplaceAll: true, ExpectedRevision: intp(5), ReviewedTokens: intp(9100),
			Sections: secs("Zeta notes", "free-named after canonical", "Refs", "PR #118", "Task", "Ship the idempotent retry.", "Next", ""),
		}, names: []string{"Task", "Refs", "Zeta notes"}, changed: true},
	}
	var last notebook.Record
	var lastID string
	for i, s := range steps {
		if s.before != "" {
			w.assistant(s.before, 1000*(i+2))
		}
		before := path()
		res, rec, err := notebook.Write(before, s.req, notebook.DefaultLimits())
		if err != nil {
			t.Fatalf("%s: Write: %v", s.name, err)
		}
		if res.Revision != i+1 || res.Changed != s.changed {
			t.Errorf("%s: result %+v, want revision %d, changed %v", s.name, res, i+1, s.changed)
		}
		if got := rec.Sections.Names(); !reflect.DeepEqual(got, s.names) {
			t.Errorf("%s: sections %q, want %q", s.name, got, s.names)
		}
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		id := w.do(map[string]any{"op": "custom", "customType": notebook.NotebookType, "data": json.RawMessage(data)}).ID

		after := path()
		leaf := after[len(after)-1]
		if leaf.ID != id || leaf.Type != "custom" || leaf.CustomType != notebook.NotebookType {
			t.Fatalf("%s: the branch ends at %s (%s %s), want Pi's new entry %s", s.name, leaf.ID, leaf.Type, leaf.CustomType, id)
		}
		if len(after) != len(before)+1 {
			t.Errorf("%s: branch grew from %d to %d entries", s.name, len(before), len(after))
		}
		// The data Pi wrote is the record, byte for byte as JSON.stringify
		// writes it.
		var line struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(leaf.Raw, &line); err != nil {
			t.Fatal(err)
		}
		if want := jsStringify(t, rec); !bytes.Equal(line.Data, want) {
			t.Errorf("%s: Pi wrote data\n%s\nwant\n%s", s.name, line.Data, want)
		}
		got := notebook.Read(after)
		want := notebook.State{Revision: res.Revision, Sections: rec.Sections, Bytes: res.Bytes, TokensEstimate: res.TokensEstimate,
			ReviewedThrough: rec.ReviewedThrough, ReviewedTokens: rec.ReviewedTokens, ReviewOnly: rec.ReviewOnly,
			EntryID: id, Timestamp: leaf.Timestamp}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Read after the write\n got %+v\nwant %+v", s.name, got, want)
		}
		if b, tok := got.Sections.Measure(); b != res.Bytes || tok != res.TokensEstimate || res.RemainingBytes != notebook.DefaultMaxBytes-b {
			t.Errorf("%s: measured %d bytes, %d tokens; the write reported %+v", s.name, b, tok, res)
		}
		// The review marker is the last assistant message before the write.
		if want := lastAssistant(before); rec.ReviewedThrough != want {
			t.Errorf("%s: reviewedThrough %q, want %q", s.name, rec.ReviewedThrough, want)
		}
		if s.req.Reviewed && !reflect.DeepEqual(rec.Sections, last.Sections) {
			t.Errorf("%s: a review changed the sections", s.name)
		}
		revs := notebook.Revisions(after)
		if len(revs) != i+1 || revs[i].EntryID != id || revs[i].Revision != i+1 {
			t.Errorf("%s: revisions %+v", s.name, revs)
		}
		last, lastID = rec, id
	}

	// A stale write is refused and leaves the state as the last write made it.
	if _, _, err := notebook.Write(path(), notebook.WriteRequest{ExpectedRevision: new(int), Sections: secs("Task", "x")}, notebook.Limits{}); err == nil {
		t.Error("a write expecting revision 0 succeeded on revision 6")
	}

	// Pi itself, opening the file afresh, sees the same branch ending in the
	// same record.
	re := w.do(map[string]any{"op": "reopen"})
	if re.Leaf != lastID {
		t.Errorf("Pi reopened the journal at leaf %s, want %s", re.Leaf, lastID)
	}
	final := path()
	if len(re.Branch) != len(final) {
		t.Fatalf("Pi's branch has %d entries, the store's %d", len(re.Branch), len(final))
	}
	n := 0
	for i, e := range re.Branch {
		if e.ID != final[i].ID || e.Type != final[i].Type {
			t.Errorf("branch entry %d: Pi %s %s, store %s %s", i, e.ID, e.Type, final[i].ID, final[i].Type)
		}
		if e.CustomType != notebook.NotebookType {
			continue
		}
		n++
		rec, err := notebook.ParseRecord(e.Data)
		if err != nil {
			t.Errorf("Pi's entry %s: %v", e.ID, err)
		}
		if e.ID == lastID && !reflect.DeepEqual(rec, last) {
			t.Errorf("Pi reads the last record as %+v, want %+v", rec, last)
		}
	}
	if n != len(steps) {
		t.Errorf("Pi's branch holds %d notebook records, want %d", n, len(steps))
	}
	if st := notebook.Read(final); st.Revision != len(steps) || strings.Join(st.Sections.Names(), ",") != "Task,Refs,Zeta notes" {
		t.Errorf("final state %+v", st)
	}
}

func lastAssistant(path []*journal.Entry) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == "message" && path[i].Role == "assistant" {
			return path[i].ID
		}
	}
	return ""
}
