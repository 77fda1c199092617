package jsontok

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// check reads b as one JSON text: a value with only whitespace around it.
func check(b []byte) error {
	s := &Scanner{B: b}
	s.WS()
	if err := s.Value(); err != nil {
		return err
	}
	return s.End()
}

// texts are where a tokenizer is most likely to part from the grammar.
var texts = []string{
	// accepted
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e+3`, `2.25E-7`, `1e400`, `123456789012345678901234567890`,
	`""`, `"a"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\uffff\uD800\udc00"`, "\"\xff\xfe invalid UTF-8\"", "\"\x7f\"",
	"\"€ 😀\"", `[]`, `{}`, `[1,"a",null,[{}]]`, `{"a":1,"a":2}`, `{"":[]}`, " \t\r\n{ \"a\" : [ 1 , 2 ] }\n ",
	// refused
	``, ` `, `nul`, `nulls`, `tru`, `True`, `NaN`, `Infinity`, `-`, `+1`, `01`, `-01`, `1.`, `.5`, `1e`, `1e+`,
	`0x1`, `1 2`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"tab\there\"", "\"nl\nhere\"", `'a'`, `[1,]`, `[,1]`,
	`[1 2]`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{1:1}`, `{"a":1,}`, `{"a":1 "b":2}`, `[`, `{`, `]`, `}`,
	`[1}`, `{"a":1]`, "\ufeff1", "\f1", `"a"x`,
}

func TestScannerAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, text := range texts {
		err := check([]byte(text))
		if (err == nil) != json.Valid([]byte(text)) {
			t.Errorf("%q: scanner error %v, encoding/json valid %v", text, err, json.Valid([]byte(text)))
		}
	}
}

func TestNestingStopsAtMaxDepth(t *testing.T) {
	for _, depth := range []int{MaxDepth, MaxDepth + 1, 10 * MaxDepth} {
		for _, open := range []string{"[", `{"k":`} {
			closeWith := "]"
			if open != "[" {
				closeWith = "}"
			}
			text := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closeWith, depth))
			err := check(text)
			if (err == nil) != (depth <= MaxDepth) || (err == nil) != json.Valid(text) {
				t.Errorf("%d levels of %s: error %v, encoding/json valid %v", depth, open, err, json.Valid(text))
			}
			if err != nil && !strings.Contains(err.Error(), "nest more than 10000 deep") {
				t.Errorf("%d levels of %s: error %q does not name the limit", depth, open, err)
			}
		}
	}
}

func TestRefusalsSayWhatAndWhere(t *testing.T) {
	cases := []struct {
		text, msg string
		off       int
	}{
		{`[1,2`, "ends in the middle of a value", 4},
		{`[1 2]`, `unexpected '2' at byte 4 after an array element (expected ',' or ']')`, 3},
		{`{"a" 1}`, `unexpected '1' at byte 6 after a key (expected ':')`, 5},
		{`{1:1}`, `unexpected '1' at byte 2 where a key (a string) should be`, 1},
		{"\"a\tb\"", `unexpected byte 0x09 at byte 3 in a string (control characters must be escaped)`, 2},
		{`"\q"`, `unexpected 'q' at byte 3 after a backslash in a string`, 2},
		{`"\u12x4"`, `unexpected 'x' at byte 6 in a \u escape`, 5},
		{`01`, `unexpected '1' at byte 2 after the end of the JSON value`, 1},
		{`1.e3`, `unexpected 'e' at byte 3 after a decimal point`, 2},
		{`-x`, `unexpected 'x' at byte 2 in a number`, 1},
		{`nul!`, `unexpected '!' at byte 4 in a literal (true, false or null)`, 3},
		{`[?]`, `unexpected '?' at byte 2 where a value should start`, 1},
	}
	for _, c := range cases {
		err := check([]byte(c.text))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v, want a *SyntaxError", c.text, err)
			continue
		}
		if !strings.Contains(se.Msg, c.msg) || se.Off != c.off {
			t.Errorf("%q: %q at offset %d, want %q at %d", c.text, se.Msg, se.Off, c.msg, c.off)
		}
	}
}

func TestObjectHandsOverEveryMemberInWrittenOrder(t *testing.T) {
	s := &Scanner{B: []byte(`{"b":1, "a\u0041":[2, {"x":"y"}] ,"b":"é","":null}`)}
	type member struct {
		key   string
		plain bool
		value string
	}
	var got []member
	err := s.Object(func(key []byte, plain bool) error {
		v, err := s.Span()
		got = append(got, member{string(key), plain, string(v)})
		return err
	})
	want := []member{{"b", true, "1"}, {`a\u0041`, false, `[2, {"x":"y"}]`}, {"b", true, `"é"`}, {"", true, "null"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("members %+v (%v), want %+v", got, err, want)
	}
	if s.I != len(s.B) {
		t.Errorf("scanner stopped at %d of %d", s.I, len(s.B))
	}
}

func TestStrIsPlainOnlyForASCIIWithoutEscapes(t *testing.T) {
	for _, c := range []struct {
		lit, raw string
		plain    bool
	}{
		{`"abc"`, "abc", true}, {`""`, "", true}, {`"a\nb"`, `a\nb`, false}, {`"\u0041"`, `\u0041`, false},
		{`"é"`, "é", false}, {"\"\xff\"", "\xff", false}, {`"a\"b"`, `a\"b`, false},
	} {
		s := &Scanner{B: []byte(c.lit + ",")}
		raw, plain, err := s.Str()
		if err != nil || string(raw) != c.raw || plain != c.plain || s.I != len(c.lit) {
			t.Errorf("Str(%s) = %q, %v, %v and position %d; want %q, %v at %d", c.lit, raw, plain, err, s.I, c.raw, c.plain, len(c.lit))
		}
	}
}

func TestKindNamesTheNextValue(t *testing.T) {
	for text, want := range map[string]string{`"x"`: "a string", `{}`: "an object", `[]`: "an array",
		`true`: "a boolean", `false`: "a boolean", `null`: "null", `-1`: "a number", ``: "missing"} {
		s := &Scanner{B: []byte(text)}
		if got := s.Kind(); got != want {
			t.Errorf("Kind(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestHex4(t *testing.T) {
	for in, want := range map[string]rune{"0000": 0, "00e9": 0xe9, "00E9": 0xe9, "D83D": 0xd83d, "ffff": 0xffff, "1234x": 0x1234} {
		if got := Hex4([]byte(in)); got != want {
			t.Errorf("Hex4(%q) = %#x, want %#x", in, got, want)
		}
	}
}

// walk reads the value at s.I with the callbacks, as the readers do, and
// calls str for every string literal, keys included.
func walk(s *Scanner, str func(raw []byte, plain bool)) error {
	if s.I >= len(s.B) {
		return s.Fail("")
	}
	switch s.B[s.I] {
	case '"':
		raw, plain, err := s.Str()
		if err == nil {
			str(raw, plain)
		}
		return err
	case '{':
		return s.Object(func(key []byte, plain bool) error {
			str(key, plain)
			return walk(s, str)
		})
	case '[':
		return s.Array(func() error { return walk(s, str) })
	}
	return s.Value()
}

// FuzzScannerAgreesWithEncodingJSON: the scanner accepts a text exactly
// when encoding/json does, whether it skips values or walks them member by
// member; a refusal points inside the text; every string it hands over is
// a literal's inside, plain only when it is escape-free ASCII.
func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, text := range texts {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := json.Valid(b)
		err := check(b)
		if (err == nil) != valid {
			t.Fatalf("%q: scanner error %v, encoding/json valid %v", b, err, valid)
		}
		var se *SyntaxError
		if err != nil && (!errors.As(err, &se) || se.Off < 0 || se.Off > len(b)) {
			t.Fatalf("%q: refusal %#v", b, err)
		}
		s := &Scanner{B: b}
		s.WS()
		werr := walk(s, func(raw []byte, plain bool) {
			if !json.Valid(append(append([]byte{'"'}, raw...), '"')) {
				t.Fatalf("%q: string %q is not a literal's inside", b, raw)
			}
			if plain && (bytes.IndexByte(raw, '\\') >= 0 || !isASCII(raw)) {
				t.Fatalf("%q: string %q called plain", b, raw)
			}
		})
		if werr == nil {
			werr = s.End()
		}
		if (werr == nil) != valid {
			t.Fatalf("%q: walk error %v, encoding/json valid %v", b, werr, valid)
		}
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
