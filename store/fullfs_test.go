package store

import (
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// smallFSEnv names a directory on a small file system of its own (a
// 200 MB tmpfs, say) for TestARealFullDiskFailsTheWriteNotTheProcess.
const smallFSEnv = "PI_HISTORY_TEST_SMALL_FS"

// TestARealFullDiskFailsTheWriteNotTheProcess fills a real file system
// (named by $PI_HISTORY_TEST_SMALL_FS; skipped without it) through a store
// without its free-space reserve, so that Pebble's log write meets ENOSPC:
// the write fails (it used to end the process with "pebble: fatal commit
// error: ... no space left on device"), reads go on, Close returns, and
// once space is freed the store opens again with every acknowledged entry.
func TestARealFullDiskFailsTheWriteNotTheProcess(t *testing.T) {
	dir := os.Getenv(smallFSEnv)
	if dir == "" {
		t.Skipf("set %s to a directory on a small file system of its own to run this", smallFSEnv)
	}
	dir, err := os.MkdirTemp(dir, "fullfs-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Leave ~48 MiB free: a few seconds of writes.
	du, err := vfs.Default.GetDiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if du.AvailBytes > 48<<20 {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 1<<20)
		for n := du.AvailBytes - 48<<20; n >= 1<<20; n -= 1 << 20 {
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	path := filepath.Join(dir, "store")
	st, err := OpenWith(path, Options{ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 32<<10)
	acked := 0
	for i := 0; ; i++ {
		fb := bulkBatch("/j/a.jsonl", "a", i*4, 4, int64(i+1)*100, i == 0)
		for _, e := range fb.Entries {
			for k := range b {
				b[k] = byte(r.Uint32())
			}
			big := hex.EncodeToString(b) // does not compress
			e.Text += big
			e.Raw = append(e.Raw[:len(e.Raw)-2], []byte(big+`"}}`)...)
		}
		_, err := st.Apply(fb)
		if err != nil {
			if !errors.Is(err, ErrWritesStopped) {
				t.Fatalf("the write that filled the disk: %v; want ErrWritesStopped", err)
			}
			t.Logf("batch %d: %v", i, err)
			break
		}
		acked++
	}
	if _, err := st.Raw(1); err != nil {
		t.Errorf("reading on the full disk: %v", err)
	}
	t.Logf("close on the full disk: %v", st.Close())
	os.Remove(filler)
	st, err = OpenWith(path, Options{})
	if err != nil {
		t.Fatalf("opening the store again once space is freed: %v", err)
	}
	defer st.Close()
	for i := range acked * 4 {
		if _, err := st.Lookup("a", bulkBatch("", "a", i, 1, 0, false).Entries[0].ID); err != nil {
			t.Fatalf("acknowledged entry %d of %d lost: %v", i, acked*4, err)
		}
	}
}
