package journal

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func parseAll(t testing.TB, text string) (*Header, []*Entry, []error) {
	t.Helper()
	var p Parser
	var h *Header
	var es []*Entry
	var errs []error
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		hh, e, err := p.Line([]byte(line))
		switch {
		case err != nil:
			errs = append(errs, err)
		case hh != nil:
			h = hh
		case e != nil:
			es = append(es, e)
		}
	}
	return h, es, errs
}

func TestSearchableTextFollowsTheAllowlist(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/x"}` + "\n"
	cases := []struct {
		name       string
		line       string
		searchable bool
		text       string
	}{
		{"user string", `{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"say \"hi\"\\n and\nbye \u00e9"}}`, true, "say \"hi\"\\n and\nbye é"},
		{"user blocks skip images", `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"one"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"two"}]}}`, true, "one\ntwo"},
		{"assistant text and tool call, no thinking", `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret"},{"type":"text","text":"Running."},{"type":"toolCall","id":"t","name":"bash","arguments":{"command":"ls -la","opts":{"cwd":"/tmp","n":3,"flags":["-x","-y"]},"timeout":10}}]}}`, true, "Running.\nbash\nls -la\n/tmp\n-x\n-y"},
		{"tool result", `{"type":"message","id":"a","message":{"role":"toolResult","toolName":"read","toolCallId":"t","content":[{"type":"text","text":"file body"}]}}`, true, "file body"},
		{"history tool result is not searchable", `{"type":"message","id":"a","message":{"role":"toolResult","toolName":"history","toolCallId":"t","content":[{"type":"text","text":"old hits"}]}}`, false, ""},
		{"bash execution", `{"type":"message","id":"a","message":{"role":"bashExecution","command":"go test","output":"ok"}}`, true, "go test\nok"},
		{"bash excluded from context", `{"type":"message","id":"a","message":{"role":"bashExecution","command":"env","output":"TOKEN=x","excludeFromContext":true}}`, false, ""},
		{"custom message", `{"type":"custom_message","customType":"r","content":"remember","id":"a"}`, true, "remember"},
		{"compaction summary", `{"type":"compaction","id":"a","summary":"## Goal\nx","firstKeptEntryId":"b"}`, true, "## Goal\nx"},
		{"branch summary", `{"type":"branch_summary","id":"a","fromId":"b","summary":"tried y"}`, true, "tried y"},
		{"notebook sections in order", `{"type":"custom","customType":"note-context/notebook","data":{"sections":{"Task":"t1","State":"s1","Bad":3}},"id":"a"}`, true, "## Task\nt1\n## State\ns1"},
		{"other custom", `{"type":"custom","customType":"x","data":{"a":"secret"},"id":"a"}`, false, ""},
		{"label", `{"type":"label","id":"a","targetId":"b","label":"start"}`, false, ""},
		{"unknown type is kept, not searchable", `{"type":"future_thing","id":"a","payload":"zzz"}`, false, ""},
		{"unpaired surrogate becomes U+FFFD", `{"type":"message","id":"a","message":{"role":"user","content":"x\ud800y"}}`, true, "x\uFFFDy"},
		{"invalid UTF-8 becomes U+FFFD", "{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"x\xffy\"}}", true, "x\uFFFDy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, es, errs := parseAll(t, hdr+c.line)
			if len(errs) > 0 || len(es) != 1 {
				t.Fatalf("entries %d, errors %v", len(es), errs)
			}
			e := es[0]
			if e.Searchable != c.searchable || e.Text != c.text {
				t.Errorf("searchable=%v text=%q; want %v %q", e.Searchable, e.Text, c.searchable, c.text)
			}
			if string(e.Raw) != c.line {
				t.Errorf("raw line not kept byte for byte")
			}
		})
	}
}

func TestMigrationsHappenInMemory(t *testing.T) {
	v1 := `{"type":"session","id":"old","timestamp":"t","cwd":"/x"}
{"type":"message","timestamp":"t1","message":{"role":"user","content":"q"}}
{"type":"message","timestamp":"t2","message":{"role":"assistant","content":[{"type":"text","text":"a"}]}}
{"type":"compaction","timestamp":"t3","summary":"s","firstKeptEntryIndex":2}`
	h, es, errs := parseAll(t, v1)
	if len(errs) > 0 || h.Version != 1 || len(es) != 3 {
		t.Fatalf("v1: header %+v entries %d errors %v", h, len(es), errs)
	}
	if es[0].ParentID != "" || es[1].ParentID != es[0].ID || es[2].ParentID != es[1].ID {
		t.Errorf("v1 entries are not chained: %q %q %q", es[0].ParentID, es[1].ParentID, es[2].ParentID)
	}
	if es[2].FirstKeptEntryID != es[1].ID {
		t.Errorf("firstKeptEntryIndex 2 should become the id of line 2 (%s), got %s", es[1].ID, es[2].FirstKeptEntryID)
	}
	v2 := `{"type":"session","version":2,"id":"v2","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","customType":"h","content":"hooked"}}`
	_, es, _ = parseAll(t, v2)
	if es[0].Role != "custom" || es[0].CustomType != "h" || es[0].Text != "hooked" {
		t.Errorf("v2 hookMessage not migrated: %+v", es[0])
	}
}

func TestBadLinesAreReportedAndSkipped(t *testing.T) {
	text := `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"ok"}}
{not json
{"id":"b"}
{"type":"message","parentId":"a"}
{"type":"message","id":"c","message":"nope"}

{"type":"session","id":"again"}
{"type":"message","id":"d","parentId":"a","message":{"role":"user","content":"still read"}}`
	_, es, errs := parseAll(t, text)
	if len(es) != 2 || es[1].ID != "d" {
		t.Fatalf("want entries a and d, got %d", len(es))
	}
	if len(errs) != 6 {
		t.Fatalf("want 6 line errors, got %d: %v", len(errs), errs)
	}
	for _, err := range errs {
		le, ok := err.(*LineError)
		if !ok || le.Line < 3 || le.Reason == "" {
			t.Errorf("error without a line number or reason: %v", err)
		}
	}
}

func TestNoHeaderIsRefused(t *testing.T) {
	var p Parser
	_, _, err := p.Line([]byte(`{"type":"message","id":"a"}`))
	if err != ErrNoHeader {
		t.Fatalf("got %v", err)
	}
}

func TestDeepNestingDoesNotCrash(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	line := `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":{"a":` + deep + `}}]}}`
	var p Parser
	p.Line([]byte(`{"type":"session","id":"s","version":3}`))
	// Either stored or refused with a line error: never a panic or another error.
	_, e, err := p.Line([]byte(line))
	if _, ok := err.(*LineError); err != nil && !ok || err == nil && e == nil {
		t.Fatalf("deep nesting: entry %v, error %v", e, err)
	}
	vs := StringValues([]byte(`{"a":` + strings.Repeat(`{"k":`, 50000) + `"v"` + strings.Repeat("}", 50000) + `}`))
	if !reflect.DeepEqual(vs, []string{"v"}) {
		t.Errorf("deep string values: %v", vs)
	}
}

func TestTreeRules(t *testing.T) {
	text := `{"type":"session","version":3,"id":"s"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"1"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":"2"}}
{"type":"label","id":"l1","parentId":"b","targetId":"a","label":"first"}
{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"branch"}}
{"type":"session_info","id":"n1","parentId":"c","name":"Old name"}
{"type":"compaction","id":"k","parentId":"n1","summary":"s","firstKeptEntryId":"c"}
{"type":"label","id":"l2","parentId":"k","targetId":"a","label":"second"}
{"type":"message","id":"x","parentId":"y","message":{"role":"user","content":"orphan"}}
{"type":"message","id":"y","parentId":"x","message":{"role":"user","content":"cycle"}}
{"type":"session_info","id":"n2","parentId":"l2","name":"New name"}`
	_, es, errs := parseAll(t, text)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tr := NewTree(es)
	if tr.Leaf() != "n2" || tr.Name() != "New name" || tr.Labels()["a"] != "second" {
		t.Errorf("leaf %s name %q labels %v", tr.Leaf(), tr.Name(), tr.Labels())
	}
	p, _ := tr.Path("n2")
	var ids []string
	for _, e := range p {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "a,c,n1,k,l2,n2" {
		t.Errorf("path %v", ids)
	}
	ws := Windows(p)
	if len(ws) != 2 || ws[1].CompactionID != "k" || ws[0].Entries != 3 || ws[1].Entries != 3 {
		t.Errorf("windows %+v", ws)
	}
	if p, err := tr.Path("y"); err != nil || len(p) != 2 {
		t.Errorf("a cycle must be cut, got %d entries, %v", len(p), err)
	}
	if _, err := tr.Path("nope"); err == nil {
		t.Error("unknown leaf must be an error")
	}
	if got := tr.Leaves(); !reflect.DeepEqual(got, []string{"l1", "n2"}) {
		t.Errorf("leaves %v", got)
	}
}

// FuzzLine feeds arbitrary lines to the parser after a valid header: it
// must never panic, and whatever it accepts keeps the raw bytes and has
// valid UTF-8 text.
func FuzzLine(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("..", "..", "shared", "fixtures", "pi")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				f.Add(append([]byte(nil), sc.Bytes()...))
			}
		}
	}
	f.Add([]byte(`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"n","arguments":{"a":[1,{"b":"c"}]}}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var p Parser
		if _, _, err := p.Line([]byte(`{"type":"session","version":3,"id":"s"}`)); err != nil {
			t.Fatal(err)
		}
		_, e, err := p.Line(line)
		if err != nil {
			return
		}
		if e == nil || !bytes.Equal(e.Raw, line) {
			t.Fatalf("accepted line lost its raw bytes")
		}
		if !utf8.ValidString(e.Text) {
			t.Fatalf("searchable text is not valid UTF-8: %q", e.Text)
		}
	})
}
