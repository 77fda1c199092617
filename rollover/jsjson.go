package rollover

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file measures JSON the way JavaScript sees it. Pi's estimateTokens
// counts String.prototype.length (UTF-16 code units) and, for tool calls, the
// length of JSON.stringify(arguments) after JSON.parse. Going through Go's
// encoding/json would lose lone surrogates (they become U+FFFD) and duplicate
// keys (JSON.parse keeps the last value), so these functions scan the raw
// bytes instead. All of them run in time linear in the input.

// jsStringLen returns the UTF-16 length of the JSON string literal raw
// (quotes included in raw, not counted). It returns 0, false when raw is not
// a string literal.
func jsStringLen(raw []byte) (int, bool) {
	units, ok := decodeJSString(raw, nil)
	if !ok {
		return 0, false
	}
	return len(units), true
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

// decodeJSString decodes the string literal at the start of raw into UTF-16
// code units, appending to dst. Lone surrogates written as \u escapes are
// kept, as JavaScript keeps them.
func decodeJSString(raw []byte, dst []uint16) ([]uint16, bool) {
	s, _, ok := scanJSString(raw, 0, dst)
	return s, ok
}

// scanJSString decodes the string literal starting at raw[i] (which must be
// '"') and returns the code units and the index just past the closing quote.
func scanJSString(raw []byte, i int, dst []uint16) ([]uint16, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return dst, i, false
	}
	i++
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			return dst, i + 1, true
		case c == '\\':
			if i+1 >= len(raw) {
				return dst, i, false
			}
			e := raw[i+1]
			switch e {
			case '"', '\\', '/':
				dst = append(dst, uint16(e))
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
				if i+6 > len(raw) {
					return dst, i, false
				}
				v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
				if err != nil {
					return dst, i, false
				}
				dst = append(dst, uint16(v))
				i += 6
				continue
			default:
				return dst, i, false
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
	return dst, i, false
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
// the value was undefined).
func jsStringifyLen(raw []byte) (int, bool) {
	p := &jsParser{raw: raw}
	p.skipWS()
	n, ok := p.value()
	if !ok {
		return 0, false
	}
	p.skipWS()
	if p.i != len(p.raw) {
		return 0, false
	}
	return n, true
}

type jsParser struct {
	raw []byte
	i   int
	buf []uint16
}

func (p *jsParser) skipWS() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value returns the stringified length of the value at p.i. Nesting depth
// is bounded by the recursion; journal lines come from JSON.parse in Pi,
// which has its own limits, and callers pass single lines.
func (p *jsParser) value() (int, bool) {
	if p.i >= len(p.raw) {
		return 0, false
	}
	switch c := p.raw[p.i]; {
	case c == '"':
		units, next, ok := scanJSString(p.raw, p.i, p.buf[:0])
		p.buf = units
		if !ok {
			return 0, false
		}
		p.i = next
		return jsQuotedLen(units), true
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		return p.number()
	}
}

func (p *jsParser) literal(word string) (int, bool) {
	if !strings.HasPrefix(string(p.raw[p.i:min(len(p.raw), p.i+len(word))]), word) {
		return 0, false
	}
	p.i += len(word)
	return len(word), true
}

func (p *jsParser) number() (int, bool) {
	start := p.i
	for p.i < len(p.raw) {
		c := p.raw[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(p.raw[start:p.i]), 64)
	if err != nil {
		// ParseFloat reports out-of-range values with ±Inf and an error;
		// JSON.parse gives ±Infinity, which JSON.stringify writes as null.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if math.IsInf(f, 0) {
				return 4, true
			}
			return jsNumberLen(f), true
		}
		return 0, false
	}
	return jsNumberLen(f), true
}

func (p *jsParser) array() (int, bool) {
	p.i++ // [
	n, count := 2, 0
	p.skipWS()
	if p.i < len(p.raw) && p.raw[p.i] == ']' {
		p.i++
		return n, true
	}
	for {
		p.skipWS()
		v, ok := p.value()
		if !ok {
			return 0, false
		}
		n += v
		count++
		p.skipWS()
		if p.i >= len(p.raw) {
			return 0, false
		}
		switch p.raw[p.i] {
		case ',':
			p.i++
			n++
		case ']':
			p.i++
			return n, true
		default:
			return 0, false
		}
	}
}

// object sums "key":value pairs. JSON.parse keeps the last value of a
// duplicated key (at the key's first position, which does not change the
// length), so later duplicates replace earlier ones.
func (p *jsParser) object() (int, bool) {
	p.i++ // {
	p.skipWS()
	if p.i < len(p.raw) && p.raw[p.i] == '}' {
		p.i++
		return 2, true
	}
	var pairs map[string]int // key → stringified pair length, when duplicates are possible
	total, count := 0, 0
	for {
		p.skipWS()
		units, next, ok := scanJSString(p.raw, p.i, p.buf[:0])
		p.buf = units
		if !ok {
			return 0, false
		}
		p.i = next
		keyLen := jsQuotedLen(units)
		key := string(utf16Bytes(units))
		p.skipWS()
		if p.i >= len(p.raw) || p.raw[p.i] != ':' {
			return 0, false
		}
		p.i++
		p.skipWS()
		v, ok := p.value()
		if !ok {
			return 0, false
		}
		pair := keyLen + 1 + v
		if pairs == nil {
			pairs = map[string]int{}
		}
		if old, dup := pairs[key]; dup {
			total += pair - old
		} else {
			total += pair
			count++
		}
		pairs[key] = pair
		p.skipWS()
		if p.i >= len(p.raw) {
			return 0, false
		}
		switch p.raw[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return 2 + total + count - 1, true
		default:
			return 0, false
		}
	}
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
