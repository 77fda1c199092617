package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/store"
)

// powerCut is the store's file system as a power cut would leave it,
// with the index's mark and the store's published seq read just before.
type powerCut struct {
	fs        *vfs.MemFS
	indexed   uint64
	published uint64
}

// cutWhile takes a power cut of mem every few milliseconds until stop is
// closed (at most max), and returns them.
func cutWhile(svc *Service, mem *vfs.MemFS, stop <-chan struct{}, max int) <-chan []powerCut {
	out := make(chan []powerCut, 1)
	go func() {
		var cuts []powerCut
		defer func() { out <- cuts }()
		for len(cuts) < max {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			c := powerCut{indexed: svc.Index.IndexedThrough(), published: svc.Store.LastSeq()}
			c.fs = mem.CrashClone(vfs.CrashCloneCfg{})
			cuts = append(cuts, c)
		}
	}()
	return out
}

// journalLine is line i of session sid: a user message naming its marker.
func journalLine(sid string, i int) string {
	if i == 0 {
		return `{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"}`
	}
	parent := "null"
	if i > 1 {
		parent = fmt.Sprintf(`"%s-%d"`, sid, i-1)
	}
	return fmt.Sprintf(`{"type":"message","id":"%s-%d","parentId":%s,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":"marker %s-%d %s"}}`,
		sid, i, parent, sid, i, strings.Repeat("padding ", 10))
}

// appendJournal appends lines [from, to) of session sid to its journal.
func appendJournal(t *testing.T, path, sid string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := from; i < to; i++ {
		if _, err := f.WriteString(journalLine(sid, i) + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIngestSurvivesPowerLossWithTheIndexNeverAhead cuts the power
// (Pebble's crashable in-memory file system for the store; the index,
// on disk, keeps all it wrote, the worst case) while journals are read
// into a data directory, by an import (a bulk store, flushed every few
// KB) or by live reads (synced batches, as the watcher's):
//   - at every cut the store keeps every entry the index had reached, and
//     every entry it had published, so the index is never ahead of it;
//   - reading the journals again into the cut store stores every line
//     exactly once (what the cut lost is read again, nothing twice);
//   - a cut after the import returned keeps what its summary counted, and
//     the data directory opened again is healthy and imports nothing new.
func TestIngestSurvivesPowerLossWithTheIndexNeverAhead(t *testing.T) {
	const files, lines, rounds = 6, 61, 4 // lines per journal, header included
	for _, bulk := range []bool{true, false} {
		name := map[bool]string{true: "import", false: "live reads"}[bulk]
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			data, sessions := filepath.Join(root, "data"), filepath.Join(root, "sessions")
			var paths []string
			for f := range files {
				paths = append(paths, filepath.Join(sessions, "--w--", fmt.Sprintf("2026-01-01T10-00-0%d-000Z_s%d.jsonl", f, f)))
			}
			if err := os.MkdirAll(filepath.Dir(paths[0]), 0o755); err != nil {
				t.Fatal(err)
			}
			mem := vfs.NewCrashableMem()
			svc, err := Open(Options{DataDir: data, StoreFS: mem, Bulk: bulk, FlushBytes: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			cutsC := cutWhile(svc, mem, stop, 12)
			var sum ImportSummary
			if bulk {
				for f, p := range paths {
					appendJournal(t, p, fmt.Sprintf("s%d", f), 0, lines)
				}
				if sum, err = svc.Import(t.Context(), []string{sessions}, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				per := (lines + rounds - 1) / rounds
				for r := range rounds {
					for f, p := range paths {
						appendJournal(t, p, fmt.Sprintf("s%d", f), r*per, min((r+1)*per, lines))
					}
					s, err := svc.Import(t.Context(), []string{sessions}, nil)
					if err != nil {
						t.Fatal(err)
					}
					sum.Entries += s.Entries
				}
			}
			close(stop)
			cuts := <-cutsC
			final := powerCut{fs: mem.CrashClone(vfs.CrashCloneCfg{}), published: svc.Store.LastSeq()}
			if err := svc.Close(); err != nil {
				t.Fatal(err)
			}
			if want := files * (lines - 1); sum.Entries != want {
				t.Fatalf("the import counted %d entries; want %d", sum.Entries, want)
			}
			if len(cuts) == 0 {
				t.Fatal("no power cut was taken while the journals were read")
			}
			for i, c := range cuts {
				checkCut(t, i, c, data, paths, files*(lines-1))
			}

			// The cut after the import: what it counted is there, the
			// index (on disk, as the import left it) is not ahead, and
			// importing again adds nothing.
			svc, err = Open(Options{DataDir: data, StoreFS: final.fs})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			st, err := svc.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.Entries != sum.Entries || !st.IndexHealthy {
				t.Errorf("after a cut once the import returned: %d entries, index healthy %v; want the %d counted, healthy", st.Entries, st.IndexHealthy, sum.Entries)
			}
			again, err := svc.Import(context.Background(), []string{sessions}, nil)
			if err != nil || again.Entries != 0 {
				t.Errorf("importing again after the cut added %d entries (%v); want 0", again.Entries, err)
			}
		})
	}
}

// checkCut opens the store as cut c left it: it must hold every entry the
// index had reached and every one published; journals read again into it
// must leave every line stored exactly once.
func checkCut(t *testing.T, i int, c powerCut, data string, paths []string, want int) {
	t.Helper()
	st, err := store.OpenWith(filepath.Join(data, "store"), store.Options{FS: c.fs})
	if err != nil {
		t.Fatalf("cut %d: open: %v", i, err)
	}
	defer st.Close()
	if st.LastSeq() < c.indexed || st.LastSeq() < c.published {
		t.Errorf("cut %d: the store holds through seq %d, but the index had reached %d and %d was published: the index is ahead",
			i, st.LastSeq(), c.indexed, c.published)
	}
	for q := uint64(1); q <= c.published; q++ {
		if _, err := st.Meta(q); err != nil {
			t.Errorf("cut %d: published seq %d lost: %v", i, q, err)
			break
		}
	}
	t.Logf("cut %d: index at %d, %d published, %d in the store after the cut", i, c.indexed, c.published, st.LastSeq())
	serial := ingest.NewSerial(st)
	for _, p := range paths {
		if _, err := serial.File(p, nil); err != nil {
			t.Fatalf("cut %d: reading %s again: %v", i, p, err)
		}
	}
	seen := map[string]int{}
	var mu sync.Mutex
	if err := st.ScanMetas(1, st.LastSeq(), func(m *store.Meta) bool {
		mu.Lock()
		seen[m.Session+"/"+m.ID]++
		mu.Unlock()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != want {
		t.Errorf("cut %d: after reading the journals again %d distinct entries are stored; want %d", i, len(seen), want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("cut %d: entry %s stored %d times", i, k, n)
		}
	}
}
