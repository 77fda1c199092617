package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// small spans make a test store of a few thousand entries span many runs
// and segments.
var small = Options{RunSpan: 64, SegmentSpan: 512}

func newStore(t *testing.T) (string, *store.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return dir, st
}

func pushTexts(t testing.TB, st *store.Store, sid string, texts []string) {
	t.Helper()
	h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
	var es []*journal.Entry
	base := 0
	if m, err := st.SessionMetas(sid); err == nil {
		base = len(m)
	}
	for i, tx := range texts {
		id := fmt.Sprintf("%s-%05d", sid, base+i)
		// Every seventh entry has no searchable text: seqs without
		// text lie between those with.
		searchable := (base+i)%7 != 3
		es = append(es, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: searchable, Text: tx,
			Raw: []byte(fmt.Sprintf(`{"id":%q}`, id))})
	}
	if _, err := st.Push(sid, h, es); err != nil {
		t.Fatal(err)
	}
}

var words = []string{"alpha", "beta", "gamma", "délta", "日本語", "🙂", "func", "return nil", "x", "{", "}", "ab", "ba", "abc", "\n"}

func randTexts(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for j := r.IntN(12); j >= 0; j-- {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) == 0 {
				b.WriteByte(' ')
			}
		}
		out[i] = b.String()
	}
	return out
}

func openIndex(t *testing.T, dir string, st *store.Store, o Options) *Index {
	t.Helper()
	x, err := OpenWith(filepath.Join(dir, "index"), st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func catchUp(t *testing.T, x *Index) {
	t.Helper()
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// holdsTrigrams is the brute-force answer: the seqs in [lo, hi] whose
// text holds every trigram of needle (for a needle of 1 or 2 bytes, the
// needle itself), and every seq past through.
func holdsTrigrams(t *testing.T, st *store.Store, needle []byte, lo, hi, through uint64) []store.SeqRange {
	t.Helper()
	return holdsAtLeast(t, st, needle, lo, hi, through, len(distinctTrigrams(needle)))
}

// distinctTrigrams returns the distinct trigrams of needle.
func distinctTrigrams(needle []byte) map[string]bool {
	m := map[string]bool{}
	for i := 0; i+3 <= len(needle); i++ {
		m[string(needle[i:i+3])] = true
	}
	return m
}

// holdsAtLeast is holdsTrigrams for entries holding at least least of
// the needle's distinct trigrams.
func holdsAtLeast(t *testing.T, st *store.Store, needle []byte, lo, hi, through uint64, least int) []store.SeqRange {
	t.Helper()
	var out []store.SeqRange
	add := func(seq uint64) { out = appendRange(out, seq, seq) }
	texts := map[uint64][]byte{}
	if err := st.ScanTexts(lo, hi, false, func(seq uint64, text []byte) bool {
		texts[seq] = bytes.Clone(text)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for seq := lo; seq <= hi; seq++ {
		if seq > through {
			add(seq)
			continue
		}
		text, ok := texts[seq]
		if !ok {
			continue
		}
		if len(needle) < 3 {
			if bytes.Contains(text, needle) {
				add(seq)
			}
			continue
		}
		held := 0
		for tri := range distinctTrigrams(needle) {
			if bytes.Contains(text, []byte(tri)) {
				held++
			}
		}
		if held >= least {
			add(seq)
		}
	}
	return out
}

// checkMayHold checks MayHold against holdsTrigrams: equal (for a needle
// of more trigrams than a file's candidates are tested against, holding
// it and within holdsAtLeast of that many), or when exact is false (files
// found damaged meanwhile are read whole) holding it.
func checkMayHold(t *testing.T, x *Index, st *store.Store, needles [][]byte, r *rand.Rand, exact bool) {
	t.Helper()
	last := st.LastSeq()
	for _, nd := range needles {
		through := x.IndexedThrough()
		if x.NewQuery(nd).Nowhere() {
			if held := holdsTrigrams(t, st, nd, 1, through, through); len(held) > 0 {
				t.Fatalf("Nowhere(%q) with the mark at %d, but %v hold every trigram of it", nd, through, held)
			}
		}
		q := x.NewQuery(nd)
		for k := 0; k < 6; k++ {
			lo := 1 + r.Uint64N(last)
			hi := lo + r.Uint64N(last-lo+1)
			if k == 0 {
				lo, hi = 1, last+10
			}
			got, _, err := q.MayHold([]store.SeqRange{{Lo: lo, Hi: hi}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := holdsTrigrams(t, st, nd, lo, hi, x.IndexedThrough())
			n := len(distinctTrigrams(nd))
			switch {
			case !exact || n <= maxLists+1:
				if exact && !slices.Equal(got, want) || !exact && !covers(got, want) {
					t.Fatalf("MayHold(%q, %d-%d) with the mark at %d = %v,\nwant %v", nd, lo, hi, x.IndexedThrough(), got, want)
				}
			default:
				// A needle of more trigrams than a file's candidates are
				// tested against: every entry holding them all, and only
				// entries holding at least as many as are tested.
				most := holdsAtLeast(t, st, nd, lo, hi, x.IndexedThrough(), maxLists+1)
				if !covers(got, want) || !covers(most, got) {
					t.Fatalf("MayHold(%q, %d-%d) with the mark at %d = %v,\nwant every seq of %v and only seqs of %v", nd, lo, hi, x.IndexedThrough(), got, want, most)
				}
			}
		}
	}
}

func needlesOf(r *rand.Rand, st *store.Store, n int) [][]byte {
	var texts [][]byte
	st.ScanTexts(1, st.LastSeq(), false, func(_ uint64, text []byte) bool {
		texts = append(texts, bytes.Clone(text))
		return true
	})
	out := [][]byte{[]byte("zzz-nowhere"), []byte("ab"), []byte("日"), []byte("alphabeta"), []byte("a"), []byte("}"), []byte("\n"),
		[]byte("Ω"), []byte("\xe6"), []byte("a\n")}
	for len(out) < n {
		t := texts[r.IntN(len(texts))]
		if len(t) < 2 {
			continue
		}
		a := r.IntN(len(t) - 1)
		most := 12
		if len(out)%4 == 0 {
			most = 40 // a long needle: more trigrams than a file's candidates are tested against
		}
		b := a + 1 + r.IntN(min(most, len(t)-a))
		out = append(out, t[a:b])
	}
	return out
}

// TestMayHoldIsExactlyTheEntriesHoldingEveryTrigram: over a history of
// dozens of runs and several segments, with entries past the mark, the
// candidates of any needle in any range are the entries whose text holds
// each of its trigrams (for a long needle, those and only entries holding
// as many as are tested: see checkMayHold), and every entry the index has
// not taken in.
func TestMayHoldIsExactlyTheEntriesHoldingEveryTrigram(t *testing.T) {
	dir, st := newStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	pushTexts(t, st, "s1", randTexts(r, 1500))
	pushTexts(t, st, "s2", randTexts(r, 1300))
	x := openIndex(t, dir, st, small)
	catchUp(t, x)
	if x.IndexedThrough() != st.LastSeq() {
		t.Fatalf("mark %d after catching up, want the store's last seq %d", x.IndexedThrough(), st.LastSeq())
	}
	if segs := x.Segments(); segs < 6 {
		t.Fatalf("%d files; the test wants several segments and runs", segs)
	}
	if !x.NewQuery([]byte("zzz-nowhere")).Nowhere() || x.NewQuery([]byte("alpha")).Nowhere() {
		t.Fatalf("Nowhere: want true for a needle no text holds, false for one many do")
	}
	pushTexts(t, st, "s1", randTexts(r, 100)) // past the mark
	checkMayHold(t, x, st, needlesOf(r, st, 60), r, true)
}

// TestReopeningKeepsTheFilesAndTheOpenRun: Close saves the open run, and
// the next Open starts where the last one stopped; without it (a crash),
// or with one the store no longer covers, Open covers the written files
// and CatchUp reads the rest again. Answers are the same every way.
func TestReopeningKeepsTheFilesAndTheOpenRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries int
		before  func(t *testing.T, dir string, st *store.Store)
		whole   bool // the mark is the last whole run's end, not the last seq
	}{
		{"closed", 1100, func(*testing.T, string, *store.Store) {}, false},
		{"closed before a first run was written", 40, func(*testing.T, string, *store.Store) {}, false},
		{"killed: no saved open run", 1100, func(t *testing.T, dir string, _ *store.Store) {
			os.Remove(filepath.Join(dir, "index", openName))
		}, true},
		{"a saved open run that fails its checks", 1100, func(t *testing.T, dir string, _ *store.Store) {
			flip(t, filepath.Join(dir, "index", openName), headerSize+3)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, st := newStore(t)
			r := rand.New(rand.NewPCG(3, 4))
			pushTexts(t, st, "s1", randTexts(r, c.entries))
			x := openIndex(t, dir, st, small)
			catchUp(t, x)
			x.Close()
			c.before(t, dir, st)
			y := openIndex(t, dir, st, small)
			want := st.LastSeq()
			if c.whole {
				want = st.LastSeq() / 64 * 64
			}
			if y.IndexedThrough() != want {
				t.Fatalf("reopened at mark %d, want %d", y.IndexedThrough(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, "index", openName)); (err == nil) == c.whole {
				t.Errorf("after Open, the saved open run is there: %v; want it kept only when Open took it", err == nil)
			}
			checkMayHold(t, y, st, needlesOf(r, st, 20), r, true)
			catchUp(t, y)
			if y.IndexedThrough() != st.LastSeq() {
				t.Fatalf("mark %d, want %d", y.IndexedThrough(), st.LastSeq())
			}
			checkMayHold(t, y, st, needlesOf(r, st, 20), r, true)
		})
	}
}

// TestDamagedOrForeignFilesAreBuiltAgain: whatever happens to the files
// on disk, answers stay exact, and the index builds what it lost again.
func TestDamagedOrForeignFilesAreBuiltAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string, files []string)
		found  bool // a search finds it while reading (else Open does)
	}{
		{"a byte flipped in every container body", func(t *testing.T, dir string, files []string) { flipRegion(t, files[1], false) }, true},
		{"a byte flipped in every directory page", func(t *testing.T, dir string, files []string) { flipRegion(t, files[0], true) }, true},
		{"a file truncated", func(t *testing.T, dir string, files []string) { truncate(t, files[2]) }, false},
		{"a file deleted", func(t *testing.T, dir string, files []string) { os.Remove(files[1]) }, false},
		{"another format version", func(t *testing.T, dir string, files []string) { flip(t, files[0], 8) }, false},
		{"everything deleted", func(t *testing.T, dir string, files []string) { os.RemoveAll(dir) }, false},
		{"a half-written file and an older index's files left over", func(t *testing.T, dir string, files []string) {
			os.WriteFile(files[0]+".tmp", []byte("PIHGRAMS partial"), 0o600)
			os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("{}"), 0o600)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, st := newStore(t)
			r := rand.New(rand.NewPCG(5, 6))
			pushTexts(t, st, "s1", randTexts(r, 1400))
			x := openIndex(t, dir, st, small)
			catchUp(t, x)
			x.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "index", "pg-*.pg")) // runs and segments, not the saved open run
			slices.Sort(files)
			if len(files) < 3 {
				t.Fatalf("%d files", len(files))
			}
			c.damage(t, filepath.Join(dir, "index"), files)
			y := openIndex(t, dir, st, small)
			needles := needlesOf(r, st, 30)
			checkMayHold(t, y, st, needles, r, false) // damage found while reading is read around
			if c.found && len(y.bad) == 0 {
				t.Fatalf("no search found the damage")
			}
			catchUp(t, y) // and built again
			checkMayHold(t, y, st, needles, r, true)
			if y.IndexedThrough() != st.LastSeq() || len(y.bad) != 0 {
				t.Fatalf("mark %d (want %d), %d files still bad", y.IndexedThrough(), st.LastSeq(), len(y.bad))
			}
			left, _ := filepath.Glob(filepath.Join(dir, "index", "*.tmp"))
			if _, err := os.Stat(filepath.Join(dir, "index", "index_meta.json")); len(left) > 0 || err == nil {
				t.Fatalf("left over: %v, index_meta.json: %v", left, err)
			}
		})
	}
}

func flip(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(b) - trailerSize
	}
	b[at] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// flipRegion flips a byte of every directory page of the postings file
// at path (dir), or one every 64 bytes of its container bodies, so that
// whatever a lookup in the file reads fails its checksum.
func flipRegion(t *testing.T, path string, dir bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := int(binary.LittleEndian.Uint32(b[12:]))
	dirEnd := headerSize + keys*dirEntrySize
	pagesEnd := dirEnd + 4*((keys+dirPage-1)/dirPage)
	if dir {
		for at := headerSize + 5; at < dirEnd; at += dirPage * dirEntrySize {
			b[at] ^= 0x5a
		}
	} else {
		for at := pagesEnd; at < len(b)-trailerSize; at += 64 {
			b[at] ^= 0x5a
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// TestSearchesWhileEntriesArriveSeeEveryEntry: queries running while the
// writer takes entries in, writes runs and merges segments (under -race)
// never miss an entry that holds the needle.
func TestSearchesWhileEntriesArriveSeeEveryEntry(t *testing.T) {
	dir, st := newStore(t)
	x := openIndex(t, dir, st, Options{RunSpan: 16, SegmentSpan: 64})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		x.Run(ctx)
	}()
	needle := []byte("needle-in-here")
	var stop sync.WaitGroup
	done := make(chan struct{})
	stop.Add(1)
	go func() {
		defer stop.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			last := st.LastSeq()
			q := x.NewQuery(needle)
			got, _, err := q.MayHold([]store.SeqRange{{Lo: 1, Hi: last}}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			// Every seq with a hit (each fifth, see below) is a candidate.
			for seq := uint64(5); seq <= last; seq += 5 {
				if !inRanges(got, seq) && hasText(st, seq) {
					t.Errorf("seq %d holds the needle and is not a candidate (last %d, mark %d)", seq, last, x.IndexedThrough())
					return
				}
			}
		}
	}()
	for i := 0; i < 40; i++ {
		var texts []string
		for j := 0; j < 25; j++ {
			texts = append(texts, "plain text")
		}
		for j := range texts {
			if (i*25+j+1)%5 == 0 {
				texts[j] = "a needle-in-here b"
			}
		}
		pushTexts(t, st, "s1", texts)
	}
	close(done)
	stop.Wait()
	cancel()
	wg.Wait()
}

// covers says whether every seq of want is in got.
func covers(got, want []store.SeqRange) bool {
	for _, w := range want {
		for seq := w.Lo; seq <= w.Hi; seq++ {
			if !inRanges(got, seq) {
				return false
			}
		}
	}
	return true
}

func inRanges(rs []store.SeqRange, seq uint64) bool {
	for _, r := range rs {
		if r.Lo <= seq && seq <= r.Hi {
			return true
		}
	}
	return false
}

func hasText(st *store.Store, seq uint64) bool {
	ok, _ := st.TextBytes(seq, func([]byte) {})
	return ok
}

// TestASavedOpenRunStaysUntilTheRunChanges: an Open that takes the saved
// open run leaves the file as it is while the run does not change, and a
// Close then does not write it again; the first change (an entry taken in,
// a replaced text gathered again) deletes it before the change, so that a
// crash afterwards leaves no copy that misses the change, and the next
// Open reads the entries again from the store.
func TestASavedOpenRunStaysUntilTheRunChanges(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, st *store.Store) []byte // returns a needle only the change brings
	}{
		{"entries taken in", func(t *testing.T, st *store.Store) []byte {
			pushTexts(t, st, "s1", []string{"qqq-taken-in-later"})
			return []byte("taken-in-later")
		}},
		{"a text in the open run replaced", func(t *testing.T, st *store.Store) []byte {
			h := &journal.Header{ID: "s1", Version: 3, Raw: []byte(`{"type":"session","id":"s1"}`)}
			e := &journal.Entry{Type: "message", Role: "user", ID: "s1-01090", Searchable: true, Text: "zzz-replaced-text",
				Raw: []byte(`{"id":"s1-01090","edited":true}`)}
			if _, err := st.Apply(&store.FileBatch{Path: "/x/s1.jsonl", Header: h, Entries: []*journal.Entry{e}, State: store.FileState{Offset: 10}}); err != nil {
				t.Fatal(err)
			}
			return []byte("replaced-text")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, st := newStore(t)
			r := rand.New(rand.NewPCG(5, 6))
			pushTexts(t, st, "s1", randTexts(r, 1100))
			path := filepath.Join(dir, "index", openName)
			x := openIndex(t, dir, st, small)
			catchUp(t, x)
			x.Close()
			saved, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("Close saved no open run: %v", err)
			}
			info, _ := os.Stat(path)
			y := openIndex(t, dir, st, small)
			catchUp(t, y) // nothing new
			checkMayHold(t, y, st, needlesOf(r, st, 10), r, true)
			y.Close()
			again, err := os.ReadFile(path)
			if info2, _ := os.Stat(path); err != nil || !bytes.Equal(again, saved) || !info2.ModTime().Equal(info.ModTime()) {
				t.Fatalf("a run that did not change was written again (or lost) by Close: %v", err)
			}

			z := openIndex(t, dir, st, small)
			needle := c.change(t, st)
			catchUp(t, z)
			if _, err := os.Stat(path); err == nil {
				t.Fatalf("the saved open run is still there after the run changed")
			}
			// z is not closed: a crash. The next Open reads the open
			// run's entries from the store, the change included.
			w := openIndex(t, dir, st, small)
			catchUp(t, w)
			checkMayHold(t, w, st, append(needlesOf(r, st, 10), needle), r, true)
			if got := w.NewQuery(needle).Nowhere(); got {
				t.Fatalf("after the crash, %q is nowhere in the index", needle)
			}
		})
	}
}
