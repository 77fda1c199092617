package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// TestKillDuringImportLosesNothing kills the importer with SIGKILL at random
// moments, many times, then lets it finish: every entry is stored exactly
// once and the index agrees with the store.
func TestKillDuringImportLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and imports repeatedly")
	}
	bin := testutil.BuildBinary(t)
	src := t.TempDir()
	want := 0
	for i := 0; i < 12; i++ {
		n := 300 + i*40
		testutil.WriteJournal(t, src, fmt.Sprintf("--p%d--/s%02d.jsonl", i%3, i), testutil.GenOptions{
			Session: fmt.Sprintf("sess-%02d", i), Entries: n, Seed: uint64(i + 1), BranchRate: 0.05, Compaction: 0.01, Tokens: true})
		want += n
	}
	data := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	// Small index batches: many of them, two at a time, so that kills land
	// while batches are applied out of order and marks move in batches of
	// their own.
	env := append(os.Environ(), "PI_HISTORY_INDEX_BATCH_KB=16")
	for round := 0; round < 10; round++ {
		cmd := exec.Command(bin, "import", "--data", data, src)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	final := exec.Command(bin, "import", "--json", "--data", data, src)
	final.Env = env
	out, err := final.Output()
	if err != nil {
		t.Fatalf("final import: %v", err)
	}
	var sum service.ImportSummary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("import --json printed %q: %v", out, err)
	}
	// Again: nothing new.
	again, err := exec.Command(bin, "import", "--json", "--data", data, src).Output()
	if err != nil || !strings.Contains(string(again), `"entries":0,`) {
		t.Errorf("re-import should add nothing: %s %v", again, err)
	}
	svc, err := service.Open(service.Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := svc.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := svc.Stats()
	if st.Entries != want || int(st.LastSeq) != want {
		t.Fatalf("stored %d entries with %d seqs; want %d each (no loss, no duplicates)", st.Entries, st.LastSeq, want)
	}
	eng := search.New(svc.Store, svc.Index)
	// Every unique token is found exactly once through the index.
	for i := 0; i < 12; i += 3 {
		for k := 0; k < 300; k += 37 {
			needle := fmt.Sprintf(" tok-sess-%02d-%d ", i, k)
			resp, err := eng.Search(context.Background(), &search.Request{Needle: needle, Scope: search.ScopeAll, Count: true})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Total == nil || *resp.Total != 1 || !strings.HasPrefix(resp.Stats.Plan, "index") {
				total := -1
				if resp.Total != nil {
					total = *resp.Total
				}
				t.Fatalf("needle %q: total %d (want 1), plan %q (want the index)", needle, total, resp.Stats.Plan)
			}
		}
	}
}
