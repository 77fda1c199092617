package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-history/pi-history/index"
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
	var files []string
	// Session ids hold words whose trigrams no other session has: an index
	// block that kept another session's entries where a killed import had
	// put them misses this session's tokens (tokens that differed in
	// digits only passed such stale blocks).
	words := []string{"quartz", "jovial", "zephyr", "fjord", "wombat", "glyph", "vortex", "kumquat", "sphinx", "blazer", "nymph", "oxbow"}
	sessions := make([]string, len(words))
	lens := make([]int, len(words))
	for i := 0; i < 12; i++ {
		n := 300 + i*40
		name := fmt.Sprintf("--p%d--/s%02d.jsonl", i%3, i)
		sessions[i], lens[i] = fmt.Sprintf("s%02d-%s", i, words[i]), n
		testutil.WriteJournal(t, src, name, testutil.GenOptions{
			Session: sessions[i], Entries: n, Seed: uint64(i + 1), BranchRate: 0.05, Compaction: 0.01, Tokens: true})
		files = append(files, filepath.Join(src, name))
		want += n
	}
	data := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	env := os.Environ()
	for round := 0; round < 10; round++ {
		// An import writes the store without a log and shows the indexer
		// only what is flushed. Flushes every 32 KiB make kills land
		// between them; flushes every 8 MiB (more than all the files)
		// leave the whole import in memory, where an index that saw it
		// would outlive it.
		flush := []string{"PI_HISTORY_FLUSH_KB=32", "PI_HISTORY_FLUSH_KB=8192"}[round%2]
		// The files in another order each time: seqs a killed import lost
		// go to other entries next time, so an index that had seen them
		// would be caught holding the wrong texts.
		r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		cmd := exec.Command(bin, append([]string{"import", "--data", data}, files...)...)
		cmd.Env = append(env, flush)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The index holds nothing the store lost: its mark is not past
		// the store's last entry (opening would move it back, and say so).
		var log bytes.Buffer
		svc, err := service.Open(service.Options{DataDir: data, Log: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatalf("after kill %d: %v", round, err)
		}
		svc.Close()
		if strings.Contains(log.String(), index.PastStoreWarning) {
			t.Fatalf("after kill %d the index was marked past the store's last entry: it indexed entries the store lost\n%s", round, log.String())
		}
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
	for i, sid := range sessions {
		for k := i % 7; k < lens[i]; k += 7 {
			needle := fmt.Sprintf(" tok-%s-%d ", sid, k)
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
