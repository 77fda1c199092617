package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// storedValues returns the values under X, by key.
func storedValues(t *testing.T, st *Store) map[string][]byte {
	t.Helper()
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagShared}, UpperBound: []byte{tagShared + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key())] = bytes.Clone(it.Value())
	}
	return out
}

// noisyText is n bytes of printable ASCII that compresses poorly.
func noisyText(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(' ' + r.IntN(95))
	}
	return string(b)
}

// TestStoredTextsArePackedEachOnItsOwn: a text stored once is kept
// compressed on its own (smaller than the text when it compresses, as it
// is, marked, when it does not), and every read gives the text back.
func TestStoredTextsArePackedEachOnItsOwn(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	texts := []string{
		strings.Repeat("func main() { fmt.Println(\"hello\") }\n", 40), // compresses well
		noisyText(r, 3000), // hardly at all
		"short",            // inline
		"ü" + strings.Repeat("ßü", 600),
	}
	st, err := OpenWith(filepath.Join(t.TempDir(), "store"), Options{SharedTextMin: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Apply(textBatch("/j/a.jsonl", "a", texts, true)); err != nil {
		t.Fatal(err)
	}
	vals := storedValues(t, st)
	if len(vals) != 3 {
		t.Fatalf("%d texts stored once; want the 3 long ones", len(vals))
	}
	codecs := map[byte]int{}
	for k, v := range vals {
		if len(v) < 2 || v[0] != packMark {
			t.Fatalf("stored text %x is not packed: starts %q", k, v[:min(len(v), 8)])
		}
		codecs[v[1]]++
	}
	if codecs[packS2] != 2 || codecs[packNone] != 1 {
		t.Errorf("codecs %v; want 2 texts compressed (S2) and the noisy one as it is", codecs)
	}
	var packed int
	for _, v := range vals {
		packed += len(v)
	}
	if long := len(texts[0]) + len(texts[1]) + len(texts[3]); packed > long*2/3 {
		t.Errorf("the stored texts take %d bytes for %d of text; want them compressed", packed, long)
	}
	want := map[uint64]string{}
	for i, text := range texts {
		want[uint64(i+1)] = text
	}
	checkTexts(t, st, want, "packed")
}

// TestCompactPacksTheStoredTextsOfAnEarlierBuild: a store of format 3
// keeps its stored texts as they are; it is read as it is, and Compact
// packs them (once: a second PackTexts packs nothing), each entry's text
// the same before and after. A crash between two chunks leaves some
// packed, some not, which reads the same.
func TestCompactPacksTheStoredTextsOfAnEarlierBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{SharedTextMin: 32})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 3000 { // more than two chunks of PackTexts
		texts = append(texts, fmt.Sprintf("a long text, number %d, %s", i, strings.Repeat("z", 40)))
	}
	if _, err := st.Apply(textBatch("/j/old.jsonl", "old", texts, true)); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{}
	for i, text := range texts {
		want[uint64(i+1)] = text
	}
	// Make it what a build of format 3 wrote: texts as they are, format 3;
	// the first 500 packed, as an upgrade cut short by a crash leaves it.
	b := st.db.NewBatch()
	i := 0
	for k, v := range storedValues(t, st) {
		if i++; i <= 500 {
			continue
		}
		var buf []byte
		text, err := unpackText(v, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set([]byte(k), text, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, formatSharedTexts), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = OpenWith(dir, Options{SharedTextMin: 32}); err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	checkTexts(t, st, want, "format 3, partly packed")
	if err := st.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	for k, v := range storedValues(t, st) {
		if v[0] != packMark {
			t.Fatalf("after Compact, stored text %x is not packed", k)
		}
	}
	checkTexts(t, st, want, "after Compact")
	if n, err := st.PackTexts(t.Context()); err != nil || n != 0 {
		t.Fatalf("a second PackTexts packed %d texts (%v); want none", n, err)
	}
}

// TestADamagedPackedTextIsAnErrorNotAText: what unpackText refuses.
func TestADamagedPackedTextIsAnErrorNotAText(t *testing.T) {
	good := packText(strings.Repeat("abcdef", 100))
	cases := []struct {
		name string
		v    []byte
		err  string
	}{
		{"no codec", []byte{packMark}, "too short"},
		{"unknown codec", []byte{packMark, 9, 'x'}, "unknown codec 9"},
		{"cut short", good[:len(good)/2], "damaged"},
		{"no block", []byte{packMark, packS2}, "damaged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf []byte
			text, err := unpackText(c.v, &buf)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("unpackText = %q, %v; want an error saying %q", text, err, c.err)
			}
		})
	}
	for _, text := range []string{"", "x", "plain text of a format 3 store"} {
		var buf []byte
		if got, err := unpackText([]byte(text), &buf); err != nil || string(got) != text {
			t.Errorf("unpackText(%q) = %q, %v; want the value as it is", text, got, err)
		}
	}
}

// FuzzPackedTextsRoundTrip: any valid text packs and unpacks to itself,
// and unpacking any value returns a text or an error, never a panic.
func FuzzPackedTextsRoundTrip(f *testing.F) {
	f.Add("hello hello hello hello", []byte{packMark, packS2, 3, 0})
	f.Add(strings.Repeat("ab", 500), []byte{packMark, packNone})
	f.Fuzz(func(t *testing.T, text string, v []byte) {
		var buf []byte
		got, err := unpackText(packText(text), &buf)
		if err != nil || string(got) != text {
			t.Fatalf("round trip of %q: %q, %v", text, got, err)
		}
		_, _ = unpackText(v, &buf)
	})
}
