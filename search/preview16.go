package search

import (
	"encoding/json"
	"fmt"

	"github.com/pi-history/pi-history/journal"
)

// Previews of what Pi 1.6 added to the journal (see journal/pi16.go).

// systemPreview names what a system message sets: its sections, the
// sections it removes, the tools it adds and removes.
func systemPreview(raw []byte) string {
	var r struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(raw, &r)
	if sm, ok := journal.ReadSystemMessage(r.Message); ok {
		return "system: " + sm.Summary()
	}
	return "system"
}

// usagePreview shows a usage entry's kind, model and total tokens.
func usagePreview(raw []byte) string {
	var r struct {
		Kind     string `json:"kind"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
		Note     string `json:"note"`
		Usage    struct {
			TotalTokens int `json:"totalTokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(raw, &r)
	s := fmt.Sprintf("usage(%s): %s/%s, %d tokens", r.Kind, r.Provider, r.Model, r.Usage.TotalTokens)
	if r.Note != "" {
		s += " (" + r.Note + ")"
	}
	return s
}

// contextEditText is the text a context edit puts in its target's place.
func contextEditText(raw []byte) string {
	var r struct {
		Replacement struct {
			Content json.RawMessage `json:"content"`
		} `json:"replacement"`
	}
	_ = json.Unmarshal(raw, &r)
	return journal.ContentText(r.Replacement.Content)
}
