package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/rollover"
)

func TestLedger(t *testing.T) {
	t.Setenv(rollover.LedgerDisabledEnv, "")
	e := newTestEnv(t)
	l := rollover.OpenLedger(e.data)
	no, yes := false, true
	rows := []rollover.Row{
		{Time: "2026-01-02T10:00:00Z", Kind: rollover.RowGate, Session: "s1", Window: 1, OK: &no, Blocker: "pending_tool_call", ReclaimTokens: 1200},
		{Time: "2026-01-02T10:01:00Z", Kind: rollover.RowGate, Session: "s1", Window: 1, OK: &yes, ReclaimTokens: 5000},
		{Time: "2026-01-02T10:02:00Z", Kind: rollover.RowRollover, Session: "s1", Window: 2, TokensBefore: 90000, FirstKeptEntryID: "m7"},
		{Time: "2026-01-02T11:00:00Z", Kind: rollover.RowNotes, Session: "s2", NotebookRevision: 3, NotebookBytes: 812},
	}
	for _, r := range rows {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(l.Path(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"ts":"2026-01-02T12:00:00Z","ki`) // torn by a crash
	f.Close()

	check := func(t *testing.T, e *testEnv) string {
		out, errOut, code := e.cli("ledger")
		if code != 0 {
			t.Fatalf("ledger: exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 || !strings.HasPrefix(lines[0], "TIME") {
			t.Fatalf("ledger table:\n%s", out)
		}
		for _, want := range []string{"gate", "blocker=pending_tool_call", "ok=false", "reclaimTokens=1200"} {
			if !strings.Contains(lines[1], want) {
				t.Errorf("first row lacks %q: %s", want, lines[1])
			}
		}
		if !strings.Contains(lines[3], "rollover") || !strings.Contains(lines[3], "firstKeptEntryId=m7") || !strings.Contains(lines[3], " 2 ") {
			t.Errorf("rollover row: %s", lines[3])
		}
		if !strings.Contains(errOut, "1 unreadable line") {
			t.Errorf("the torn line is not reported: %q", errOut)
		}

		out = e.mustCLI("ledger", "--kind", "gate", "--limit", "1", "--json")
		var r rollover.Row
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Kind != "gate" || r.OK == nil || !*r.OK || strings.Count(out, "\n") != 1 {
			t.Errorf("--kind gate --limit 1 --json: %q (%v)", out, err)
		}
		out = e.mustCLI("ledger", "--session", "s2")
		if !strings.Contains(out, "notebookRevision=3") || strings.Contains(out, "s1") {
			t.Errorf("--session s2:\n%s", out)
		}
		out, errOut, _ = e.cli("ledger", "--session", "nobody")
		if out != "" || !strings.Contains(errOut, "no ledger rows match") {
			t.Errorf("no rows: %q %q", out, errOut)
		}
		if _, errOut, code := e.cli("ledger", "--kind", "bogus"); code != 2 || !strings.Contains(errOut, "rollover_declined") {
			t.Errorf("--kind bogus: exit %d: %s", code, errOut)
		}
		return out
	}
	t.Run("file", func(t *testing.T) {
		check(t, e)
		if _, err := os.Stat(filepath.Join(e.data, "store")); err == nil {
			t.Error("ledger opened the store; it should only read the file")
		}
	})
	t.Run("server", func(t *testing.T) {
		e := *e
		e.t = t
		e.serve()
		check(t, &e)
		_, errOut, _ := e.cli("ledger", "--log-level", "debug", "--log-format", "text")
		if !strings.Contains(errOut, "through the running server") {
			t.Errorf("with a server the ledger is not read through its API: %s", errOut)
		}
	})
}
