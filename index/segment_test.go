package index

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// writeKeys writes a file of n keys (every third uint32 from 5, so that
// keys between and around them are absent) and opens it.
func writeKeys(t *testing.T, n int) (*postingFile, []uint32) {
	t.Helper()
	keys := evenKeys(n)
	return writeTheseKeys(t, keys), keys
}

// evenKeys returns n keys, every third uint32 from 5.
func evenKeys(n int) []uint32 {
	keys := make([]uint32, n)
	for k := range keys {
		keys[k] = uint32(5 + 3*k)
	}
	return keys
}

// writeTheseKeys writes a file of keys (ascending, distinct) and opens
// it.
func writeTheseKeys(t *testing.T, keys []uint32) *postingFile {
	t.Helper()
	m := map[uint32][]uint16{}
	for k, key := range keys {
		m[key] = []uint16{uint16(k % 64)}
	}
	l := listsOf(m)
	path, err := l.writeTo(t.TempDir(), 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	f, err := openFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.close() })
	return f
}

// TestLookupsThroughPageKeysMatchBisectingTheDirectory: for files of one
// directory page, a page and one key, and many pages, with keys evenly
// spaced, clustered (as trigrams of text are) or spread at random, search
// answers every key, every absent key between, below and above them
// exactly as bisecting the whole directory does, and through the page
// keys.
func TestLookupsThroughPageKeysMatchBisectingTheDirectory(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	distinct := func(n int, pick func() uint32) []uint32 {
		seen := map[uint32]bool{}
		for len(seen) < n {
			seen[pick()] = true
		}
		keys := make([]uint32, 0, n)
		for k := range seen {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	var files [][]uint32
	for _, n := range []int{1, 2, dirPage - 1, dirPage, dirPage + 1, 5*dirPage + 17, 12 * dirPage} {
		files = append(files, evenKeys(n))
		files = append(files, distinct(n, func() uint32 { return rng.Uint32N(1 << 24) }))
		files = append(files, distinct(n, func() uint32 {
			// Runs of near keys far apart, and a few outliers.
			if rng.IntN(50) == 0 {
				return rng.Uint32N(lastKey | 0xff) // up to the last-byte keys
			}
			return uint32(rng.IntN(8))<<20 | rng.Uint32N(uint32(n)+8)
		}))
	}
	for _, keys := range files {
		n := len(keys)
		f := writeTheseKeys(t, keys)
		probes := []uint32{0, 4, keys[n-1] + 1, ^uint32(0), 1 << 23, rng.Uint32()}
		for _, k := range keys {
			probes = append(probes, k, k+1, k-1)
		}
		for _, k := range probes {
			want, err := f.searchWhole(k)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := f.searchPage(k)
			if err != nil || !ok {
				t.Fatalf("%d keys: searchPage(%d) gave no answer (ok %v, err %v) on a sound file", n, k, ok, err)
			}
			if got != want {
				t.Fatalf("%d keys: searchPage(%d) = %d, bisecting the directory = %d", n, k, got, want)
			}
		}
	}
}

// TestADamagedDirectoryPageIsAnErrorAndAWrongPageKeyNoAnswer: a directory
// page whose bytes changed fails its checksum when a lookup reaches it;
// page keys that are wrong (read from a page damaged later, say) send a
// lookup to the wrong page, whose checked entries then do not prove an
// answer: search still answers by bisecting, never from the wrong page.
func TestADamagedDirectoryPageIsAnErrorAndAWrongPageKeyNoAnswer(t *testing.T) {
	f, keys := writeKeys(t, 4*dirPage)
	f.searchPage(0) // makes pageKeys (pageKey reads each below before it is set wrong)

	r := rand.New(rand.NewPCG(7, 9))
	for range 2000 {
		p := r.IntN(len(f.pageKeys))
		saved := f.pageKey(p)
		wrong := []uint32{0, r.Uint32(), keys[r.IntN(len(keys))]}[r.IntN(3)]
		f.pageKeys[p].Store(1<<32 | uint64(wrong))
		for _, k := range []uint32{keys[r.IntN(len(keys))], keys[r.IntN(len(keys))] + 1, r.Uint32(), saved, saved - 1} {
			want, _ := f.searchWhole(k)
			got, err := f.search(k)
			if err != nil || got != want {
				t.Fatalf("page key %d set to %d: search(%d) = %d, %v; want %d", p, wrong, k, got, err, want)
			}
		}
		f.pageKeys[p].Store(1<<32 | uint64(saved))
	}

	// The bytes of page 2 change on disk; a file opened after reads them
	// (f, mapped before, is not used again: the write truncates first).
	b, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	at := headerSize + (2*dirPage+5)*dirEntrySize
	binary.LittleEndian.PutUint32(b[at+4:], binary.LittleEndian.Uint32(b[at+4:])+1) // a count, not the key
	if err := os.WriteFile(f.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := openFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	if _, err := g.search(keys[2*dirPage+5]); err == nil {
		t.Fatal("a lookup through a damaged directory page gave no error")
	}
	if i, err := g.search(keys[dirPage]); err != nil || i != dirPage {
		t.Fatalf("a lookup in a sound page of a file with a damaged one: %d, %v; want %d", i, err, dirPage)
	}
}

// TestADamagedContainerFailsEveryReadAndASoundOneIsCheckedOnce: a
// container whose bytes changed fails its checksum whenever it is read
// (a failed check is not remembered as a pass); a sound one is checked
// the first time and passed after.
func TestADamagedContainerFailsEveryReadAndASoundOneIsCheckedOnce(t *testing.T) {
	f, keys := writeKeys(t, 3*dirPage)
	path := f.path
	f.close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := openFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damaged := dirPage + 7
	e := g.dir[damaged*dirEntrySize:]
	at := len(b) - trailerSize - len(g.bodies) + int(binary.LittleEndian.Uint32(e[8:]))
	g.close()
	b[at] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if g, err = openFile(path); err != nil {
		t.Fatal(err)
	}
	defer g.close()
	for range 2 {
		if _, _, err := g.find(keys[damaged]); err == nil || !strings.Contains(err.Error(), "fails its checksum") {
			t.Fatalf("find(%d) in a damaged container: %v; want a checksum failure", keys[damaged], err)
		}
	}
	sound := dirPage + 8
	for range 2 {
		if c, ok, err := g.find(keys[sound]); err != nil || !ok || c.count != 1 {
			t.Fatalf("find(%d) in a sound container: %+v, %v, %v", keys[sound], c, ok, err)
		}
	}
	if !g.sound.has(sound) || g.sound.has(damaged) {
		t.Fatal("the sound container is not marked checked, or the damaged one is")
	}
}

// BenchmarkDirectoryLookups looks keys up in a file's directory as a
// query resolves a needle's trigrams: three in four present, the rest
// random. The file is PI_HISTORY_BENCH_POSTINGS when set (a segment of a
// real index, say), else one of a million random 24-bit keys.
// (go test -run X -bench DirectoryLookups -benchmem ./index/)
func BenchmarkDirectoryLookups(b *testing.B) {
	var f *postingFile
	if path := os.Getenv("PI_HISTORY_BENCH_POSTINGS"); path != "" {
		var err error
		if f, err = openFile(path); err != nil {
			b.Fatal(err)
		}
		defer f.close()
	} else {
		rng := rand.New(rand.NewPCG(3, 4))
		m := map[uint32][]uint16{}
		for len(m) < 1_000_000 {
			m[rng.Uint32N(1<<24)] = []uint16{uint16(rng.IntN(64))}
		}
		path, err := listsOf(m).writeTo(b.TempDir(), 1, 64)
		if err != nil {
			b.Fatal(err)
		}
		if f, err = openFile(path); err != nil {
			b.Fatal(err)
		}
		defer f.close()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	probes := make([]uint32, 1<<16)
	for i := range probes {
		if i%4 == 3 {
			probes[i] = rng.Uint32N(1 << 24)
		} else {
			probes[i] = f.keyAt(rng.IntN(f.keys))
		}
	}
	for _, k := range probes { // check every page once, untimed
		if _, err := f.search(k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.search(probes[i%len(probes)]); err != nil {
			b.Fatal(err)
		}
	}
	reportMemory(b)
}
