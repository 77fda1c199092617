package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Section is one named section of the notebook.
type Section struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// Sections is an ordered list of sections. In JSON it is an object whose keys
// appear in list order, which is the order Pi's extension displays them in
// (JavaScript keeps the insertion order of non-numeric keys, and section names
// always start with a letter).
type Sections []Section

// Get returns the text of the named section.
func (s Sections) Get(name string) (string, bool) {
	if i := s.index(name); i >= 0 {
		return s[i].Text, true
	}
	return "", false
}

func (s Sections) index(name string) int {
	for i := range s {
		if s[i].Name == name {
			return i
		}
	}
	return -1
}

// Names lists the section names in order.
func (s Sections) Names() []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i].Name
	}
	return out
}

// MarshalJSON writes the sections as one JSON object, keys in list order,
// without HTML escaping (the bytes then match what JSON.stringify writes for
// the same strings, except for U+2028/U+2029, which Go escapes).
func (s Sections) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, sec := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, sec.Name)
		b.WriteByte(':')
		writeJSONString(&b, sec.Text)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// UnmarshalJSON reads a JSON object of string values, keeping key order. A
// repeated key keeps its first position and its last value, as JSON.parse
// does. A value that is not a string, or bytes that are not valid UTF-8, give
// an *InvalidError (encoding/json would otherwise replace bad bytes silently).
func (s *Sections) UnmarshalJSON(data []byte) error {
	if !utf8.Valid(data) {
		return &InvalidError{Field: "sections", Reason: "not valid UTF-8",
			Hint: "send section names and texts as UTF-8 text"}
	}
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		*s = nil
		return nil
	}
	if len(data) == 0 || data[0] != '{' {
		return &InvalidError{Field: "sections", Reason: "must be an object of section name to text",
			Hint: `send e.g. {"State": "…", "Next": "…"}`}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return &InvalidError{Field: "sections", Reason: "malformed JSON: " + err.Error()}
	}
	out := Sections{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return &InvalidError{Field: "sections", Reason: "malformed JSON: " + err.Error()}
		}
		name, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return &InvalidError{Field: "sections", Reason: "malformed JSON: " + err.Error()}
		}
		var text string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &text) != nil {
			return &InvalidError{Field: fmt.Sprintf("section %q", name), Reason: "value is not a string",
				Hint: `give each section a string; "" deletes it`}
		}
		if i := out.index(name); i >= 0 {
			out[i].Text = text
		} else {
			out = append(out, Section{Name: name, Text: text})
		}
	}
	*s = out
	return nil
}
