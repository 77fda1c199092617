package journal

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The headers the differential tests read a line after: version 3 (ids in
// the line) and version 1 (ids derived, firstKeptEntryIndex migrated).
var diffHeaders = []string{
	`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/x"}`,
	`{"type":"session","id":"old","timestamp":"t","cwd":"/x"}`,
}

// agree reads header and line with Parser and with the encoding/json
// reference, and fails unless both accept or refuse the same lines and
// produce the same header, entry and state.
func agree(t *testing.T, header, line string) {
	t.Helper()
	var p Parser
	var r refParser
	h1, e1, err1 := p.Line([]byte(header))
	h2, e2, err2 := r.Line([]byte(header))
	if !sameResult(h1, h2, e1, e2, err1, err2) {
		t.Fatalf("header %q: scanner %+v %+v %v; encoding/json %+v %+v %v", header, h1, e1, err1, h2, e2, err2)
	}
	h1, e1, err1 = p.Line([]byte(line))
	h2, e2, err2 = r.Line([]byte(line))
	if !sameResult(h1, h2, e1, e2, err1, err2) {
		t.Fatalf("line %q:\n scanner:       %+v %+v %v\n encoding/json: %+v %+v %v", line, h1, e1, err1, h2, e2, err2)
	}
	if p.State != r.State {
		t.Fatalf("line %q: state %+v, encoding/json %+v", line, p.State, r.State)
	}
}

func sameResult(h1, h2 *Header, e1, e2 *Entry, err1, err2 error) bool {
	if (err1 == nil) != (err2 == nil) {
		return false
	}
	if err1 != nil {
		var l1, l2 *LineError
		if errors.As(err1, &l1) != errors.As(err2, &l2) || l1 != nil && l1.Line != l2.Line {
			return false
		}
		if !errors.As(err1, &l1) && err1 != err2 {
			return false
		}
	}
	return reflect.DeepEqual(h1, h2) && reflect.DeepEqual(e1, e2)
}

// fixtureLines returns the lines of the repository's test journals (those
// the real Pi package wrote for other packages' tests) and, when present,
// of ../shared's fixtures.
func fixtureLines(t testing.TB) []string {
	var out []string
	dirs := []string{"testdata", "../export/testdata/journals", "../notebook/testdata",
		"../rollover/testdata/journals", "../webui/testdata", "testdata/pi16", filepath.Join("..", "..", "shared", "fixtures", "pi")}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<26)
			for sc.Scan() {
				out = append(out, sc.Text())
			}
		}
	}
	return out
}

// trickyLines are lines where a hand-written reader is most likely to part
// from encoding/json.
var trickyLines = []string{
	// keys: case folding, escapes, duplicates
	`{"Type":"message","ID":"a","MESSAGE":{"Role":"user","Content":"x"}}`,
	`{"type":"compaction","id":"a","ſummary":"folded long s"}`,
	`{"type":"compaction","id":"a","\u017fummary":"escaped long s"}`,
	`{"type":"compaction","id":"a","\u0073ummary":"escaped ascii key"}`,
	`{"type":"compaction","id":"a","summary":"exact","Summary":"folded later wins"}`,
	`{"type":"compaction","id":"a","summary":"x","summary":null}`,
	`{"type":"message","id":"a","id":"b","parentId":"c","parentId":null,"message":{"role":"user","content":"dup"}}`,
	`{"type":"label","id":"a","targetId":"b","label":null}`,
	`{"type":"session_info","id":"a","name":""}`,
	`{"type":"message","id":"a","message":"first","message":{"role":"user","content":"second wins"}}`,
	`{"type":"message","id":"a","message":{"role":1},"message":{"role":"user","content":"second wins"}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":"x"},"message":null}`,
	// Pi 1.6 additions: replacements of every shape, lenient numbers and strings
	`{"type":"context_edit","id":"a","targetId":"b","replacement":{"Content":"x","content":null}}`,
	`{"type":"context_edit","id":"a","targetId":"b","replacement":{"content":"first","CONTENT":[{"type":"text","text":"folded later wins"}]}}`,
	`{"type":"context_edit","id":"a","targetId":"b","replacement":[]}`,
	`{"type":"context_edit","id":"a","targetId":"b","replacement":"x"}`,
	`{"type":"context_edit","id":"a","targetId":"b","replacement":{"content":[{"type":"text","text":1}]}}`,
	`{"type":"context_edit","id":"a","targetId":"b","replacement":{"content":{"type":"text"}}}`,
	`{"type":"message","id":"a","message":{"role":"toolResult","content":"x","durationMs":1e400,"thinkingLevel":null}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":"x","durationMs":-0,"DurationMs":12.5,"thinkinglevel":"\u0068igh"}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":"x","durationMs":[1],"thinkingLevel":{"a":"b"}}}`,
	`{"type":"message","id":"a","message":{"role":"system","content":"p","sections":{"a":null}}}`,
	// values of the wrong type
	`{"type":"message","id":"a","cwd":1}`,
	`{"type":"message","id":1}`,
	`{"type":["message"],"id":"a"}`,
	`{"type":"compaction","id":"a","version":"3"}`,
	`{"type":"compaction","id":"a","version":3.0}`,
	`{"type":"compaction","id":"a","version":1e2}`,
	`{"type":"compaction","id":"a","version":-0}`,
	`{"type":"compaction","id":"a","version":99999999999999999999}`,
	`{"type":"compaction","id":"a","firstKeptEntryIndex":2,"summary":"s"}`,
	`{"type":"compaction","id":"a","firstKeptEntryIndex":null,"summary":"s"}`,
	`{"type":"compaction","id":"a","fromHook":"yes"}`,
	`{"type":"compaction","id":"a","fromHook":null,"summary":"s"}`,
	`{"type":"compaction","id":"a","fromHook":true,"summary":"s"}`,
	`{"type":"message","id":"a","message":{"role":"toolResult","isError":"x","content":"y"}}`,
	`{"type":"message","id":"a","message":{"role":"toolResult","isError":true,"toolName":"read","toolCallId":"c","content":"y"}}`,
	`{"type":"message","id":"a","message":{"role":"bashExecution","command":"ls","output":null}}`,
	`{"type":"message","id":"a","message":{"role":"bashExecution","command":"ls","output":"o","excludeFromContext":1}}`,
	// content shapes
	`{"type":"message","id":"a","message":{"role":"user","content":null}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":{}}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":5}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":true}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[null,{"type":"text","text":"after null"}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":["str",{"type":"text","text":"t"}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[[],{"type":"text","text":"t"}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"t"},{"type":"image","data":5}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"t","text":null}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":""}]}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text"},{"TYPE":"text","TEXT":"upper"}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":"plain string"}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":null}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash"}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash","arguments":null}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"bash","arguments":"just a string"}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","arguments":{"a":{"b":["c",1,{"d":"e"},[["f"]]]},"g":true,"h":"i"},"name":"late name"}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":null,"arguments":{}}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":1}]}}`,
	`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":5}]}}`,
	`{"type":"message","id":"a","message":{"role":"hookMessage","customType":"h","content":"hooked"}}`,
	`{"type":"message","id":"a","message":{"role":"compactionSummary","summary":"sum"}}`,
	`{"type":"message","id":"a","message":{"role":"something new","content":"x"}}`,
	`{"type":"custom_message","id":"a","customType":"r","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
	`{"type":"custom_message","id":"a","customType":"r"}`,
	// Handoffs
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":{"version":1,"text":"where the work stands"}}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":{"TEXT":"folded","text":"last","Text":null}}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":{"text":3}}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":{"text":""}}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":["text"]}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":null}`,
	`{"type":"custom","id":"a","customType":"note-context/handoff","data":{"text":"lone \ud800 surrogate"}}`,
	// notebooks
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"sections":{"A":"1","B":null,"C":3,"A":"again"}}}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"Sections":{"A":"folded"}}}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"sections":{}}}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"sections":[]}}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"sections":null}}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":null}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":[1]}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook"}`,
	`{"type":"custom","id":"a","customType":"note-context/notebook","data":{"sections":{"\u00e9\ud83d\ude00":"k\u00e9y","x\ud800":"\ud800y"}}}`,
	// strings
	`{"type":"message","id":"a","message":{"role":"user","content":"pair \ud83d\ude00 lone \ud800 low \udc00 then \ud800\u0041 \u0000 \/ \b\f\n\r\t \" \\"}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":"high then high \ud800\ud800\udc00"}}`,
	"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe and \xed\xa0\x80 and \xe2\x82 cut\"}}",
	"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"valid \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbd\"}}",
	"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"tab\tinside\"}}",
	"{\"type\":\"message\",\"id\":\"a\\xff\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}",
	"{\"type\":\"message\",\"id\":\"a\",\"\xff\":1,\"message\":{\"role\":\"user\",\"content\":\"key with a bad byte\"}}",
	`{"type":"message","id":"a","message":{"role":"user","content":"bad escape \x"}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":"short \u12"}}`,
	`{"type":"message","id":"a","message":{"role":"user","content":"hex \uABCD \uabcd"}}`,
	// syntax
	`{"type":"message","id":"a"} x`,
	`{"type":"message","id":"a",}`,
	`{"type":"message","id" "a"}`,
	`{"type":"message","id":"a"`,
	`{"type":"message","id":"a","n":01}`,
	`{"type":"message","id":"a","n":-}`,
	`{"type":"message","id":"a","n":1.}`,
	`{"type":"message","id":"a","n":1e}`,
	`{"type":"message","id":"a","n":-0.5e+3,"m":[1,2.25E-7,0]}`,
	`{"type":"message","id":"a","n":tru}`,
	`{"type":"message","id":"a","n":nulls}`,
	`{"type":"message","id":"a","n":[1,]}`,
	`{"type":"message","id":"a","n":[,1]}`,
	`{"type":"message","id":"a","n":{"k"}}`,
	`{"type":"message","id":"a","n":{1:2}}`,
	`{"type":"message","id":"a","n":'x'}`,
	` { "type" : "compaction" , "id" : "a" , "summary" : "spaced" } `,
	"{\r\n\t\"type\":\"compaction\",\"id\":\"a\",\"summary\":\"crlf\"}",
	"\f{\"type\":\"compaction\",\"id\":\"a\",\"summary\":\"form feed trimmed\"}",
	"\ufeff{\"type\":\"compaction\",\"id\":\"a\"}",
	// top-level kinds
	`null`, `[]`, `"x"`, `1`, `true`, `{}`, `nul`, `{"type":"session","id":"again"}`, `{"type":""}`,
	`{"type":"message","id":"a","parentId":"a","message":{"role":"user","content":"self parent"}}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	lines := append(append([]string(nil), trickyLines...), fixtureLines(t)...)
	deep := func(n int) string {
		return `{"type":"message","id":"a","message":{"role":"user","content":"x"},"p":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	// The line's own object is level 1: 9,999 arrays inside it reach the
	// limit of 10,000, one more passes it.
	lines = append(lines, deep(9999), deep(10000), deep(100000))
	for _, h := range diffHeaders {
		for _, line := range lines {
			agree(t, h, line)
		}
	}
}

func TestScannerRefusalsSayWhatIsWrong(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"type":"message","id":"a"`, "half-written"},
		{`{"type":"message","id":"a"} x`, `unexpected 'x' at byte 29`},
		{"{\"type\":\"message\",\"id\":\"a\t\"}", "byte 0x09 at byte 26 in a string"},
		{`{"type":"compaction","id":"a","version":"3"}`, `"version" is a string, expected an integer`},
		{`[1]`, `"line" is an array, expected an object`},
		{`{"type":"message","id":"a","message":{"role":1}}`, `message is malformed: "role" is a number, expected a string`},
		{`{"type":"message","id":"a","p":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "nest more than 10000 deep"},
	}
	for _, c := range cases {
		var p Parser
		p.Line([]byte(diffHeaders[0]))
		_, _, err := p.Line([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: error %v, want it to say %q", c.line, err, c.want)
		}
	}
}

func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, line := range append(append([]string(nil), trickyLines...), fixtureLines(f)...) {
		f.Add([]byte(line), false)
	}
	f.Add([]byte(`{"type":"compaction","summary":"s","firstKeptEntryIndex":1}`), true)
	f.Fuzz(func(t *testing.T, line []byte, v1 bool) {
		h := diffHeaders[0]
		if v1 {
			h = diffHeaders[1]
		}
		agree(t, h, string(line))
	})
}

// BenchmarkLine reads the test journals' lines with the scanner and with
// the encoding/json reference (MB/s of journal lines).
func BenchmarkLine(b *testing.B) {
	var lines [][]byte
	size := 0
	for _, l := range fixtureLines(b) {
		lines = append(lines, []byte(l))
		size += len(l)
	}
	type reader interface {
		Line([]byte) (*Header, *Entry, error)
	}
	for _, c := range []struct {
		name string
		new  func() reader
	}{
		{"scanner", func() reader { return &Parser{} }},
		{"encoding-json", func() reader { return &refParser{} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				r := c.new()
				r.Line([]byte(diffHeaders[0]))
				for _, l := range lines {
					r.Line(l)
				}
			}
		})
	}
}
