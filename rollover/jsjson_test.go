package rollover

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// jsTexts are tool arguments and string literals where JavaScript's reading
// parts from Go's: lone surrogates, duplicate keys, number forms, escapes,
// and texts JSON.parse refuses.
var jsTexts = []string{
	// strings
	`"plain"`, `""`, `"\ud83d\ude00 pair"`, `"lone \ud800 high"`, `"lone \udc00 low"`, `"\ud800\ud800\udc00"`,
	`"escapes \" \\ \/ \b \f \n \r \t \u0000 \u001f \u007f \u00e9"`, "\"valid \xe2\x82\xac \xf0\x9f\x98\x80\"",
	"\"one bad byte \xff\"", `"\uD83D\uDE00 upper hex"`,
	// objects and arrays, duplicate keys
	`{}`, `[]`, `[1]`, `[1,2,3]`, `{"a":1}`, `{"a":1,"b":[true,false,null]}`, `{"a":1,"a":"longer value"}`,
	`{"a":"x","b":2,"a":{"c":[]}}`, `{"\u0061":1,"a":22}`, `{"\ud800":1,"\ud800":2}`, `{"é":1,"\u00e9":2}`,
	` { "a" : [ 1 , { "b" : "c" } ] } `, `[[[[[]]]],{"k":{"k":{"k":"v"}}}]`,
	`{"command":"ls -la","path":"/tmp/x","limit":100,"recursive":true}`,
	// numbers, as JSON.stringify re-prints them
	`0`, `-0`, `1.0`, `1.50`, `-12.25e2`, `1e21`, `1e20`, `123456789012345678901234`, `1e-6`, `1e-7`,
	`0.000001`, `0.0000001`, `1.5e-7`, `5e-324`, `1e-400`, `1e400`, `-1e400`, `1.7976931348623157e308`,
	`0.1`, `100`, `1E2`, `1e+2`, `9007199254740993`, `[1e400,-0,2.5]`,
	// refused by JSON.parse
	``, ` `, `01`, `+1`, `1.`, `.5`, `-`, `1e`, `0x10`, `Infinity`, `NaN`, `[1,]`, `{"a":1,}`, `{a:1}`,
	`'x'`, `"unterminated`, "\"raw\ttab\"", "\"raw\nnewline\"", `"\x"`, `"\u12"`, `[1] x`, `tru`, `nul`,
}

// nodeLengths asks Node, for each text, for JSON.stringify(JSON.parse(t))
// .length and, when the value is a string, its .length; -1 where JSON.parse
// throws. The texts go to Node as bytes (base64) decoded as UTF-8, as Pi
// reads a journal.
func nodeLengths(t *testing.T, texts []string) (stringify, strlen []int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	const script = `
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = texts.map((b) => {
  const t = Buffer.from(b, "base64").toString("utf8");
  let v;
  try { v = JSON.parse(t); } catch { return [-1, -1]; }
  return [JSON.stringify(v).length, typeof v === "string" ? v.length : -1];
});
process.stdout.write(JSON.stringify(out));
`
	enc := make([]string, len(texts))
	for i, s := range texts {
		enc[i] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	in, _ := json.Marshal(enc)
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var res [][2]int
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(texts) {
		t.Fatalf("node answered %q (%v)", out, err)
	}
	for _, r := range res {
		stringify = append(stringify, r[0])
		strlen = append(strlen, r[1])
	}
	return stringify, strlen
}

func TestJSLengthsAgreeWithNode(t *testing.T) {
	stringify, strlen := nodeLengths(t, jsTexts)
	for i, text := range jsTexts {
		n, ok := jsStringifyLen([]byte(text))
		if !ok {
			n = -1
		}
		if n != stringify[i] {
			t.Errorf("JSON.stringify(JSON.parse(%q)).length: Go %d, Node %d (-1: refused)", text, n, stringify[i])
		}
		if strlen[i] < 0 {
			continue
		}
		if n, ok := jsStringLen([]byte(text)); !ok || n != strlen[i] {
			t.Errorf("JSON.parse(%q).length: Go %d (%v), Node %d", text, n, ok, strlen[i])
		}
	}
}

// TestJSStringifyLenRefusesDeepNesting: past jsontok.MaxDepth the text is
// refused (journal refuses such a line before its arguments are measured),
// and the refusal does not exhaust the stack.
func TestJSStringifyLenRefusesDeepNesting(t *testing.T) {
	for _, c := range []struct {
		depth int
		ok    bool
	}{{10000, true}, {10001, false}, {1000000, false}} {
		text := strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth)
		n, ok := jsStringifyLen([]byte(text))
		if ok != c.ok || ok && n != len(text) {
			t.Errorf("%d nested arrays: %d, %v; want ok %v", c.depth, n, ok, c.ok)
		}
	}
}

// FuzzJSStringifyLen holds jsStringifyLen and jsStringLen to what can be
// checked without Node: a text is measured exactly when encoding/json finds
// it valid (the syntax and depth limit are the same), and a string without
// \u escapes measures as its UTF-16 length.
func FuzzJSStringifyLen(f *testing.F) {
	for _, s := range jsTexts {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := jsStringifyLen(b)
		if ok != json.Valid(b) {
			t.Fatalf("jsStringifyLen(%q) ok %v, json.Valid %v", b, ok, !ok)
		}
		if ok && n < 1 {
			t.Fatalf("jsStringifyLen(%q) = %d", b, n)
		}
		trimmed := bytes.TrimSpace(b)
		if !ok || trimmed[0] != '"' || bytes.Contains(b, []byte(`\u`)) || !utf8.Valid(b) {
			return
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if got, want := must(jsStringLen(trimmed)), len(utf16.Encode([]rune(s))); got != want {
			t.Fatalf("jsStringLen(%q) = %d, want %d", b, got, want)
		}
	})
}

func must(n int, ok bool) int {
	if !ok {
		return -1
	}
	return n
}

// BenchmarkJSStringifyLen measures an edit tool call's arguments, the
// largest kind a session usually holds (MB/s of arguments).
func BenchmarkJSStringifyLen(b *testing.B) {
	body := strings.Repeat("\tif err != nil {\n\t\treturn fmt.Errorf(\"read %s: %w\", name, err) // é ✓\n\t}\n", 40)
	args, _ := json.Marshal(map[string]any{"path": "/src/x.go", "edits": []map[string]string{
		{"oldText": body, "newText": body + "\\ud800"}, {"oldText": "a", "newText": "b"}}, "limit": 12.5})
	b.SetBytes(int64(len(args)))
	for b.Loop() {
		if _, ok := jsStringifyLen(args); !ok {
			b.Fatal("refused")
		}
	}
}
