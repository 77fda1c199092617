package index

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"unicode/utf8"

	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/pi-history/pi-history/trigram"
)

// Common trigrams.
//
// Most of the index's postings belong to a few thousand trigrams that occur
// almost everywhere ("the", "ing", "rr ", " = "): on a 244,000-entry corpus
// the trigrams found in more than 10% of the blocks were 3% of the distinct
// trigrams and 69% of the postings. They cost most of the time spent
// building and merging segments, and they narrow a search down hardly at
// all. So once a trigram is found in more than 1/commonShare of the indexed
// blocks, it is declared common: later blocks leave it out, and searches
// never ask the index for it (an entry's sketch still holds it, so search
// tests it entry by entry). A needle made of common trigrams only is
// scanned in order through the sketches.
//
// Declaring a trigram common is for good: blocks indexed before still hold
// it, which is harmless, while blocks indexed after do not, so a search must
// drop from its conjunction every trigram that was common in the index
// state it reads. The set travels with the batch that first leaves its new
// members out (an internal value written in the same batch), and it is
// published to readers before that batch is applied; a reader takes its
// index snapshot first and reads the set after (Index.snapshot does both),
// so it never uses a trigram that some document of its snapshot left out.
const (
	commonKey = "common_trigrams"
	// commonShare: a trigram in more than one block in commonShare is
	// common. At 1 in 10 (69% of the postings of the corpus above) an
	// import of 351 MB took 93 s instead of 143 s; at 1 in 20 it took 79 s,
	// but many more needles were made of common trigrams only, and a
	// count of such a needle tests every entry's sketch.
	commonShare = 10
)

// commonAfter is how many blocks must be indexed before any trigram is
// declared common: before that, shares are noise.
var commonAfter uint64 = 1024

// SetCommonAfterForTest makes trigrams common after n indexed blocks
// instead of 1,024, so that tests with small corpora cover common
// trigrams; it returns a function that restores the default. Not for use
// while an index is being written.
func SetCommonAfterForTest(n uint64) (restore func()) {
	old := commonAfter
	commonAfter = n
	return func() { commonAfter = old }
}

// commonSet is an immutable set of common trigrams.
type commonSet struct {
	keys map[uint64]struct{}
	enc  []byte // the persisted form: uvarint length and bytes of each trigram
}

var emptyCommon = &commonSet{keys: map[uint64]struct{}{}}

// has reports whether the trigram with key k is common.
func (c *commonSet) has(k uint64) bool {
	_, ok := c.keys[k]
	return ok
}

// with returns a copy of c that also holds the trigrams in add.
func (c *commonSet) with(add [][]byte) *commonSet {
	n := &commonSet{keys: maps.Clone(c.keys), enc: append([]byte(nil), c.enc...)}
	for _, t := range add {
		n.keys[keyOf(t)] = struct{}{}
		n.enc = binary.AppendUvarint(n.enc, uint64(len(t)))
		n.enc = append(n.enc, t...)
	}
	return n
}

// decodeCommon reads a persisted set.
func decodeCommon(enc []byte) (*commonSet, error) {
	c := &commonSet{keys: map[uint64]struct{}{}, enc: enc}
	for b := enc; len(b) > 0; {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return nil, fmt.Errorf("index: damaged list of common trigrams at byte %d (run 'pi-history reindex')", len(enc)-len(b))
		}
		c.keys[keyOf(b[w:w+int(n)])] = struct{}{}
		b = b[w+int(n):]
	}
	return c, nil
}

// keyOf is the key of the trigram t (three runes, as Each spans them).
func keyOf(t []byte) uint64 {
	a, n := utf8.DecodeRune(t)
	b, m := utf8.DecodeRune(t[n:])
	c, _ := utf8.DecodeRune(t[n+m:])
	return trigram.Key(a, b, c)
}

// uncommon returns the trigrams of ts that c does not hold.
func (c *commonSet) uncommon(ts []string) []string {
	if len(c.keys) == 0 {
		return ts
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		if !c.has(keyOf([]byte(t))) {
			out = append(out, t)
		}
	}
	return out
}

// counter counts, for the indexer, how many blocks hold each trigram, to
// tell when one becomes common; common trigrams are marked in the same
// table, so a block's trigram costs one probe. It is rebuilt from the
// index's dictionary on the first pass after opening.
type counter struct {
	df     countTable
	blocks uint64
	loaded bool
}

// load fills the counts from the dictionary of the index read by rd and
// marks the trigrams of common.
func (ct *counter) load(rd bindex.IndexReader, common *commonSet, blocks uint64) error {
	ct.df = countTable{}
	ct.blocks = blocks
	for k := range common.keys {
		*ct.df.slot(k) = commonMark
	}
	fd, err := rd.FieldDict(fieldText)
	if err != nil {
		return fmt.Errorf("index: read the trigram dictionary: %w", err)
	}
	defer fd.Close()
	for {
		e, err := fd.Next()
		if err != nil {
			return fmt.Errorf("index: read the trigram dictionary: %w", err)
		}
		if e == nil {
			break
		}
		if c := ct.df.slot(keyOf([]byte(e.Term))); *c != commonMark {
			*c = uint32(min(e.Count, 1<<31))
		}
	}
	ct.loaded = true
	return nil
}

// commonMark is the count of a trigram that is common.
const commonMark = ^uint32(0)

// countTable maps trigram keys to counts: open addressing, linear probing,
// key and count in one slot. It replaced a Go map, which took two lookups
// per trigram and a block's worth of cache misses (3.7 of the 5.9 CPU-s
// that deciding common trigrams took in a 298 MB import).
type countTable struct {
	slots []countSlot
	n     int
	shift uint
}

// countSlot is one slot: key has occupied set (trigram keys use 63 bits).
type countSlot struct {
	key   uint64
	count uint32
}

const occupied = 1 << 63

// slot returns the count of k, inserting it at 0 when absent. The pointer
// is valid until the next call.
func (t *countTable) slot(k uint64) *uint32 {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	k |= occupied
	mask := uint64(len(t.slots) - 1)
	for i := k * 0x9e3779b97f4a7c15 >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return &s.count
		}
		if s.key == 0 {
			s.key = k
			t.n++
			return &s.count
		}
	}
}

// grow doubles the table (from 64K slots).
func (t *countTable) grow() {
	old := t.slots
	n := max(1<<16, 2*len(old))
	t.slots = make([]countSlot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	mask := uint64(n - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := s.key * 0x9e3779b97f4a7c15 >> t.shift
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
