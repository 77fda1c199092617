package rollover

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pi-history/pi-history/internal/jsontok"
)

// This file measures JSON the way JavaScript sees it. Pi's estimateTokens
// counts String.prototype.length (UTF-16 code units) and, for tool calls, the
// length of JSON.stringify(arguments) after JSON.parse. Going through Go's
// encoding/json would lose lone surrogates (they become U+FFFD) and duplicate
// keys (JSON.parse keeps the last value), so these functions read the raw
// bytes with the project's tokenizer (internal/jsontok, which checks the
// syntax JSON.parse checks) and give the values JavaScript's meaning
// themselves. All of them run in time linear in the input.

// jsStringLen returns the UTF-16 length of the JSON string literal raw
// (quotes included in raw, not counted). It returns 0, false when raw does
// not start with a string literal.
func jsStringLen(raw []byte) (int, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return 0, false
	}
	s := jsontok.Scanner{B: raw}
	inner, plain, err := s.Str()
	if err != nil {
		return 0, false
	}
	if plain {
		return len(inner), true
	}
	return len(appendUTF16(nil, inner)), true
}

// jsUTF16Len is the UTF-16 length of a Go string. Invalid UTF-8 bytes count
// one unit each, as U+FFFD would.
func jsUTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// appendUTF16 appends to dst the UTF-16 code units of the string whose
// literal's inner bytes are raw (checked by jsontok.Scanner.Str), as
// JSON.parse makes them: a \u escape gives its code unit as written, so a
// lone surrogate is kept, and an invalid UTF-8 byte counts as one U+FFFD.
func appendUTF16(dst []uint16, raw []byte) []uint16 {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch e := raw[i+1]; e {
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
				dst = append(dst, uint16(jsontok.Hex4(raw[i+2:])))
				i += 6
				continue
			default: // '"', '\\', '/'
				dst = append(dst, uint16(e))
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, uint16(c))
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			i += size
			if r >= 0x10000 {
				a, b := utf16.EncodeRune(r)
				dst = append(dst, uint16(a), uint16(b))
			} else {
				dst = append(dst, uint16(r))
			}
		}
	}
	return dst
}

// jsQuotedLen is the length of JSON.stringify applied to the string whose
// UTF-16 code units are units (well-formed JSON.stringify, as in Node ≥ 12).
func jsQuotedLen(units []uint16) int {
	n := 2
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t':
			n += 2
		case u < 0x20:
			n += 6
		case u >= 0xD800 && u <= 0xDBFF:
			if i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] <= 0xDFFF {
				n += 2
				i++
			} else {
				n += 6
			}
		case u >= 0xDC00 && u <= 0xDFFF:
			n += 6
		default:
			n++
		}
	}
	return n
}

// jsStringifyLen returns the length of JSON.stringify(JSON.parse(raw)). An
// empty or invalid raw returns 0, false (JavaScript would have thrown, or
// the value was undefined). The syntax is jsontok's, which JSON.parse
// shares but for nesting past jsontok.MaxDepth, which is refused here (a
// journal line nested that deep is refused by package journal before its
// arguments could reach this function).
func jsStringifyLen(raw []byte) (int, bool) {
	m := &jsMeasure{s: jsontok.Scanner{B: raw}}
	m.s.WS()
	n, err := m.value()
	if err != nil || m.s.End() != nil {
		return 0, false
	}
	return n, true
}

// jsMeasure measures the stringified length of the values it reads.
type jsMeasure struct {
	s   jsontok.Scanner
	buf []uint16 // a string's code units, reused
}

// value returns the stringified length of the value at the scanner's
// position and reads past it.
func (m *jsMeasure) value() (int, error) {
	s := &m.s
	if s.I >= len(s.B) {
		return 0, s.Fail("")
	}
	switch s.B[s.I] {
	case '"':
		inner, _, err := s.Str()
		if err != nil {
			return 0, err
		}
		m.buf = appendUTF16(m.buf[:0], inner)
		return jsQuotedLen(m.buf), nil
	case '{':
		return m.object()
	case '[':
		n, count := 2, 0
		err := s.Array(func() error {
			v, err := m.value()
			n += v
			count++
			return err
		})
		if count > 1 {
			n += count - 1 // the commas
		}
		return n, err
	}
	lit, err := s.Span()
	if err != nil {
		return 0, err
	}
	if c := lit[0]; c == 't' || c == 'f' || c == 'n' {
		return len(lit), nil // true, false, null: written as read
	}
	return jsNumberLen(jsNumber(lit)), nil
}

// jsNumber is the value JSON.parse gives the number literal lit (checked):
// the nearest float64, ±Infinity past the largest.
func jsNumber(lit []byte) float64 {
	// ParseFloat reports a literal past the float64 range with ±Inf and
	// ErrRange, which is JSON.parse's answer; the syntax is checked, so no
	// other error can occur.
	f, _ := strconv.ParseFloat(string(lit), 64)
	return f
}

// object sums "key":value pairs. JSON.parse keeps the last value of a
// duplicated key (at the key's first position, which does not change the
// length), so later duplicates replace earlier ones.
func (m *jsMeasure) object() (int, error) {
	pairs := map[string]int{} // key (as UTF-16 bytes) → stringified pair length
	total := 0
	err := m.s.Object(func(inner []byte, _ bool) error {
		m.buf = appendUTF16(m.buf[:0], inner)
		keyLen := jsQuotedLen(m.buf)
		key := string(utf16Bytes(m.buf))
		v, err := m.value()
		if err != nil {
			return err
		}
		pair := keyLen + 1 + v
		total += pair - pairs[key]
		pairs[key] = pair
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(pairs) == 0 {
		return 2, nil
	}
	return 2 + total + len(pairs) - 1, nil
}

func utf16Bytes(units []uint16) []byte {
	b := make([]byte, 2*len(units))
	for i, u := range units {
		b[2*i], b[2*i+1] = byte(u>>8), byte(u)
	}
	return b
}

// jsNumberLen is the length of Number.prototype.toString() for a finite f
// (ECMA-262 Number::toString with radix 10). strconv's shortest formatting
// produces the same digits as JavaScript's shortest round-trip algorithm.
func jsNumberLen(f float64) int {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 4 // null
	}
	if f == 0 {
		return 1 // "0", also for -0
	}
	sign := 0
	if f < 0 {
		sign = 1
		f = -f
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	k := len(digits)
	e, _ := strconv.Atoi(exp)
	n := e + 1
	switch {
	case k <= n && n <= 21:
		return sign + n
	case 0 < n && n <= 21:
		return sign + k + 1
	case -6 < n && n <= 0:
		return sign + 2 + (-n) + k
	default:
		x := n - 1
		if x < 0 {
			x = -x
		}
		el := 2 + len(strconv.Itoa(x)) // "e" + sign + digits
		if k == 1 {
			return sign + 1 + el
		}
		return sign + k + 1 + el
	}
}
