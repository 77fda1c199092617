package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pi-history/pi-history/journal"
)

// crashPoint is the state of a store at a power cut: the file system as
// it would be found afterwards, and what had been acknowledged and
// published before the cut.
type crashPoint struct {
	fs        *vfs.MemFS
	acked     []ackedBatch
	published uint64 // LastSeq before the cut: what readers (the index) could see
}

// ackedBatch is a write whose call returned without error.
type ackedBatch struct {
	path    string
	offset  int64
	session string
	entries []*journal.Entry
}

// crashRun writes with write(i) for the i-th batch in one goroutine
// while the test cuts the power three times, after 20, 40 and 60 batches
// were acknowledged (crash clones of the file system keeping unsynced of
// 100 unsynced blocks, taken while the writer goes on); it returns the
// cuts. Each records only what was acknowledged before its clone began,
// and LastSeq as of then.
func crashRun(t *testing.T, mem *vfs.MemFS, st *Store, unsynced int, write func(i int) (ackedBatch, error)) []crashPoint {
	t.Helper()
	var (
		mu    sync.Mutex
		acked []ackedBatch
		stop  = make(chan struct{})
		done  = make(chan error, 1)
	)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			b, err := write(i)
			if err != nil {
				done <- fmt.Errorf("write %d: %w", i, err)
				return
			}
			mu.Lock()
			acked = append(acked, b)
			mu.Unlock()
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(unsynced), 7))
	var cuts []crashPoint
	for k := 1; k <= 3; k++ {
		for count() < k*20 {
			select {
			case err := <-done:
				t.Fatal(err)
			case <-time.After(time.Millisecond):
			}
		}
		mu.Lock()
		cp := crashPoint{acked: append([]ackedBatch(nil), acked...), published: st.LastSeq()}
		mu.Unlock()
		cp.fs = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(rng.Uint64(), 1))})
		cuts = append(cuts, cp)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return cuts
}

// checkAfterCut opens the store as a power cut left it and checks that
// every acknowledged entry is there with its bytes, each file's read
// position is at least where its last acknowledged batch ended, nothing
// published is missing, and no entry is stored twice.
func checkAfterCut(t *testing.T, cp crashPoint, bulk bool) {
	t.Helper()
	st, err := OpenWith("/data/store", Options{FS: cp.fs, Bulk: bulk})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	defer st.Close()
	if st.LastSeq() < cp.published {
		t.Errorf("after the cut LastSeq = %d, under the %d published before it: the index could hold entries the store lost", st.LastSeq(), cp.published)
	}
	for q := uint64(1); q <= cp.published; q++ {
		if _, err := st.Meta(q); err != nil {
			t.Errorf("published entry seq %d lost in the cut: %v", q, err)
		}
	}
	// Every entry the store kept has its text, wherever it is stored.
	for q := uint64(1); q <= st.LastSeq(); q++ {
		if _, err := st.Text(q); err != nil {
			t.Errorf("entry seq %d lost its text in the cut: %v", q, err)
		}
	}
	offsets := map[string]int64{}
	for _, b := range cp.acked {
		for _, e := range b.entries {
			seq, err := st.Lookup(b.session, e.ID)
			if err != nil {
				t.Errorf("acknowledged entry %s/%s lost in the cut: %v", b.session, e.ID, err)
				continue
			}
			if raw, err := st.Raw(seq); err != nil || !bytes.Equal(raw, e.Raw) {
				t.Errorf("acknowledged entry %s/%s reads back %q, %v", b.session, e.ID, raw, err)
			}
			if text, err := st.Text(seq); err != nil || text != e.Text {
				t.Errorf("acknowledged entry %s/%s has the text %.40q, %v; want %.40q", b.session, e.ID, text, err, e.Text)
			}
		}
		if b.path != "" {
			offsets[b.path] = b.offset
		}
	}
	for path, off := range offsets {
		fs, err := st.FileState(path)
		if err != nil || fs.Offset < off {
			t.Errorf("file %s after the cut: %+v, %v; want its read position at %d or later", path, fs, err, off)
		}
	}
	seen := map[string]bool{}
	err = st.ScanMetas(1, st.LastSeq(), func(m *Meta) bool {
		k := m.Session + "/" + m.ID
		if seen[k] {
			t.Errorf("entry %s stored twice after the cut", k)
		}
		seen[k] = true
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	// The store goes on where the cut left it: new entries take the seqs
	// that follow.
	last := st.LastSeq()
	res, err := st.Push("after-cut", &journal.Header{ID: "after-cut", Version: 3, Raw: []byte(`{"type":"session","id":"after-cut"}`)},
		bulkBatch("", "after-cut", 0, 3, 0, false).Entries)
	if err != nil || res.Added != 3 {
		t.Fatalf("writing after the cut: %+v, %v", res, err)
	}
	if err := st.Persist(); err != nil {
		t.Fatal(err)
	}
	if got := st.LastSeq(); got != last+3 {
		t.Errorf("after writing 3 entries past the cut LastSeq = %d; want %d", got, last+3)
	}
}

// TestAcknowledgedWritesSurvivePowerLoss cuts the power (Pebble's
// crashable in-memory file system, dropping what was not synced, all of
// it or some blocks at random) while journal batches (the live watcher's
// writes) or pushes (the API's) are being stored: every write that
// returned is found whole after the cut, with its file position, and
// every entry readers could see before the cut is still there, so the
// index, which follows the store by seq, cannot be ahead of it.
func TestAcknowledgedWritesSurvivePowerLoss(t *testing.T) {
	files := []string{"/j/a.jsonl", "/j/b.jsonl", "/j/c.jsonl"}
	writers := map[string]func(st *Store) func(i int) (ackedBatch, error){
		"journal batches": func(st *Store) func(i int) (ackedBatch, error) {
			return func(i int) (ackedBatch, error) {
				f, sid := files[i%3], fmt.Sprintf("s%d", i%3)
				round := i / 3
				fb := longTextBatch(f, sid, round*4, 4, int64(round+1)*1000, round == 0)
				res, err := st.Apply(fb)
				if err == nil && res.Added != 4 {
					err = fmt.Errorf("batch %d added %d entries; want 4", i, res.Added)
				}
				return ackedBatch{path: f, offset: fb.State.Offset, session: sid, entries: fb.Entries}, err
			}
		},
		"pushes": func(st *Store) func(i int) (ackedBatch, error) {
			return func(i int) (ackedBatch, error) {
				sid := fmt.Sprintf("p%d", i%3)
				h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
				es := longTextBatch("", sid, (i/3)*4, 4, 0, false).Entries
				res, err := st.Push(sid, h, es)
				if err == nil && res.Added != 4 {
					err = fmt.Errorf("push %d added %d entries; want 4", i, res.Added)
				}
				return ackedBatch{session: sid, entries: es}, err
			}
		},
	}
	for name, writer := range writers {
		for _, unsynced := range []int{0, 50} {
			t.Run(fmt.Sprintf("%s, %d%% of unsynced blocks kept", name, unsynced), func(t *testing.T) {
				mem := vfs.NewCrashableMem()
				st, err := OpenWith("/data/store", Options{FS: mem})
				if err != nil {
					t.Fatal(err)
				}
				cuts := crashRun(t, mem, st, unsynced, writer(st))
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				for i, cp := range cuts {
					if len(cp.acked) == 0 {
						t.Fatalf("cut %d came before any write was acknowledged", i)
					}
					checkAfterCut(t, cp, false)
				}
			})
		}
	}
}

// TestBulkStorePublishesOnlyWhatSurvivesPowerLoss: a bulk store (an
// import's, without a log, flushed every FlushBytes) is cut while it is
// written: whatever it had published to readers before the cut survives
// it (so the index never holds what the store lost), and once Persist has
// returned (the import's summary is printed) every batch does.
func TestBulkStorePublishesOnlyWhatSurvivesPowerLoss(t *testing.T) {
	for _, unsynced := range []int{0, 50} {
		t.Run(fmt.Sprintf("%d%% of unsynced blocks kept", unsynced), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			st, err := OpenWith("/data/store", Options{FS: mem, Bulk: true, FlushBytes: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			var all []ackedBatch
			cuts := crashRun(t, mem, st, unsynced, func(i int) (ackedBatch, error) {
				f, sid := fmt.Sprintf("/j/%d.jsonl", i/4), fmt.Sprintf("b%d", i/4)
				fb := longTextBatch(f, sid, (i%4)*8, 8, int64(i%4+1)*1000, i%4 == 0)
				_, err := st.Apply(fb)
				b := ackedBatch{path: f, offset: fb.State.Offset, session: sid, entries: fb.Entries}
				all = append(all, b)
				return b, err
			})
			for i := range cuts {
				// Without a log, a batch is durable once flushed: only
				// what was published must survive these cuts.
				if cuts[i].published == 0 {
					t.Logf("cut %d: nothing flushed yet", i)
				}
				cuts[i].acked = nil
				checkAfterCut(t, cuts[i], true)
			}
			if err := st.Persist(); err != nil {
				t.Fatal(err)
			}
			persisted := crashPoint{fs: mem.CrashClone(vfs.CrashCloneCfg{}), acked: all, published: st.LastSeq()}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			checkAfterCut(t, persisted, true)
		})
	}
}
