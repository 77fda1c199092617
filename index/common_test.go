package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/pi-history/pi-history/store"
	"github.com/pi-history/pi-history/trigram"
)

// blockTexts returns the texts of n blocks: every entry says "everywhere",
// and block b's first entry also says rare(b).
func blockTexts(first, n int) []string {
	var texts []string
	for b := first; b < first+n; b++ {
		for i := 0; i < BlockSize; i++ {
			if i == 0 {
				texts = append(texts, "everywhere "+rare(b))
			} else {
				texts = append(texts, "everywhere")
			}
		}
	}
	return texts
}

// rare is a word found in block b alone: twelve letters in which no
// trigram repeats another block's, whichever a window selects.
func rare(b int) string {
	var w []byte
	for i := range 12 {
		w = append(w, byte('a'+(b*7+i*i*3+i)%26))
	}
	return "Z" + strconv.Itoa(b) + string(w)
}

// trigramsFor returns the trigrams of needle that x's blocks hold (all
// of them, or those its windows select: see needleTrigrams).
func trigramsFor(t *testing.T, x *Index, needle string) []string {
	t.Helper()
	x.mu.RLock() // as PlanNeedle: a reindex may swap the scheme
	defer x.mu.RUnlock()
	trs, err := x.needleTrigrams(needle)
	if err != nil {
		t.Fatalf("trigrams of %q: %v", needle, err)
	}
	return trs
}

// docHolds reports whether the index's document for the block starting
// at lo has term t.
func docHolds(t *testing.T, x *Index, lo uint64, term string) bool {
	t.Helper()
	tq := bleve.NewTermQuery(term)
	tq.SetField(fieldText)
	q := bleve.NewConjunctionQuery(tq, bleve.NewDocIDQuery([]string{docID(lo)}))
	res, err := x.bi.Search(bleve.NewSearchRequest(q))
	if err != nil {
		t.Fatal(err)
	}
	return res.Total == 1
}

// newStore opens a store in a new temporary directory, closed by cleanup.
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

// openIndex opens (or creates) the index in dir/index for st.
func openIndex(t *testing.T, dir string, st *store.Store, o Options) *Index {
	t.Helper()
	x, err := OpenWith(filepath.Join(dir, "index"), st, o)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// openCaughtUp opens the index in dir/index and indexes what st holds.
func openCaughtUp(t *testing.T, dir string, st *store.Store) *Index {
	t.Helper()
	x := openIndex(t, dir, st, Options{})
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestKeyOfIsTheKeyEachReports(t *testing.T) {
	for _, text := range []string{"abc", "日本語", "🙂🙂x", "a\x80b", "\xff\xfe\xfd"} {
		trigram.Each([]byte(text), func(k uint64, start, end int) {
			if got := keyOf([]byte(text)[start:end]); got != k {
				t.Errorf("keyOf(%q) = %x, Each reports %x", text[start:end], got, k)
			}
		})
	}
}

func TestCommonTrigramsAreLeftOutAndSurviveReopen(t *testing.T) {
	// With one block in 10 as the share, 20 blocks make a trigram in 3 of
	// them common, and one in a single block never.
	defer SetCommonAfterForTest(20)()
	dir, st := newStore(t)
	pushTexts(t, st, "s1", blockTexts(0, 40))
	x := openCaughtUp(t, dir, st)
	if x.CommonTrigrams() == 0 {
		t.Fatal("a trigram in every block was not declared common")
	}
	// Blocks before the threshold keep a trigram of "everywhere"; later
	// ones leave it out.
	eve := trigramsFor(t, x, "everywhere")[0]
	if !docHolds(t, x, 1, eve) || docHolds(t, x, 39*BlockSize+1, eve) {
		t.Errorf("want %q in the first block's document and not in the last one's", eve)
	}
	// The plan drops common trigrams; a needle of common trigrams only is
	// left to the caller's scan.
	p, err := x.PlanNeedle("everywhere " + rare(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range p.Trigrams {
		if x.common.Load().has(keyOf([]byte(tr))) {
			t.Errorf("plan keeps common trigram %q", tr)
		}
	}
	if got := p.Window(1, 1<<20); len(got) != 1 || got[0].Lo != 7*BlockSize+1 {
		t.Errorf("candidates for %s = %v, want block 8 only", rare(7), got)
	}
	if p, _ := x.PlanNeedle("everywhere"); !p.AllCommon {
		t.Errorf("plan for a needle of common trigrams: %+v, want AllCommon", p)
	}
	if got, _ := x.Candidates(context.Background(), trigramsFor(t, x, "everywhere"), 1, 1<<20); len(got) != 1 || got[0] != (Block{1, 40 * BlockSize}) {
		t.Errorf("Candidates for common trigrams only = %v, want the whole range as one block", got)
	}
	n := x.CommonTrigrams()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, the index knows the same common trigrams, counts blocks
	// again from its dictionary, and new blocks go on leaving them out.
	x = openIndex(t, dir, st, Options{})
	defer x.Close()
	if x.CommonTrigrams() != n {
		t.Fatalf("after reopening: %d common trigrams, want %d", x.CommonTrigrams(), n)
	}
	pushTexts(t, st, "s2", blockTexts(40, 2))
	if _, err := x.CatchUp(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if docHolds(t, x, 41*BlockSize+1, eve) {
		t.Error("a block indexed after reopening holds a common trigram")
	}
	if p, err := x.PlanNeedle(rare(41)); err != nil || len(p.Blocks) != 1 || p.Blocks[0] != 41*BlockSize+1 {
		t.Errorf("a block indexed after reopening is not found by its rare word: %+v, %v", p, err)
	}
	if !x.ct.loaded || x.ct.blocks < 42 {
		t.Errorf("counts after reopening: loaded %v, %d blocks; want loaded, at least 42", x.ct.loaded, x.ct.blocks)
	}
}

// seqFieldDocs counts the documents whose numeric seq field a range query
// over every seq finds.
func seqFieldDocs(t *testing.T, x *Index) int {
	t.Helper()
	lo, hi, incl := 0.0, 1e15, true
	q := bleve.NewNumericRangeInclusiveQuery(&lo, &hi, &incl, &incl)
	q.SetField(fieldSeq)
	res, err := x.bi.Search(bleve.NewSearchRequest(q))
	if err != nil {
		t.Fatal(err)
	}
	return int(res.Total)
}

// createOlder creates, in dir/index, an empty index as a binary that knew
// only the analyzer named did.
func createOlder(t *testing.T, dir, analyzer string) {
	t.Helper()
	m := newMapping().(*mapping.IndexMappingImpl)
	m.DefaultAnalyzer = analyzer
	m.DefaultMapping.Properties[fieldText].Fields[0].Analyzer = analyzer
	bi, err := bleve.NewUsing(filepath.Join(dir, "index"), m, "scorch", "scorch", map[string]interface{}{"unsafe_batch": true})
	if err != nil {
		t.Fatal(err)
	}
	if err := persistNew(bi); err != nil { // as that binary did: see TestNewIndexOpensRightAfterClose
		t.Fatal(err)
	}
	bi.Close()
}

func TestIndexOfAnOlderAnalyzerKeepsEveryTrigram(t *testing.T) {
	defer SetCommonAfterForTest(20)()
	dir, st := newStore(t)
	createOlder(t, dir, analyzerV1)
	pushTexts(t, st, "s1", blockTexts(0, 30))
	x := openCaughtUp(t, dir, st)
	defer x.Close()
	if x.CommonTrigrams() != 0 || !docHolds(t, x, 29*BlockSize+1, "eve") {
		t.Errorf("an index of the older analyzer declared %d common trigrams; older binaries would miss blocks", x.CommonTrigrams())
	}
	// Reindexing upgrades it.
	if err := x.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if x.CommonTrigrams() == 0 {
		t.Error("a reindexed index declares no common trigrams")
	}
	if x.scheme != schemeSelected {
		t.Errorf("a reindexed index has scheme %d, want the selected trigrams", x.scheme)
	}
}

// An index made by the v2 analyzer keeps every uncommon trigram (binaries
// of v2 ask it for any of them) and is asked for every trigram of a
// needle, however short; reindexing turns it into an index of selected
// trigrams, which short needles cannot use.
func TestIndexOfTheV2AnalyzerKeepsEveryUncommonTrigram(t *testing.T) {
	defer SetCommonAfterForTest(20)()
	dir, st := newStore(t)
	createOlder(t, dir, analyzerV2)
	pushTexts(t, st, "s1", blockTexts(0, 30))
	x := openCaughtUp(t, dir, st)
	defer x.Close()
	if x.CommonTrigrams() == 0 {
		t.Error("a v2 index declares no common trigrams")
	}
	if x.Format() != analyzerV2 {
		t.Errorf("format %q, want %q", x.Format(), analyzerV2)
	}
	// v2 binaries find a window's blocks by a range query on the numeric
	// seq field: its blocks keep it.
	if n := seqFieldDocs(t, x); n != 30 {
		t.Errorf("%d of the v2 index's 30 blocks have the seq field its binaries query", n)
	}
	word := rare(12)
	for _, tr := range trigram.Distinct(word) {
		if !docHolds(t, x, 12*BlockSize+1, tr) {
			t.Errorf("the v2 index's block lacks %q of %q", tr, word)
		}
	}
	if p, err := x.PlanNeedle(word[:4]); err != nil || len(p.Blocks) != 1 {
		t.Errorf("a 4-character needle in a v2 index: %+v, %v; want its one block", p, err)
	}
	if err := x.Reindex(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if x.Format() != AnalyzerName {
		t.Errorf("format after reindexing %q, want %q", x.Format(), AnalyzerName)
	}
	if n := seqFieldDocs(t, x); n != 0 {
		t.Errorf("%d blocks of the rebuilt index have a seq field, which costs postings and nothing reads", n)
	}
	if _, err := x.PlanNeedle(word[:4]); !errors.Is(err, ErrNoWindow) {
		t.Errorf("a 4-character needle after reindexing: %v, want ErrNoWindow", err)
	}
	if p, err := x.PlanNeedle(word); err != nil || len(p.Blocks) != 1 || p.Blocks[0] != 12*BlockSize+1 {
		t.Errorf("after reindexing, %q plans %+v, %v; want its one block", word, p, err)
	}
	held := 0
	for _, tr := range trigram.Distinct(word) {
		if docHolds(t, x, 12*BlockSize+1, tr) {
			held++
		}
	}
	if held == 0 || held == len(trigram.Distinct(word)) {
		t.Errorf("after reindexing the block holds %d of the %d trigrams of %q; want those selected, some", held, len(trigram.Distinct(word)), word)
	}
}

// TestNewIndexOpensRightAfterClose: a new index closed before any block
// was indexed (an import of a few entries) must open again. Its mapping
// reaches disk only with the first persisted snapshot; closing before that
// once left a directory that could not be opened (8 runs in 30 under load).
func TestNewIndexOpensRightAfterClose(t *testing.T) {
	dir, st := newStore(t)
	for i := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("index%d", i))
		x, err := Open(p, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if x, err = Open(p, st, nil); err != nil {
			t.Fatalf("round %d: a new index closed at once does not open: %v", i, err)
		}
		x.Close()
	}
}

func TestCountTableKeepsEveryCountThroughGrowth(t *testing.T) {
	var tab countTable
	want := map[uint64]uint32{}
	rng := rand.New(rand.NewPCG(1, 2))
	// Key 0 (three NUL runes), keys that differ only in their top bits,
	// and random keys, each counted a few times, past several doublings.
	keys := []uint64{0, 1 << 62, 1<<62 | 1, trigram.Key(0x10FFFF, 0x10FFFF, 0x10FFFF)}
	for range 300000 {
		keys = append(keys, rng.Uint64()>>1)
	}
	for i, k := range keys {
		for range i%3 + 1 {
			*tab.slot(k)++
			want[k]++
		}
	}
	if tab.n != len(want) {
		t.Fatalf("table holds %d keys, want %d", tab.n, len(want))
	}
	for k, n := range want {
		if got := *tab.slot(k); got != n {
			t.Fatalf("key %#x counted %d, want %d", k, got, n)
		}
	}
	if tab.n != len(want) {
		t.Fatalf("looking keys up added some: %d, want %d", tab.n, len(want))
	}
}
