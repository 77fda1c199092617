package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// plantSearchData writes into st what builds before decision 341 kept
// beside each entry: a sketch of size bytes per seq in 1..last and a
// filter per chunk of 1,024 seqs, under their raw tags, and the sketch
// mark; it removes the format marker, as such a build never wrote one,
// and flushes, so that the keys sit in tables as they would.
func plantSearchData(t *testing.T, st *Store, last uint64, size int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(last), 7))
	b := st.db.NewBatch()
	for seq := uint64(1); seq <= last; seq++ {
		sk := make([]byte, size)
		for i := range sk {
			sk[i] = byte(r.Uint32()) // incompressible, as sketches nearly are
		}
		if err := b.Set(seqKey('K', seq), sk, nil); err != nil {
			t.Fatal(err)
		}
	}
	for c := uint64(0); c <= last/1024; c++ {
		if err := b.Set(seqKey('B', c), bytes.Repeat([]byte{byte(c)}, 4096), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set([]byte("msketch_from"), binary.BigEndian.AppendUint64(nil, 1), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete([]byte("mformat"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := st.db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// keysUnder counts st's keys whose first byte is tag.
func keysUnder(t *testing.T, st *Store, tag byte) int {
	t.Helper()
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// tableBytes is the size of the tables in the store directory dir.
func tableBytes(t *testing.T, dir string) int64 {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".sst") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// TestOpenRemovesTheSearchDataOfEarlierVersions: a store holding the
// sketches, filters and sketch mark of an earlier build loses them on the
// first open that may write (a read-only one leaves them), shrinks on
// disk, keeps every entry, and records that it is done, so that a later
// open does not look again.
func TestOpenRemovesTheSearchDataOfEarlierVersions(t *testing.T) {
	texts := make([]string, 3000)
	for i := range texts {
		if i%5 != 0 {
			texts[i] = fmt.Sprintf("text %d of an entry that an earlier build sketched", i+1)
		}
	}
	st := pushTexts(t, texts)
	last := st.LastSeq()
	plantSearchData(t, st, last, 2048)
	ro := reopenReadOnly(t, st)
	dir := ro.Dir()
	before := tableBytes(t, dir)
	if n := keysUnder(t, ro, 'K'); n != int(last) {
		t.Errorf("a read-only open left %d sketches of %d", n, last)
	}
	ro.Close()

	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, tag := range []byte{'K', 'B'} {
		if n := keysUnder(t, st, tag); n != 0 {
			t.Errorf("after the open, %d keys remain under %q", n, tag)
		}
	}
	if _, err := st.getMeta("sketch_from"); err == nil {
		t.Error("after the open, the sketch mark remains")
	}
	if v, err := st.getMeta(formatKey); err != nil || binary.BigEndian.Uint64(v) != formatNoSearchData {
		t.Fatalf("format marker = %x, %v; want %d", v, err, formatNoSearchData)
	}
	for i, want := range texts {
		seq := uint64(i + 1)
		got, err := st.Text(seq)
		if err != nil || got != want {
			t.Fatalf("seq %d reads %q (%v), want %q", seq, got, err, want)
		}
		if m, err := st.Meta(seq); err != nil || m.Seq != seq || m.Searchable() != (want != "") {
			t.Fatalf("seq %d's record = %+v, %v", seq, m, err)
		}
	}
	if metas, err := st.SessionMetas("s"); err != nil || len(metas) != len(texts) {
		t.Fatalf("session s lists %d entries (%v), want %d", len(metas), err, len(texts))
	}
	// The sketches took ~6 MB of tables; Pebble drops those the deletions
	// cover in the background.
	deadline := time.Now().Add(10 * time.Second)
	for tableBytes(t, dir) > before-4<<20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("before %d after %d", before, tableBytes(t, dir))
	if after := tableBytes(t, dir); after > before-4<<20 {
		t.Errorf("the store's tables take %d bytes after the open, %d before: the sketches' space was not given back", after, before)
	}

	// Done once: keys under the old tags written now (by nothing but this
	// test) are not looked for again.
	if err := st.db.Set(seqKey('K', 1), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st = reopenStore(t, st)
	if n := keysUnder(t, st, 'K'); n != 1 {
		t.Errorf("a second open removed the old keys again (%d left of 1)", n)
	}
	if got, err := st.Text(2); err != nil || got != texts[1] {
		t.Fatalf("after a second open, seq 2 reads %q (%v)", got, err)
	}
}

// TestANewStoreGetsOnlyTheFormatMarker: a store created empty records its
// format and holds nothing else.
func TestANewStoreGetsOnlyTheFormatMarker(t *testing.T) {
	st := openTemp(t)
	it, err := st.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []string
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, fmt.Sprintf("%q=%x", it.Key(), it.Value()))
	}
	if want := fmt.Sprintf("%q=%x", "m"+formatKey, binary.BigEndian.AppendUint64(nil, formatTextFile)); fmt.Sprint(keys) != "["+want+"]" {
		t.Errorf("a new store holds %v, want [%s]", keys, want)
	}
}

// TestUpkeepNamesWhatAnOpenForWritingWouldDo: a store fresh from its
// writes has nothing due; one holding an earlier build's search data, or
// entries removed that the index has not forgotten, says so until an open
// that may write, or the index, has done it.
func TestUpkeepNamesWhatAnOpenForWritingWouldDo(t *testing.T) {
	due := func(st *Store, want string) {
		t.Helper()
		why, err := st.Upkeep()
		if err != nil || !strings.Contains(why, want) || (want == "") != (why == "") {
			t.Fatalf("Upkeep() = %q, %v; want %q", why, err, want)
		}
	}
	dir := filepath.Join(t.TempDir(), "store")
	st := openBulk(t, dir, 1<<30)
	due(st, "")
	v1 := bulkBatch("/j/a.jsonl", "a", 0, 10, 100, true)
	v1.Header.Version = 1
	if _, err := st.Apply(v1); err != nil {
		t.Fatal(err)
	}
	due(st, "")
	rewrite := bulkBatch("/j/a.jsonl", "a", 100, 5, 50, true)
	rewrite.Replace = true
	if _, err := st.Apply(rewrite); err != nil {
		t.Fatal(err)
	}
	due(st, "removed entries for the index to forget")
	seqs, err := st.Deleted(100)
	if err != nil || st.ClearDeleted(seqs) != nil {
		t.Fatal(err)
	}
	due(st, "")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = OpenWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plantSearchData(t, st, st.LastSeq(), 8)
	due(st, "the search data of an earlier version")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = OpenWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	due(st, "")
}

// TestUpkeepNamesWritesLeftInPebblesLog: a store a process left without
// closing it (killed) holds writes in Pebble's log that an open for
// reading only reads again every time; Upkeep says so, when they fill more
// than the first memtable, until a store opened for writing has closed
// (and flushed) them.
func TestUpkeepNamesWritesLeftInPebblesLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(bulkBatch("/j/a.jsonl", "a", 0, 2000, 100, true)); err != nil {
		t.Fatal(err)
	}
	reading := func(want string) {
		t.Helper()
		ro, err := OpenWith(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if got := ro.LastSeq(); got != 2000 {
			t.Fatalf("opened for reading only, the store holds %d entries; want 2000", got)
		}
		if why, err := ro.Upkeep(); err != nil || why != want {
			t.Fatalf("Upkeep() = %q, %v; want %q", why, err, want)
		}
	}
	reading("writes in Pebble's log to flush into its tables") // st still open: as if killed
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	reading("")
}
