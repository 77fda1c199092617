package rollover

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLedgerAppendRead(t *testing.T) {
	dir := t.TempDir()
	l := OpenLedger(dir)
	l.now = func() time.Time { return time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC) }
	if !l.Enabled() {
		t.Fatal("ledger disabled without the variable")
	}
	path, nb := gateSession(t, false)
	v := Gate(GateInput{Path: path, Notebook: nb, Request: ReasonHost, Usage: usageLow, Pi: testPi, Config: testConfig()})
	c, err := Rollover(RolloverInput{Path: path, Notebook: nb, Reason: ReasonModel, Pi: testPi, Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{
		GateRow("0190test-0000-7000-8000-000000000000", v),
		RolloverRow("0190test-0000-7000-8000-000000000000", c, nb, 12000),
		{Kind: RowRolloverFailed, Session: "s-2", Reason: ReasonHost, Why: "boundary_rejected"},
		{Kind: RowWindowCache, Session: "s-2", Window: 3, Calls: 177, CacheReadTokens: 962000, UncachedTokens: 38000},
	}
	for _, r := range rows {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	// Private: it names sessions.
	if info, err := os.Stat(l.Path()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ledger file: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	// A torn line at the end is skipped, not fatal.
	f, _ := os.OpenFile(l.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"ts":"2026-11-01T10:00:00Z","kind":"ga`)
	f.Close()

	got, skipped, err := l.Read(LedgerFilter{})
	if err != nil || skipped != 1 || len(got) != 4 {
		t.Fatalf("read %d rows, %d skipped, %v", len(got), skipped, err)
	}
	if got[0].Blocker != BlockLowPressure || !got[0].Auto || got[0].OK == nil || *got[0].OK || got[0].Reason != ReasonHost {
		t.Errorf("gate row %+v", got[0])
	}
	if got[1].NotebookBytes != nb.Bytes || got[1].Window != 2 || got[1].Reason != ReasonModel {
		t.Errorf("rollover row %+v", got[1])
	}
	only, _, _ := l.Read(LedgerFilter{Session: "s-2", Limit: 1})
	if len(only) != 1 || only[0].Kind != RowWindowCache {
		t.Errorf("filtered %+v", only)
	}
	data, _ := os.ReadFile(l.Path())
	for _, secret := range []string{"checkout", "Fix the", "cart"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("ledger holds content %q", secret)
		}
	}
}

func TestLedgerRefusesContent(t *testing.T) {
	l := OpenLedger(t.TempDir())
	bad := []Row{
		{Kind: RowRolloverFailed, Why: "Error: ENOSPC writing /home/me/secret"},
		{Kind: RowGate, Session: "a session id with spaces"},
		{Kind: "Gate Verdict"},
		{},
	}
	for _, r := range bad {
		if err := l.Append(r); !errors.Is(err, ErrBadRow) {
			t.Errorf("%+v: %v, want ErrBadRow", r, err)
		}
	}
	if _, err := os.Stat(l.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused row created the file")
	}
}

func TestLedgerDisabled(t *testing.T) {
	t.Setenv(LedgerDisabledEnv, "1")
	dir := t.TempDir()
	l := OpenLedger(dir)
	if l.Enabled() {
		t.Fatal("enabled despite the variable")
	}
	if err := l.Append(Row{Kind: RowGate}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, LedgerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Error("disabled ledger wrote a file")
	}
}

func TestDecisionRows(t *testing.T) {
	s := State{Window: 2, Active: 3}
	rows := DecisionRows("s", s, Decision{Cancel: "user_abort", Cancelled: ReasonModel, RollOver: ReasonFallback, GiveUp: false})
	want := []Row{
		{Kind: RowRolloverCancelled, Session: "s", Window: 2, Reason: ReasonModel, Why: "user_abort"},
		{Kind: RowMaintenance, Session: "s", Window: 2, Stage: StageCheckpointed, Attempt: 3},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %+v", rows)
	}
}

func TestConfig(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		check func(t *testing.T, c Config, probs []ConfigProblem, err error)
	}{
		{name: "empty object gives the defaults", doc: `{}`, check: func(t *testing.T, c Config, probs []ConfigProblem, err error) {
			if err != nil || len(probs) != 0 || !reflect.DeepEqual(c, DefaultConfig()) {
				t.Errorf("%+v %v %v", c, probs, err)
			}
		}},
		{name: "documented example", doc: `{"enabled":true,"notebookMaxBytes":16384,"notebookMaxTokens":4096,"leadTokens":24000,"fallbackBufferTokens":12000,"minReclaimTokens":20000,"pinnedMessageMaxChars":600,"pinnedTotalMaxTokens":4096,"sessionIndexMaxTokens":3072,"externalCompactionModels":["local-responses/gpt-5.6-sol"]}`,
			check: func(t *testing.T, c Config, probs []ConfigProblem, err error) {
				if err != nil || len(probs) != 0 || !c.ExternalOwner("local-responses/gpt-5.6-sol") || c.ExternalOwner("other") {
					t.Errorf("%+v %v %v", c, probs, err)
				}
			}},
		{name: "the removed userVisibleNotebook is reported, not used", doc: `{"userVisibleNotebook":false}`,
			check: func(t *testing.T, c Config, probs []ConfigProblem, err error) {
				if err != nil || len(probs) != 1 || probs[0].Key != "userVisibleNotebook" || !reflect.DeepEqual(c, DefaultConfig()) {
					t.Errorf("%+v %v %v", c, probs, err)
				}
			}},
		{name: "bad values fall back, each reported once", doc: `{"leadTokens":"many","minReclaimTokens":-5,"budgetTokens":1.5,"autoRollover":"yes","externalCompactionModels":"x","mystery":1,"sessionIndexMaxTokens":100}`,
			check: func(t *testing.T, c Config, probs []ConfigProblem, err error) {
				d := DefaultConfig()
				if err != nil || c.LeadTokens != d.LeadTokens || c.MinReclaimTokens != d.MinReclaimTokens || c.BudgetTokens != d.BudgetTokens ||
					c.AutoRollover != d.AutoRollover || c.SessionIndexMaxTokens != 100 {
					t.Errorf("%+v %v", c, err)
				}
				var keys []string
				for _, p := range probs {
					keys = append(keys, p.Key)
				}
				if strings.Join(keys, ",") != "autoRollover,budgetTokens,externalCompactionModels,leadTokens,minReclaimTokens,mystery" {
					t.Errorf("problems %v", probs)
				}
				if !strings.Contains(probs[0].String(), "using the default") {
					t.Errorf("problem text %q", probs[0])
				}
			}},
		{name: "not an object", doc: `[1,2]`, check: func(t *testing.T, c Config, probs []ConfigProblem, err error) {
			if err == nil || !reflect.DeepEqual(c, DefaultConfig()) {
				t.Errorf("%+v %v", c, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, probs, err := ParseConfig([]byte(c.doc))
			c.check(t, cfg, probs, err)
		})
	}
	if c, probs, err := LoadConfig(filepath.Join(t.TempDir(), "absent.json")); err != nil || probs != nil || !reflect.DeepEqual(c, DefaultConfig()) {
		t.Errorf("missing file: %+v %v %v", c, probs, err)
	}
}

func TestZones(t *testing.T) {
	c := DefaultConfig()
	pi := PiSettings{}
	if z := c.Zones(1_000_000, pi); z != (Zones{Reminder: 400000 - 16384 - 24000, Fallback: 400000 - 16384 - 12000}) {
		t.Errorf("1M window: %+v", z)
	}
	if z := c.Zones(128_000, pi); z != (Zones{Reminder: 128000 - 16384 - 24000, Fallback: 128000 - 16384 - 12000}) {
		t.Errorf("128K window: %+v", z)
	}
	c.FallbackBudgetTokens = 600_000
	if z := c.Zones(1_000_000, pi); z.Fallback != 600000-16384-12000 || z.Reminder != 400000-16384-24000 {
		t.Errorf("split budgets: %+v", z)
	}
}

func TestWindowCacheRowSumsTheWindowsCalls(t *testing.T) {
	b := newJB(t)
	b.user("go")
	b.msg(map[string]any{"role": "assistant", "content": []any{}, "stopReason": "stop",
		"usage": map[string]any{"input": 20, "output": 5, "cacheRead": 900, "cacheWrite": 0, "totalTokens": 925}})
	b.assistant("no usage reported", 0)
	b.msg(map[string]any{"role": "assistant", "content": []any{}, "stopReason": "stop",
		"usage": map[string]any{"input": 30, "output": 5, "cacheRead": 1000, "cacheWrite": 0, "totalTokens": 1035}})
	// A call whose prefix changed: most of its input was written to the
	// cache, not read from it.
	b.msg(map[string]any{"role": "assistant", "content": []any{}, "stopReason": "stop",
		"usage": map[string]any{"input": 100, "output": 5, "cacheRead": 5000, "cacheWrite": 80000, "totalTokens": 85105}})
	r := WindowCacheRow("s1", 3, b.path())
	if r.Kind != RowWindowCache || r.Window != 3 || r.Calls != 3 || r.CacheReadTokens != 6900 || r.UncachedTokens != 80150 || r.CacheWriteTokens != 80000 {
		t.Errorf("row %+v; want 3 calls, 6900 cache-read, 80150 uncached (80000 of them cache writes) tokens in window 3", r)
	}
}
