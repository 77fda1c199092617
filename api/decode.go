package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// mediaType returns the request's media type ("" when absent).
func mediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" { // the usual cases, without parsing
		return ct
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "invalid"
	}
	return strings.ToLower(mt)
}

func unsupportedMedia(got string, want ...string) *apiError {
	if got == "" {
		got = "none"
	}
	return newProblem(http.StatusUnsupportedMediaType, ProblemMediaType, "Unsupported media type", "Content-Type",
		"Content-Type %s is not accepted here; send %s", got, strings.Join(want, " or "))
}

// decodeJSON reads exactly one JSON value of type application/json into dst,
// rejecting unknown fields, wrong types, trailing data and bodies over limit.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64) error {
	if mt := mediaType(r); mt != "application/json" {
		return unsupportedMedia(mt, "application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return jsonError(err)
	}
	if err := refuseLossyJSON(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var pe *time.ParseError
		if errors.As(err, &pe) {
			// encoding/json does not say which field held the time.
			return badTime(timeField(body, dst), err)
		}
		return jsonError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "",
			"the body must hold exactly one JSON object; more follows it at byte %d", dec.InputOffset())
	}
	return nil
}

// refuseLossyJSON is the error for a JSON body that encoding/json would
// read with text changed: bytes that are not UTF-8, or a lone UTF-16
// surrogate escape (both read as U+FFFD). Nil for any other body.
func refuseLossyJSON(body []byte) error {
	if !utf8.Valid(body) {
		at := 0
		for at < len(body) {
			r, n := utf8.DecodeRune(body[at:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			at += n
		}
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "",
			"the body is not UTF-8 (byte %d is 0x%02x): JSON text must be, and Go would read the bytes as U+FFFD, silently changing what was sent; nothing was stored (journal lines go byte for byte as application/x-ndjson)",
			at, body[at])
	}
	if at := loneSurrogate(body); at >= 0 {
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "",
			"the body holds a lone UTF-16 surrogate escape (%s) at byte %d: text must be valid Unicode (Go would read it as U+FFFD, silently changing what was sent); nothing was stored",
			body[at:at+6], at)
	}
	return nil
}

// loneSurrogate returns the offset of the first \uXXXX escape inside a
// JSON string that is half of a surrogate pair without its other half
// (JavaScript's JSON.stringify writes one for a string cut inside a pair), or
// -1. Only string contents are looked at; malformed JSON is left to the
// decoder.
func loneSurrogate(b []byte) int {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			in = !in
		case in && c == '\\':
			r, ok := hex4(i)
			switch {
			case !ok:
				i++ // another escape: skip the escaped character
			case r >= 0xD800 && r <= 0xDBFF:
				if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
				} else {
					return i
				}
			case r >= 0xDC00 && r <= 0xDFFF:
				return i
			default:
				i += 5
			}
		}
	}
	return -1
}

// jsonError explains a decoding failure, naming the offending field.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	var pe *time.ParseError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "", "the JSON body ends too early")
	case errors.As(err, &se):
		return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "", "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		field := quoteParam(te.Field)
		if field == "" {
			return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "", "the body must be a JSON object, not %s", te.Value)
		}
		want, got := jsonKind(te.Type.String()), te.Value
		if want == "a number" && strings.HasPrefix(got, "number ") {
			// A number of the wrong kind (1.5, 1e3, or out of range for an
			// integer field): say which kind fits.
			want, got = "a whole number in range", strings.TrimPrefix(got, "number ")
		}
		return newProblem(http.StatusBadRequest, ProblemInvalidParam, "A field has the wrong type", field,
			"field %q must be %s, not %s", field, want, got)
	case errors.As(err, &pe):
		return badTime("", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return newProblem(http.StatusBadRequest, ProblemUnknownParam, "Unknown field", name, "field %q is not part of this request (see /v1/openapi.json)", name)
	}
	return newProblem(http.StatusBadRequest, ProblemInvalidJSON, "Malformed JSON", "", "cannot read the JSON body: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// badTime is the answer to a time that is not RFC 3339, in field (when
// known).
func badTime(field string, err error) error {
	if field == "" {
		return newProblem(http.StatusBadRequest, ProblemInvalidParam, "A field has the wrong type", "",
			"a time must be RFC 3339, like 2026-01-02T15:04:05Z: %v", err)
	}
	return newProblem(http.StatusBadRequest, ProblemInvalidParam, "A field has the wrong type", field,
		"field %q must be an RFC 3339 time, like 2026-01-02T15:04:05Z: %v", field, err)
}

// timeField names the first top-level field of body that dst (a pointer to
// a struct) reads as a time.Time and that does not hold one, or "".
func timeField(body []byte, dst any) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	t := reflect.TypeOf(dst)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return ""
	}
	timeType := reflect.TypeFor[time.Time]()
	var names []string
	for f := range t.Elem().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type == timeType && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		// encoding/json matches keys without regard to case.
		for key, raw := range fields {
			var tm time.Time
			if strings.EqualFold(key, name) && json.Unmarshal(raw, &tm) != nil {
				return name
			}
		}
	}
	return ""
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string", goType == "search.Scope":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "time.Time":
		return "an RFC 3339 time string"
	}
	return "an object"
}

// query reads URL query parameters strictly: each at most once (lists may
// repeat or be comma-separated), of the right type, and none unknown.
type query struct {
	v    url.Values
	seen map[string]bool
	err  error
}

func newQuery(r *http.Request) *query {
	return &query{v: r.URL.Query(), seen: map[string]bool{}}
}

func (q *query) fail(err error) {
	if q.err == nil {
		q.err = err
	}
}

func (q *query) one(name string) (string, bool) {
	q.seen[name] = true
	vs, ok := q.v[name]
	if !ok {
		return "", false
	}
	if len(vs) > 1 {
		q.fail(badParam(name, "query parameter %q is given %d times; give it once", name, len(vs)))
		return "", false
	}
	return vs[0], true
}

func (q *query) str(name string) string {
	s, _ := q.one(name)
	return s
}

func (q *query) int(name string, min int) int {
	s, ok := q.one(name)
	if !ok || s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		q.fail(badParam(name, "query parameter %q must be an integer, not %q", name, s))
		return 0
	}
	if n < min {
		q.fail(badParam(name, "query parameter %q must be at least %d, not %d", name, min, n))
		return 0
	}
	return n
}

func (q *query) bool(name string, def bool) bool {
	s, ok := q.one(name)
	if !ok || s == "" {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		q.fail(badParam(name, "query parameter %q must be true or false, not %q", name, s))
		return def
	}
	return b
}

// yesNo is bool (false by default) that also takes yes and no, which the
// export routes took first.
func (q *query) yesNo(name string) bool {
	switch s, _ := q.v[name]; {
	case len(s) == 1 && s[0] == "yes":
		q.seen[name] = true
		return true
	case len(s) == 1 && s[0] == "no":
		q.seen[name] = true
		return false
	}
	return q.bool(name, false)
}

func (q *query) list(name string) []string {
	q.seen[name] = true
	var out []string
	for _, v := range q.v[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (q *query) time(name string) time.Time {
	s, ok := q.one(name)
	if !ok || s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fail(badParam(name, "query parameter %q must be an RFC 3339 time like 2026-01-02T15:04:05Z, not %q", name, s))
	}
	return t
}

// done reports the first problem, or an unknown parameter.
func (q *query) done() error {
	if q.err != nil {
		return q.err
	}
	var unknown []string
	for k := range q.v {
		if !q.seen[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := make([]string, 0, len(q.seen))
		for k := range q.seen {
			known = append(known, k)
		}
		sort.Strings(known)
		if len(known) == 0 {
			return newProblem(http.StatusBadRequest, ProblemUnknownParam, "Unknown query parameter", unknown[0],
				"query parameter %q is not known here; this route takes none", unknown[0])
		}
		return newProblem(http.StatusBadRequest, ProblemUnknownParam, "Unknown query parameter", unknown[0],
			"query parameter %q is not known here; known: %s", unknown[0], strings.Join(known, ", "))
	}
	return nil
}
