package journal

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pi-history/pi-history/internal/jsontok"
)

// This file reads journal lines in one pass: it walks the line with the
// project's JSON tokenizer (internal/jsontok, which checks the syntax) and
// decodes only the fields pi-history keeps. It replaces encoding/json on the
// import path (which checked each line, then decoded it, then checked and
// decoded the message and its content again; its cost is in
// docs/measurements/2026-11-30-journal-reading.md) and
// accepts, refuses and decodes exactly what encoding/json would for the
// same Go structs: keys match case-insensitively (an exact match first),
// the last duplicate wins, a value of the wrong type refuses the line,
// invalid UTF-8 and unpaired surrogates become U+FFFD, and nesting deeper
// than 10,000 levels is refused. A differential fuzz test holds it to that
// (reference_test.go). The meaning of values is this file's; the syntax is
// the tokenizer's.

// scanner is the shared tokenizer (internal/jsontok) with the field
// readers of this file as methods.
type scanner struct{ jsontok.Scanner }

// newScanner returns a scanner at the start of b.
func newScanner(b []byte) *scanner { return &scanner{jsontok.Scanner{B: b}} }

// typeError is a value of the wrong kind for a field pi-history reads.
type typeError struct {
	field, got, want string
}

func (e *typeError) Error() string {
	return fmt.Sprintf("%q is %s, expected %s", e.field, e.got, e.want)
}

// fieldOf returns the index in names of the field a key names: the exact
// name, else one equal under Unicode case folding (as encoding/json
// matches); -1 for none.
func fieldOf(names []string, key []byte, plain bool) int {
	if !plain {
		key = unquote(nil, key)
	}
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for i, n := range names {
		// A plain key is ASCII: it folds to an (ASCII) name only at the
		// same length; a key with other bytes may fold at another (ſ, K).
		if plain && len(n) != len(key) {
			continue
		}
		if bytes.EqualFold(key, []byte(n)) {
			return i
		}
	}
	return -1
}

// unquote appends the decoded form of a string literal's inner bytes raw
// (already checked) to dst: escapes resolved, a surrogate pair joined,
// an unpaired surrogate and each byte of invalid UTF-8 made U+FFFD.
func unquote(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := jsontok.Hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = jsontok.Hex4(raw[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(raw) && raw[j] < utf8.RuneSelf && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, raw[i:i+n]...)
			}
			i += n
		}
	}
	return dst
}

// text returns the decoded string of a literal's inner bytes.
func text(raw []byte, plain bool) string {
	if plain || !needsDecoding(raw) {
		return string(raw)
	}
	return string(unquote(make([]byte, 0, len(raw)+8), raw))
}

// needsDecoding reports whether raw holds an escape or invalid UTF-8.
func needsDecoding(raw []byte) bool {
	return bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw)
}

// strField reads a string-typed field: a string sets *dst, null leaves it.
func (s *scanner) strField(dst *string, name string, terr *error) error {
	if s.I < len(s.B) && s.B[s.I] == '"' {
		raw, plain, err := s.Str()
		if err == nil {
			*dst = text(raw, plain)
		}
		return err
	}
	return s.otherwise(name, "a string", terr)
}

// optStr is a field that may be absent or null (a *string in encoding/json).
type optStr struct {
	v   string
	set bool
}

func (s *scanner) optStrField(dst *optStr, name string, terr *error) error {
	if s.IsNull() {
		*dst = optStr{}
	}
	if s.I < len(s.B) && s.B[s.I] == '"' {
		dst.set = true
	}
	return s.strField(&dst.v, name, terr)
}

// optInt is an integer field that may be absent or null.
type optInt struct {
	v   int
	set bool
}

func (s *scanner) intField(dst *optInt, name string, terr *error) error {
	if s.I < len(s.B) && (s.B[s.I] == '-' || '0' <= s.B[s.I] && s.B[s.I] <= '9') {
		start := s.I
		if err := s.Number(); err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(s.B[start:s.I]), 10, 64)
		if err != nil && *terr == nil {
			*terr = &typeError{field: name, got: "a number that is not a whole number of 64 bits", want: "an integer"}
		}
		*dst = optInt{v: int(n), set: true}
		return nil
	}
	if s.IsNull() {
		*dst = optInt{}
	}
	return s.otherwise(name, "an integer", terr)
}

func (s *scanner) boolField(dst *bool, name string, terr *error) error {
	if s.I < len(s.B) && (s.B[s.I] == 't' || s.B[s.I] == 'f') {
		*dst = s.B[s.I] == 't'
		return s.Value()
	}
	return s.otherwise(name, "true or false", terr)
}

// otherwise skips a value that is not what the field holds: null is fine,
// anything else records a type error (the first one is kept).
func (s *scanner) otherwise(name, want string, terr *error) error {
	c := byte('n')
	if s.I < len(s.B) {
		c = s.B[s.I]
	}
	kind := s.Kind()
	if err := s.Value(); err != nil {
		return err
	}
	if c != 'n' && *terr == nil {
		*terr = &typeError{field: name, got: kind, want: want}
	}
	return nil
}

// lineFields are the fields of a line that pi-history reads (the rawEntry
// of encoding/json days), with the message object read in the same pass.
type lineFields struct {
	typ, cwd, parentSession, customType, firstKept, targetID string
	id, parentID, summary, label, name                       optStr
	version, firstKeptIndex                                  optInt
	fromHook                                                 bool
	timestamp, message, content, data, replacement           []byte
	msg                                                      msgFields
	typeErr                                                  error
}

// msgFields are the fields of a message object that pi-history reads.
type msgFields struct {
	role, customType, toolName, toolCallID, command, output, summary string
	isError, excludeFromContext                                      bool
	content, thinkingLevel, durationMs                               []byte
	typeErr                                                          error
}

var lineNames = []string{"type", "id", "parentId", "timestamp", "version", "cwd", "parentSession",
	"message", "customType", "content", "data", "summary", "firstKeptEntryId", "firstKeptEntryIndex",
	"fromHook", "targetId", "label", "name", "replacement"}

var msgNames = []string{"role", "content", "customType", "toolName", "toolCallId", "isError",
	"command", "output", "excludeFromContext", "summary", "thinkingLevel", "durationMs"}

// parse reads a whole line. A syntax error is returned at once; a value of
// the wrong type is kept in f.typeErr (or f.msg.typeErr inside the message)
// while the rest of the line is still checked, as encoding/json does.
func (f *lineFields) parse(b []byte) error {
	s := newScanner(b)
	s.WS()
	if s.I < len(b) && b[s.I] != '{' && b[s.I] != 'n' {
		kind := s.Kind()
		if err := s.Value(); err != nil {
			return err
		}
		if err := s.End(); err != nil {
			return err
		}
		return &typeError{field: "line", got: kind, want: "an object"}
	}
	var err error
	if s.IsNull() {
		err = s.Literal("null")
	} else {
		err = s.Object(func(key []byte, plain bool) error { return f.field(s, key, plain) })
	}
	if err != nil {
		return err
	}
	return s.End()
}

func (f *lineFields) field(s *scanner, key []byte, plain bool) error {
	t := &f.typeErr
	switch k := fieldOf(lineNames, key, plain); k {
	case 0:
		return s.strField(&f.typ, "type", t)
	case 1:
		return s.optStrField(&f.id, "id", t)
	case 2:
		return s.optStrField(&f.parentID, "parentId", t)
	case 3:
		var err error
		f.timestamp, err = s.Span()
		return err
	case 4:
		return s.intField(&f.version, "version", t)
	case 5:
		return s.strField(&f.cwd, "cwd", t)
	case 6:
		return s.strField(&f.parentSession, "parentSession", t)
	case 7:
		start := s.I
		if s.I < len(s.B) && s.B[s.I] == '{' {
			f.msg = msgFields{}
			if err := s.Object(func(key []byte, plain bool) error { return f.msg.field(s, key, plain) }); err != nil {
				return err
			}
		} else if err := s.Value(); err != nil {
			return err
		}
		f.message = s.B[start:s.I]
		return nil
	case 8:
		return s.strField(&f.customType, "customType", t)
	case 9, 10:
		raw, err := s.Span()
		if k == 9 {
			f.content = raw
		} else {
			f.data = raw
		}
		return err
	case 11:
		return s.optStrField(&f.summary, "summary", t)
	case 12:
		return s.strField(&f.firstKept, "firstKeptEntryId", t)
	case 13:
		return s.intField(&f.firstKeptIndex, "firstKeptEntryIndex", t)
	case 14:
		return s.boolField(&f.fromHook, "fromHook", t)
	case 15:
		return s.strField(&f.targetID, "targetId", t)
	case 16:
		return s.optStrField(&f.label, "label", t)
	case 17:
		return s.optStrField(&f.name, "name", t)
	case 18:
		var err error
		f.replacement, err = s.Span()
		return err
	}
	return s.Value()
}

func (m *msgFields) field(s *scanner, key []byte, plain bool) error {
	t := &m.typeErr
	switch k := fieldOf(msgNames, key, plain); k {
	case 0:
		return s.strField(&m.role, "role", t)
	case 1:
		var err error
		m.content, err = s.Span()
		return err
	case 2:
		return s.strField(&m.customType, "customType", t)
	case 3:
		return s.strField(&m.toolName, "toolName", t)
	case 4:
		return s.strField(&m.toolCallID, "toolCallId", t)
	case 5:
		return s.boolField(&m.isError, "isError", t)
	case 6:
		return s.strField(&m.command, "command", t)
	case 7:
		return s.strField(&m.output, "output", t)
	case 8:
		return s.boolField(&m.excludeFromContext, "excludeFromContext", t)
	case 9:
		return s.strField(&m.summary, "summary", t)
	case 10, 11:
		// Pi 1.6 fields read leniently: a value of another kind is ignored,
		// never a reason to refuse the line.
		raw, err := s.Span()
		if k == 10 {
			m.thinkingLevel = raw
		} else {
			m.durationMs = raw
		}
		return err
	}
	return s.Value()
}

// rawString decodes raw if it is a string literal; "" otherwise.
func rawString(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	s := newScanner(raw)
	inner, plain, err := s.Str()
	if err != nil {
		return ""
	}
	return text(inner, plain)
}

var blockNames = []string{"type", "text", "thinking", "name", "id", "arguments", "mimeType", "data"}

// block is what text extraction needs of one content block: its type, and
// the spans of its text, name and arguments.
type block struct {
	typ        string
	text, name strSpan
	arguments  []byte
}

// strSpan is a string literal's inner bytes and whether they are plain.
type strSpan struct {
	raw   []byte
	plain bool
}

// spanField reads a string-typed field of a block as a span: a string
// sets *dst, null leaves it.
func (s *scanner) spanField(dst *strSpan, name string, terr *error) error {
	if s.I < len(s.B) && s.B[s.I] == '"' {
		raw, plain, err := s.Str()
		*dst = strSpan{raw, plain}
		return err
	}
	return s.otherwise(name, "a string", terr)
}

// blocks calls fn for each block of a content array (raw is checked
// already) and reports false when encoding/json would have refused the
// array as []Block: content that is not an array or null, an element that
// is not an object or null, or a block field of the wrong type.
func blocks(raw []byte, fn func(b *block)) bool {
	if len(raw) == 0 {
		return false // encoding/json: unexpected end of input
	}
	s := newScanner(raw)
	if s.IsNull() {
		return true
	}
	if raw[0] != '[' {
		return false
	}
	ok := true
	var b block
	_ = s.Array(func() error {
		if s.B[s.I] != '{' {
			ok = ok && s.IsNull()
			return s.Value()
		}
		b = block{}
		var terr error
		err := s.Object(func(key []byte, plain bool) error {
			switch fieldOf(blockNames, key, plain) {
			case 0:
				return s.strField(&b.typ, "type", &terr)
			case 1:
				return s.spanField(&b.text, "text", &terr)
			case 3:
				return s.spanField(&b.name, "name", &terr)
			case 5:
				var err error
				b.arguments, err = s.Span()
				return err
			case 2, 4, 6, 7:
				var sp strSpan
				return s.spanField(&sp, "", &terr)
			}
			return s.Value()
		})
		ok = ok && terr == nil
		if ok {
			fn(&b)
		}
		return err
	})
	return ok
}

// contentText is ContentText over a checked value: a string, or the text
// blocks joined by newlines.
func contentText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		return rawString(raw)
	}
	var out []byte
	n := 0
	ok := blocks(raw, func(b *block) {
		if b.typ != "text" {
			return
		}
		if n > 0 {
			out = append(out, '\n')
		}
		n++
		out = appendText(out, b.text)
	})
	if !ok {
		return ""
	}
	return string(out)
}

func appendText(dst []byte, sp strSpan) []byte {
	if sp.plain {
		return append(dst, sp.raw...)
	}
	return unquote(dst, sp.raw)
}

// assistantContent is the assistant's text over a checked value: text
// blocks and, for each tool call, its name and its arguments' strings, one
// per line.
func assistantContent(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		return rawString(raw)
	}
	var out []byte
	n := 0
	part := func() {
		if n > 0 {
			out = append(out, '\n')
		}
		n++
	}
	ok := blocks(raw, func(b *block) {
		switch b.typ {
		case "text":
			part()
			out = appendText(out, b.text)
		case "toolCall":
			part()
			out = appendText(out, b.name)
			if len(b.arguments) > 0 {
				walkStrings(newScanner(b.arguments), func(sp strSpan) {
					part()
					out = appendText(out, sp)
				})
			}
		}
	})
	if !ok {
		return ""
	}
	return string(out)
}

// walkStrings calls fn for every string value (not key) of the checked
// value at s.I, depth-first in written order.
func walkStrings(s *scanner, fn func(strSpan)) {
	if s.I >= len(s.B) {
		return
	}
	switch s.B[s.I] {
	case '"':
		raw, plain, err := s.Str()
		if err == nil {
			fn(strSpan{raw, plain})
		}
	case '{':
		_ = s.Object(func([]byte, bool) error { walkStrings(s, fn); return nil })
	case '[':
		_ = s.Array(func() error { walkStrings(s, fn); return nil })
	default:
		_ = s.Value()
	}
}

// notebookContent renders the sections of a checked notebook data value
// as NotebookSections and notebookText do; false when it has none.
func notebookContent(data []byte) (string, bool) {
	if len(data) == 0 || data[0] != '{' {
		return "", false // absent, null, or the wrong kind for a struct
	}
	s := newScanner(data)
	var sections []byte
	_ = s.Object(func(key []byte, plain bool) error {
		if fieldOf([]string{"sections"}, key, plain) == 0 {
			var err error
			sections, err = s.Span()
			return err
		}
		return s.Value()
	})
	if len(sections) == 0 || sections[0] != '{' {
		return "", false
	}
	var b []byte
	n := 0
	s = newScanner(sections)
	_ = s.Object(func(key []byte, plain bool) error {
		var body strSpan
		if s.B[s.I] == '"' {
			raw, p, err := s.Str()
			if err != nil {
				return err
			}
			body = strSpan{raw, p}
		} else if !s.IsNull() {
			return s.Value() // not text: left out
		} else if err := s.Value(); err != nil {
			return err
		}
		if n > 0 {
			b = append(b, '\n')
		}
		n++
		b = append(b, "## "...)
		b = appendText(b, strSpan{key, plain})
		b = append(b, '\n')
		b = appendText(b, body)
		return nil
	})
	return string(b), true
}

// handoffContent returns the text of a Handoff record: its "text" member
// decoded as encoding/json decodes it into a string field (keys matched
// as it matches them, the last one wins, null leaves the text as it was,
// any other kind fails the record). False when there is no text.
func handoffContent(data []byte) (string, bool) {
	if len(data) == 0 || data[0] != '{' {
		return "", false
	}
	var text strSpan
	s := newScanner(data)
	err := s.Object(func(key []byte, plain bool) error {
		if fieldOf([]string{"text"}, key, plain) != 0 || s.IsNull() {
			return s.Value()
		}
		if s.B[s.I] != '"' {
			return errNotText
		}
		raw, p, err := s.Str()
		text = strSpan{raw, p}
		return err
	})
	if err != nil {
		return "", false
	}
	b := appendText(nil, text)
	return string(b), len(b) > 0
}

// errNotText stops a scan at a member that should hold text and does not.
var errNotText = errors.New("not a string")

// replacementContent returns the content of a checked context_edit
// replacement: the value of its "content" member (the last one, keys
// matched as encoding/json matches them) when the replacement is an object;
// nil otherwise (absent, null, or another kind).
func replacementContent(raw []byte) []byte {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var content []byte
	s := newScanner(raw)
	_ = s.Object(func(key []byte, plain bool) error {
		if fieldOf([]string{"content"}, key, plain) == 0 {
			var err error
			content, err = s.Span()
			return err
		}
		return s.Value()
	})
	return content
}

// rawNumber decodes a checked JSON number; 0 for any other value or one a
// float64 cannot hold.
func rawNumber(raw []byte) float64 {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0
	}
	return f
}
