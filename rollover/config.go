package rollover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
)

// Config is the plugin configuration (docs/spec-notes.md, "Configuration", "Host-initiated rollover", "Budget scale"). The file is a
// JSON object; every key is optional and falls back to its default.
type Config struct {
	Enabled                  bool     `json:"enabled"`                  // default true
	NotebookMaxBytes         int      `json:"notebookMaxBytes"`         // 16384
	NotebookMaxTokens        int      `json:"notebookMaxTokens"`        // 4096
	LeadTokens               int      `json:"leadTokens"`               // 24000: the reminder fires this far before the threshold
	FallbackBufferTokens     int      `json:"fallbackBufferTokens"`     // 12000: the fallback starts this far before it
	MinReclaimTokens         int      `json:"minReclaimTokens"`         // 20000
	PinnedMessageMaxChars    int      `json:"pinnedMessageMaxChars"`    // 600
	PinnedTotalMaxTokens     int      `json:"pinnedTotalMaxTokens"`     // 4096
	SessionIndexMaxTokens    int      `json:"sessionIndexMaxTokens"`    // 3072
	ExternalCompactionModels []string `json:"externalCompactionModels"` // "provider/model" ids whose compaction another extension owns
	AutoRollover             bool     `json:"autoRollover"`             // true: the host schedules after a notes write (docs/spec-notes.md, "Host-initiated rollover")
	BudgetTokens             int      `json:"budgetTokens"`             // 400000: pressure reads against min(contextWindow, budget)
	FallbackBudgetTokens     int      `json:"fallbackBudgetTokens"`     // 0 = BudgetTokens; scales only the forced fallback zone
	StatusStepTokens         int      `json:"statusStepTokens"`         // 40000
	MaxBlockedCalls          int      `json:"maxBlockedCalls"`          // 3 blocked non-notes calls before maintenance gives up
	MaxRepairs               int      `json:"maxRepairs"`               // 1 repair attempt after a failed checkpoint write
	// RequireHandoff refuses a new_context call without a handoff (seed B's
	// rule); false (seed A's) lets the notebook alone carry a rollover.
	// docs/decisions/230.
	RequireHandoff bool `json:"requireHandoff"`
	// RedirectCompact turns the user's /compact (Pi 1.6: a manual
	// compaction) into the /rollover preparation, its instructions shaping
	// the Handoff (seed B); false (seed A) lets /compact run as before.
	// docs/decisions/230.
	RedirectCompact bool `json:"redirectCompact"`
	// EmergencyRollover answers Pi's context overflow with the template
	// and the last saved Handoff marked stale (seed B); false lets Pi's
	// own summary recover, as seed A does. docs/decisions/310.
	EmergencyRollover bool `json:"emergencyRollover"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:                  true,
		NotebookMaxBytes:         16384,
		NotebookMaxTokens:        4096,
		LeadTokens:               24000,
		FallbackBufferTokens:     12000,
		MinReclaimTokens:         20000,
		PinnedMessageMaxChars:    600,
		PinnedTotalMaxTokens:     4096,
		SessionIndexMaxTokens:    3072,
		ExternalCompactionModels: []string{},
		AutoRollover:             true,
		BudgetTokens:             400000,
		StatusStepTokens:         40000,
		MaxBlockedCalls:          3,
		MaxRepairs:               1,
		EmergencyRollover:        true,
	}
}

// ConfigProblem is one bad value found while loading: the key and what was
// wrong. The default was used in its place.
type ConfigProblem struct {
	Key     string `json:"key"`
	Problem string `json:"problem"`
}

func (p ConfigProblem) String() string {
	return fmt.Sprintf("config %s: %s; using the default", p.Key, p.Problem)
}

// intKeys lists the integer settings with their lower bound (inclusive).
var intKeys = map[string]struct {
	field func(*Config) *int
	min   int
}{
	"notebookMaxBytes":      {func(c *Config) *int { return &c.NotebookMaxBytes }, 1},
	"notebookMaxTokens":     {func(c *Config) *int { return &c.NotebookMaxTokens }, 1},
	"leadTokens":            {func(c *Config) *int { return &c.LeadTokens }, 0},
	"fallbackBufferTokens":  {func(c *Config) *int { return &c.FallbackBufferTokens }, 0},
	"minReclaimTokens":      {func(c *Config) *int { return &c.MinReclaimTokens }, 0},
	"pinnedMessageMaxChars": {func(c *Config) *int { return &c.PinnedMessageMaxChars }, 1},
	"pinnedTotalMaxTokens":  {func(c *Config) *int { return &c.PinnedTotalMaxTokens }, 1},
	"sessionIndexMaxTokens": {func(c *Config) *int { return &c.SessionIndexMaxTokens }, 1},
	"budgetTokens":          {func(c *Config) *int { return &c.BudgetTokens }, 1},
	"fallbackBudgetTokens":  {func(c *Config) *int { return &c.FallbackBudgetTokens }, 0},
	"statusStepTokens":      {func(c *Config) *int { return &c.StatusStepTokens }, 1},
	"maxBlockedCalls":       {func(c *Config) *int { return &c.MaxBlockedCalls }, 0},
	"maxRepairs":            {func(c *Config) *int { return &c.MaxRepairs }, 0},
}

var boolKeys = map[string]func(*Config) *bool{
	"enabled":           func(c *Config) *bool { return &c.Enabled },
	"autoRollover":      func(c *Config) *bool { return &c.AutoRollover },
	"requireHandoff":    func(c *Config) *bool { return &c.RequireHandoff },
	"redirectCompact":   func(c *Config) *bool { return &c.RedirectCompact },
	"emergencyRollover": func(c *Config) *bool { return &c.EmergencyRollover },
}

// removedKeys are keys of the design's configuration this implementation
// does not have, with what to do instead; they are reported, not used.
var removedKeys = map[string]string{
	// The notebook is a custom entry (not shown in Pi's transcript) and
	// its text reaches the user in the rollover summary, which Pi shows;
	// nothing else would make it visible, so the switch was removed.
	"userVisibleNotebook": "no longer used (the notebook is shown in each rollover summary); remove it",
}

// ParseConfig reads a configuration document. Each bad value (wrong type,
// out of range, unknown key) is reported once in the returned problems and
// its default is used; only a document that is not a JSON object is an
// error, and then the defaults are returned with it.
func ParseConfig(data []byte) (Config, []ConfigProblem, error) {
	c := DefaultConfig()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("null")
		}
		return c, nil, fmt.Errorf("configuration is not a JSON object: %w", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var probs []ConfigProblem
	bad := func(k, why string) { probs = append(probs, ConfigProblem{Key: k, Problem: why}) }
	for _, k := range keys {
		raw := bytes.TrimSpace(m[k])
		if ik, ok := intKeys[k]; ok {
			var f float64
			if json.Unmarshal(raw, &f) != nil {
				bad(k, "not a number: "+string(raw))
				continue
			}
			if f != float64(int(f)) || f < float64(ik.min) || f > 1e9 {
				bad(k, fmt.Sprintf("%s is not an integer in [%d, 1e9]", string(raw), ik.min))
				continue
			}
			*ik.field(&c) = int(f)
			continue
		}
		if bk, ok := boolKeys[k]; ok {
			var b bool
			if json.Unmarshal(raw, &b) != nil {
				bad(k, "not true or false: "+string(raw))
				continue
			}
			*bk(&c) = b
			continue
		}
		if why, ok := removedKeys[k]; ok {
			bad(k, why)
			continue
		}
		if k == "externalCompactionModels" {
			var l []string
			if json.Unmarshal(raw, &l) != nil || l == nil {
				bad(k, "not a list of model ids")
				continue
			}
			c.ExternalCompactionModels = l
			continue
		}
		bad(k, "unknown key")
	}
	return c, probs, nil
}

// LoadConfig reads the configuration file at path. A missing file gives the
// defaults and no problems; see ParseConfig for bad values.
func LoadConfig(path string) (Config, []ConfigProblem, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil, nil
	}
	if err != nil {
		return DefaultConfig(), nil, fmt.Errorf("reading configuration %s: %w", path, err)
	}
	c, probs, err := ParseConfig(data)
	if err != nil {
		return c, probs, fmt.Errorf("configuration %s: %w", path, err)
	}
	return c, probs, nil
}

// ExternalOwner reports whether another extension owns compaction for the
// model ("provider/modelId", or a bare model id).
func (c Config) ExternalOwner(model string) bool {
	if model == "" {
		return false
	}
	for _, m := range c.ExternalCompactionModels {
		if m == model {
			return true
		}
	}
	return false
}

// Budget is min(contextWindow, budgetTokens): the scale all pressure logic
// reads against (docs/spec-notes.md, "Budget scale"). An unknown window (0) uses the budget alone.
func (c Config) Budget(contextWindow int) int {
	if contextWindow > 0 && contextWindow < c.BudgetTokens {
		return contextWindow
	}
	return c.BudgetTokens
}

// FallbackBudget is min(contextWindow, fallbackBudgetTokens or budgetTokens).
func (c Config) FallbackBudget(contextWindow int) int {
	b := c.FallbackBudgetTokens
	if b <= 0 {
		b = c.BudgetTokens
	}
	if contextWindow > 0 && contextWindow < b {
		return contextWindow
	}
	return b
}

// Zones are the pressure thresholds for one model window.
type Zones struct {
	Reminder int `json:"reminder"` // budget − reserveTokens − leadTokens: reminder and host floor
	Fallback int `json:"fallback"` // fallbackBudget − reserveTokens − fallbackBufferTokens: forced fallback
}

// Zones computes the thresholds for a model window and Pi settings.
func (c Config) Zones(contextWindow int, pi PiSettings) Zones {
	pi = pi.withDefaults()
	return Zones{
		Reminder: c.Budget(contextWindow) - pi.ReserveTokens - c.LeadTokens,
		Fallback: c.FallbackBudget(contextWindow) - pi.ReserveTokens - c.FallbackBufferTokens,
	}
}
