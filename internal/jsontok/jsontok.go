// Package jsontok is the JSON tokenizer under the project's two JSON
// readers: journal/scan.go, which reads Pi's journal lines as encoding/json
// would decode them into Go structs, and rollover/jsjson.go, which measures
// tool-call arguments as JavaScript's JSON.parse and JSON.stringify see
// them.
//
// A Scanner checks RFC 8259 syntax as it moves through a text and hands
// string literals back raw (the bytes between the quotes, escapes
// unresolved). It accepts exactly what encoding/json's Valid accepts: the
// strict number grammar, no control characters in strings, any bytes of 128
// and above in strings (valid UTF-8 or not), nesting up to MaxDepth. What a
// value means is each reader's business: how a key is matched, which of
// two duplicate keys counts, what an escaped lone surrogate or an invalid
// UTF-8 byte becomes, how a number is read. So the readers keep their own
// semantics while sharing the syntax, and the package keeps no state beyond
// a position and a depth (no allocation on any path but a refusal).
//
// Its speed matters: the journal reader runs it over every line an import
// reads (docs/measurements/2026-11-30-journal-reading.md).
package jsontok

import (
	"fmt"
	"strconv"
)

// MaxDepth is how deeply arrays and objects may nest, as in encoding/json.
// A deeper text is refused.
const MaxDepth = 10000

// Scanner reads the JSON text B from position I, checking its syntax. The
// readers built on it look at B[I] to decide what to do with the next
// value, so both fields are open; a reader moves I only through the
// methods, or past bytes it has checked itself.
type Scanner struct {
	B     []byte
	I     int
	depth int
}

// SyntaxError is a text that is not JSON: Msg says what was found where,
// Off is the byte offset (0-based) at which reading stopped.
type SyntaxError struct {
	Msg string
	Off int
}

func (e *SyntaxError) Error() string { return e.Msg }

// strClass sorts the bytes of a string literal: 0 ordinary ASCII, 1 the
// closing quote, 2 a backslash, 3 a control character (not allowed), 4 a
// byte of a multi-byte (or invalid) UTF-8 sequence.
var strClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 3
	}
	t['"'], t['\\'] = 1, 2
	for c := 0x80; c < 0x100; c++ {
		t[c] = 4
	}
	return t
}()

// Fail returns a *SyntaxError for the byte at I (or the end of the text),
// with msg saying where in the grammar it was met ("in a number").
func (s *Scanner) Fail(msg string) error {
	if s.I >= len(s.B) {
		return &SyntaxError{Msg: "the line ends in the middle of a value (a half-written line?)", Off: len(s.B)}
	}
	return &SyntaxError{Msg: fmt.Sprintf("unexpected %s at byte %d %s", charName(s.B[s.I]), s.I+1, msg), Off: s.I}
}

func charName(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

// WS skips whitespace (space, tab, newline, carriage return).
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Str reads the string literal at I (B[I] must be '"') and returns the
// bytes between its quotes, and whether they are plain: ASCII without an
// escape, so the bytes are the string in any reading.
func (s *Scanner) Str() (raw []byte, plain bool, err error) {
	b := s.B
	start := s.I + 1
	i := start
	plain = true
	for {
		for i < len(b) && strClass[b[i]] == 0 {
			i++
		}
		if i >= len(b) {
			s.I = i
			return nil, false, s.Fail("")
		}
		switch strClass[b[i]] {
		case 1:
			s.I = i + 1
			return b[start:i], plain, nil
		case 2:
			plain = false
			i++
			if i >= len(b) {
				s.I = i
				return nil, false, s.Fail("")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) || !isHex(b[i+k]) {
						s.I = min(i+k, len(b))
						return nil, false, s.Fail("in a \\u escape")
					}
				}
				i += 5
			default:
				s.I = i
				return nil, false, s.Fail("after a backslash in a string")
			}
		case 3:
			s.I = i
			return nil, false, s.Fail("in a string (control characters must be escaped)")
		default:
			plain = false
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Hex4 is the value of the four hexadecimal digits at the start of b
// (checked already, as Str checks a \u escape's).
func Hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r*16 + rune(c)
	}
	return r
}

// Value checks and skips the value at I.
func (s *Scanner) Value() error {
	if s.I >= len(s.B) {
		return s.Fail("")
	}
	switch c := s.B[s.I]; c {
	case '"':
		_, _, err := s.Str()
		return err
	case '{':
		return s.Object(nil)
	case '[':
		return s.Array(nil)
	case 't':
		return s.Literal("true")
	case 'f':
		return s.Literal("false")
	case 'n':
		return s.Literal("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return s.Number()
		}
		return s.Fail("where a value should start")
	}
}

// Span checks and skips the value at I and returns its bytes.
func (s *Scanner) Span() ([]byte, error) {
	start := s.I
	if err := s.Value(); err != nil {
		return nil, err
	}
	return s.B[start:s.I], nil
}

// Literal reads word (true, false or null) at I.
func (s *Scanner) Literal(word string) error {
	for k := 0; k < len(word); k++ {
		if s.I >= len(s.B) || s.B[s.I] != word[k] {
			return s.Fail("in a literal (true, false or null)")
		}
		s.I++
	}
	return nil
}

func (s *Scanner) digits() bool {
	start := s.I
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		s.I++
	}
	return s.I > start
}

// Number checks the number at I as JSON writes them:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (no '+', no leading zero,
// no bare '.', no Infinity or NaN: what both encoding/json and JSON.parse
// refuse).
func (s *Scanner) Number() error {
	if s.I < len(s.B) && s.B[s.I] == '-' {
		s.I++
	}
	if s.I >= len(s.B) {
		return s.Fail("")
	}
	switch c := s.B[s.I]; {
	case c == '0':
		s.I++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return s.Fail("in a number")
	}
	if s.I < len(s.B) && s.B[s.I] == '.' {
		s.I++
		if !s.digits() {
			return s.Fail("after a decimal point")
		}
	}
	if s.I < len(s.B) && (s.B[s.I] == 'e' || s.B[s.I] == 'E') {
		s.I++
		if s.I < len(s.B) && (s.B[s.I] == '+' || s.B[s.I] == '-') {
			s.I++
		}
		if !s.digits() {
			return s.Fail("in an exponent")
		}
	}
	return nil
}

// open enters the array or object at I, reporting whether it is empty
// (then it is read, closing bracket included).
func (s *Scanner) open(closer byte) (empty bool, err error) {
	s.depth++
	if s.depth > MaxDepth {
		return false, &SyntaxError{Msg: fmt.Sprintf("arrays and objects nest more than %d deep at byte %d", MaxDepth, s.I+1), Off: s.I}
	}
	s.I++
	s.WS()
	if s.I < len(s.B) && s.B[s.I] == closer {
		s.I++
		s.depth--
		return true, nil
	}
	return false, nil
}

// more reads what follows a member or element: a comma (true: another
// follows) or the closing bracket (false). what names the member for the
// error.
func (s *Scanner) more(closer byte, what string) (bool, error) {
	s.WS()
	if s.I >= len(s.B) {
		return false, s.Fail("")
	}
	switch s.B[s.I] {
	case ',':
		s.I++
		return true, nil
	case closer:
		s.I++
		s.depth--
		return false, nil
	}
	return false, s.Fail(fmt.Sprintf("after %s (expected ',' or '%c')", what, closer))
}

// Object reads the object at I (B[I] must be '{'). For each member, in
// written order, field is called with the key's raw bytes (as Str returns
// them) and I at the start of the value, and must consume the value; a nil
// field skips every value. Duplicate keys are all handed over: which one
// counts is the caller's choice.
func (s *Scanner) Object(field func(key []byte, plain bool) error) error {
	empty, err := s.open('}')
	for more := !empty; more && err == nil; more, err = s.more('}', "an object member") {
		s.WS()
		if s.I >= len(s.B) || s.B[s.I] != '"' {
			return s.Fail("where a key (a string) should be")
		}
		key, plain, err := s.Str()
		if err != nil {
			return err
		}
		s.WS()
		if s.I >= len(s.B) || s.B[s.I] != ':' {
			return s.Fail("after a key (expected ':')")
		}
		s.I++
		s.WS()
		if field != nil {
			err = field(key, plain)
		} else {
			err = s.Value()
		}
		if err != nil {
			return err
		}
	}
	return err
}

// Array reads the array at I (B[I] must be '['); elem, if not nil, is
// called with I at the start of each element and must consume it.
func (s *Scanner) Array(elem func() error) error {
	empty, err := s.open(']')
	for more := !empty; more && err == nil; more, err = s.more(']', "an array element") {
		s.WS()
		if elem != nil {
			err = elem()
		} else {
			err = s.Value()
		}
		if err != nil {
			return err
		}
	}
	return err
}

// End checks that nothing but whitespace follows the top-level value.
func (s *Scanner) End() error {
	s.WS()
	if s.I < len(s.B) {
		return s.Fail("after the end of the JSON value")
	}
	return nil
}

// Kind names the kind of the value at I ("a string", "an object", ...,
// "missing" at the end), for messages about a value of the wrong kind.
func (s *Scanner) Kind() string {
	if s.I >= len(s.B) {
		return "missing"
	}
	switch s.B[s.I] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// IsNull reports whether the value at I starts as null does.
func (s *Scanner) IsNull() bool { return s.I < len(s.B) && s.B[s.I] == 'n' }
