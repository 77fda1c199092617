package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pi-history/pi-history/internal/testutil"
)

// TestAFailedTextWriteRefusesTheWriteAndLosesNothing: when the text file
// cannot be written, the batch that needed it is refused (ErrWritesStopped,
// nothing of it stored), what was stored before reads back whole, and once
// the disk takes writes again the same batch is stored with its texts
// (the fault clearing with it), after a reopen too.
func TestAFailedTextWriteRefusesTheWriteAndLosesNothing(t *testing.T) {
	fs := &faultFS{ShortFS: testutil.ShortFS{FS: vfs.Default}}
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{FS: fs, ProbeEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	first := longTextBatch("/j/a.jsonl", "a", 0, 6, 100, true)
	if _, err := st.Apply(first); err != nil {
		t.Fatal(err)
	}
	fs.failWrites.Store(true)
	second := longTextBatch("/j/a.jsonl", "a", 6, 6, 200, false)
	if _, err := st.Apply(second); !errors.Is(err, ErrWritesStopped) || !strings.Contains(err.Error(), "texts.pack") {
		t.Fatalf("a batch whose texts cannot be written: %v; want ErrWritesStopped naming the text file", err)
	}
	if got := st.LastSeq(); got != 6 {
		t.Errorf("LastSeq = %d after the refused batch; want 6", got)
	}
	check := func(st *Store, batches ...*FileBatch) {
		t.Helper()
		for _, b := range batches {
			for _, e := range b.Entries {
				seq, err := st.Lookup("a", e.ID)
				if err != nil {
					t.Fatalf("entry %s: %v", e.ID, err)
				}
				if text, err := st.Text(seq); err != nil || text != e.Text {
					t.Fatalf("entry %s reads %.40q, %v; want %.40q", e.ID, text, err, e.Text)
				}
			}
		}
	}
	check(st, first)
	fs.failWrites.Store(false)
	if _, err := st.Apply(second); err != nil {
		t.Fatalf("the refused batch once the disk takes writes: %v", err)
	}
	if fl := st.Faults(); len(fl) != 0 {
		t.Errorf("faults once a write went through again: %+v; want none", fl)
	}
	check(st, first, second)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenWith(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check(st, first, second)
}

// TestADamagedTextFileIsAnErrorNotAText: a record whose bytes changed, or
// that the file no longer holds, is reported as damage when read.
func TestADamagedTextFileIsAnErrorNotAText(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(path string) error
		want   string
	}{
		{"a byte flipped", func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x40
			return os.WriteFile(path, b, 0o600)
		}, "fails its checksum"},
		{"cut short", func(path string) error { return os.Truncate(path, 10) }, "past its end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			st, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			b := textBatch("/j/a.jsonl", "a", []string{strings.Repeat("one long text ", 100)}, true)
			if _, err := st.Apply(b); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if err := c.damage(filepath.Join(dir, textLogName)); err != nil {
				t.Fatal(err)
			}
			if st, err = Open(dir); err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if text, err := st.Text(1); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "damaged") {
				t.Errorf("Text = %.20q, %v; want an error saying the store is damaged (%s)", text, err, c.want)
			}
			r := st.NewSharedReader()
			defer r.Close()
			var ref TextRef
			if err := st.ScanTextRefs([]SeqRange{{Lo: 1, Hi: 1}}, false, func(_ uint64, _ []byte, rf *TextRef) (bool, error) {
				ref = *rf
				return false, nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Text(&ref); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("SharedReader.Text: %v; want %q", err, c.want)
			}
		})
	}
}

// TestAFailedTextSyncStopsWritesUntilARestart: a sync of the text file
// that fails may have lost texts that the page cache still shows, so a
// bulk store's flush refuses to go on (Persist fails, nothing more is
// published), writes stop until a restart even once syncs work again, and
// the store opened again reads every entry it holds whole.
func TestAFailedTextSyncStopsWritesUntilARestart(t *testing.T) {
	fs := &faultFS{ShortFS: testutil.ShortFS{FS: vfs.Default}}
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{FS: fs, Bulk: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(longTextBatch("/j/a.jsonl", "a", 0, 6, 100, true)); err != nil {
		t.Fatal(err)
	}
	if err := st.Persist(); err != nil {
		t.Fatal(err)
	}
	published := st.LastSeq()
	if _, err := st.Apply(longTextBatch("/j/a.jsonl", "a", 6, 6, 200, false)); err != nil {
		t.Fatal(err)
	}
	fs.failTextSyncs.Store(true)
	if err := st.Persist(); err == nil || !strings.Contains(err.Error(), textLogName) {
		t.Fatalf("Persist with the text file failing its sync: %v; want an error naming it", err)
	}
	if got := st.LastSeq(); got != published {
		t.Errorf("LastSeq = %d after the failed flush; want %d (nothing more published)", got, published)
	}
	if fl := st.Faults(); len(fl) == 0 || !fl[0].Restart {
		t.Errorf("faults after the failed sync: %+v; want a writes fault that needs a restart", fl)
	}
	fs.failTextSyncs.Store(false)
	if _, err := st.Apply(longTextBatch("/j/a.jsonl", "a", 12, 6, 300, false)); !errors.Is(err, ErrWritesStopped) {
		t.Errorf("a write after the failed sync, syncs working again: %v; want ErrWritesStopped until a restart", err)
	}
	st.Close()
	if st, err = OpenWith(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.LastSeq() < published {
		t.Errorf("after a restart LastSeq = %d; want at least the %d persisted", st.LastSeq(), published)
	}
	for q := uint64(1); q <= st.LastSeq(); q++ {
		if _, err := st.Text(q); err != nil {
			t.Errorf("entry seq %d after a restart: %v", q, err)
		}
	}
}

// TestATextFileCutShortWhileOpenIsAnErrorNotACrash: the text file is read
// where it is mapped; when another program cuts it short under an open
// store, reading a text that was in it is an error, as a positioned read's
// would be, and a text before the cut still reads whole.
func TestATextFileCutShortWhileOpenIsAnErrorNotACrash(t *testing.T) {
	st, dir := openFresh(t)
	// Texts that do not pack smaller, so that the last lies pages past
	// the end of the first.
	r := rand.New(rand.NewPCG(3, 5))
	var texts []string
	for range 9 {
		b := make([]byte, 6000)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		texts = append(texts, string(b))
	}
	if _, err := st.Apply(textBatch("/j/a.jsonl", "a", texts, true)); err != nil {
		t.Fatal(err)
	}
	if st.texts.mapped == nil {
		t.Skip("the text file is not mapped on this platform")
	}
	var cut int64
	if err := st.ScanTextRefs([]SeqRange{{Lo: 1, Hi: 1}}, false, func(_ uint64, _ []byte, ref *TextRef) (bool, error) {
		if ref == nil || !ref.inLog() {
			t.Fatal("the first text is not in the text file")
		}
		off, n := ref.logAt()
		cut = off + recordHeader + int64(n)
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, textLogName), cut); err != nil {
		t.Fatal(err)
	}
	if text, err := st.Text(1); err != nil || text != texts[0] {
		t.Fatalf("Text(1), before the cut = %.20q, %v; want it whole", text, err)
	}
	if text, err := st.Text(9); err == nil || !strings.Contains(err.Error(), "could not be read") {
		t.Fatalf("Text(9), past the cut = %.20q, %v; want an error saying it could not be read", text, err)
	}
}

// TestABulkStoreReadsItsTextFileWithoutMappingIt: an import's store reads
// every text once to index it; mapped, each page read would stay in the
// importing process's RSS to the end, so a bulk store reads positioned.
func TestABulkStoreReadsItsTextFileWithoutMappingIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := openBulk(t, dir, 0)
	if _, err := st.Apply(longTextBatch("/j/a.jsonl", "a", 0, 6, 100, true)); err != nil {
		t.Fatal(err)
	}
	if st.texts.mapped != nil {
		t.Error("a bulk store mapped its text file")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := Open(dir); err != nil {
		t.Fatal(err)
	} else {
		defer st.Close()
		if st.texts.mapped == nil && (runtime.GOOS == "linux" || runtime.GOOS == "darwin") {
			t.Error("a store that serves did not map its text file")
		}
		if _, err := st.Text(3); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTextsReadWhileTheMappedFileGrowsReadWhole: readers read every text
// (packed ones and ones stored as they are) while a writer appends past
// the mapping twenty times, so that the file is mapped again under them
// each time; every text reads whole throughout, and after.
func TestTextsReadWhileTheMappedFileGrowsReadWhole(t *testing.T) {
	st, _ := openFresh(t)
	want := map[uint64]string{}
	r := rand.New(rand.NewPCG(11, 13))
	apply := func(fb *FileBatch) {
		// Every fifth text does not pack smaller: it is stored as it is,
		// and read out of the mapping by a copy.
		for i, e := range fb.Entries {
			if i%5 == 1 {
				b := make([]byte, 1500)
				for k := range b {
					b[k] = byte('a' + r.IntN(26))
				}
				e.Text = string(b)
			}
		}
		base := st.LastSeq()
		if _, err := st.Apply(fb); err != nil {
			t.Fatal(err)
		}
		for i, e := range fb.Entries {
			want[base+uint64(i)+1] = e.Text
		}
	}
	apply(longTextBatch("/j/a.jsonl", "a", 0, 60, 100, true))
	l := st.texts
	if l.mapped == nil {
		t.Skip("the text file is not mapped on this platform")
	}
	// The mapping cut to the file's length: the next write maps it again.
	cut := func() int {
		l.fmu.Lock()
		defer l.fmu.Unlock()
		unmapText(l.mapped)
		l.mapped = mapText(l.f, l.size.Load())
		return len(l.mapped)
	}
	before := cut()

	texts := func(through uint64) map[uint64]string {
		m := map[uint64]string{}
		for seq := uint64(1); seq <= through; seq++ {
			m[seq] = want[seq]
		}
		return m
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func(known map[uint64]string) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for seq, w := range known {
					if got, err := st.Text(seq); err != nil || got != w {
						errs <- fmt.Errorf("Text(%d) = %.30q, %v; want %.30q", seq, got, err, w)
						return
					}
				}
			}
		}(texts(60))
	}
	for b := 1; b <= 20; b++ {
		if b > 1 {
			before = cut() // mapped again at every write
		}
		apply(longTextBatch("/j/a.jsonl", "a", 60*b, 60, int64(b+1)*100, false))
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l.fmu.RLock()
	after := len(l.mapped)
	l.fmu.RUnlock()
	if after <= before {
		t.Fatalf("the mapping is %d bytes after the writes, %d before: it was not mapped again", after, before)
	}
	for seq, w := range want {
		if got, err := st.Text(seq); err != nil || got != w {
			t.Fatalf("after the writes, Text(%d) = %.30q, %v; want %.30q", seq, got, err, w)
		}
	}
}

// openFresh opens a new store in a temporary directory, closed when the
// test ends.
func openFresh(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}
