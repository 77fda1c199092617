package procmem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestServeMemoryTuning: a server sets the memory limit to its budget and
// the collector's pace, and leaves either alone when the environment sets
// it (GOMEMLIMIT, GOGC).
func TestServeMemoryTuning(t *testing.T) {
	oldPct, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPct); debug.SetMemoryLimit(oldLimit) })
	const budget = 300 << 20
	for _, tc := range []struct {
		gogc, memlimit string
		wantPct        int
		wantLimit      int64
	}{
		{"", "", ServeGCPercent, budget},
		{"50", "", 77, budget}, // left as it was
		{"", "1GiB", ServeGCPercent, 3 << 30},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.memlimit)
		debug.SetGCPercent(77)
		debug.SetMemoryLimit(3 << 30)
		TuneServe(budget)
		if pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); pct != tc.wantPct || limit != tc.wantLimit {
			t.Errorf("GOGC=%q GOMEMLIMIT=%q: pace %d, limit %d; want %d, %d", tc.gogc, tc.memlimit, pct, limit, tc.wantPct, tc.wantLimit)
		}
	}
}

// processWide are the calls that change the whole process: only main
// packages make them (and this package, which main packages call).
var processWide = map[string]map[string]bool{
	"runtime/debug": {"SetGCPercent": true, "SetMemoryLimit": true, "SetMaxThreads": true, "SetMaxStack": true},
	"github.com/pi-history/pi-history/internal/procmem": {"TuneServe": true},
	"os":        {"Setenv": true, "Unsetenv": true, "Clearenv": true},
	"os/signal": {"Notify": true, "Ignore": true},
	"log":       {"SetOutput": true, "SetFlags": true, "SetPrefix": true},
	"log/slog":  {"SetDefault": true},
	"syscall":   {"Setrlimit": true, "Umask": true},
}

// TestOnlyMainPackagesSetProcessSettings: no library package of the
// module (outside procmem, whose job it is) sets the collector's pace,
// the memory limit, the environment, signal handling or the default
// logger; main packages decide (cmd/pi-history, the benches). Tests may.
func TestOnlyMainPackagesSetProcessSettings(t *testing.T) {
	testutil.ProductionGoFiles(t, func(rel string, src []byte) {
		if path.Dir(rel) == "internal/procmem" {
			return
		}
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", rel, err)
		}
		if f.Name.Name == "main" {
			return
		}
		names := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && processWide[names[x.Name]][sel.Sel.Name] {
				t.Errorf("%s: library package %s calls %s.%s, a process-wide setting: decide it in main (see package procmem)", rel, f.Name.Name, x.Name, sel.Sel.Name)
			}
			return true
		})
	})
}
