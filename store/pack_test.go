package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/cockroachdb/pebble/v2"
)

// storedValues returns the packed values of the texts stored once: the
// values under X (by key) and the records of the text file (by offset).
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
	f, err := st.texts.fs.Open(st.texts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(all); {
		if len(all)-off < recordHeader {
			t.Fatalf("the text file ends in a record header cut short at %d", off)
		}
		n := int(binary.LittleEndian.Uint32(all[off:]))
		if len(all)-off-recordHeader < n {
			t.Fatalf("the record at %d of the text file is cut short", off)
		}
		out[fmt.Sprintf("log@%d", off)] = all[off+recordHeader : off+recordHeader+n]
		off += recordHeader + n
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
	if codecs[packLZ4] != 2 || codecs[packNone] != 1 {
		t.Errorf("codecs %v; want 2 texts compressed (LZ4) and the noisy one as it is", codecs)
	}
	var packed int
	for _, v := range vals {
		packed += len(v)
	}
	if long := len(texts[0]) + len(texts[1]) + len(texts[3]); packed > long*2/3 {
		t.Errorf("the stored texts take %d bytes for %d of text; want them compressed", packed, long)
	}
	want := bySeq(texts)
	checkTexts(t, st, want, "packed")
}

// TestCompactMovesTheStoredTextsOfAnEarlierBuild: a store of format 3
// keeps its stored texts under X, as they are or (after an upgrade cut
// short) packed; it is read as it is, and Compact moves them to the text
// file, each entry's text the same before and after; a search holding
// references from before reads them, and the X keys go at the next open.
// A move cut short by a crash reads the same and is finished by the next
// Compact; a second MoveTexts moves nothing, and a writer meeting an old
// text again refers to its moved record.
func TestCompactMovesTheStoredTextsOfAnEarlierBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{SharedTextMin: -1})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 3000 { // more than two chunks of MoveTexts
		if i%10 == 0 {
			texts = append(texts, "a long text many entries hold "+strings.Repeat("z", 40))
			continue
		}
		texts = append(texts, fmt.Sprintf("a long text, number %d, %s", i, strings.Repeat("z", 40)))
	}
	if _, err := st.Apply(textBatch("/j/old.jsonl", "old", texts, true)); err != nil {
		t.Fatal(err)
	}
	want := bySeq(texts)
	distinct := writeAsFormat3(t, st, 500)
	st.Close()
	if st, err = OpenWith(dir, Options{SharedTextMin: 32}); err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	if n := keysUnder(t, st, tagShared); n != distinct {
		t.Fatalf("%d texts under X; want %d", n, distinct)
	}
	checkTexts(t, st, want, "format 3, partly packed")

	// A move cut short: the first chunk of hash pointers moved, then a
	// crash.
	if _, err := st.moveChunk(tagSum, []byte{tagSum}, map[TextRef]TextRef{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = OpenWith(dir, Options{SharedTextMin: 32}); err != nil {
		t.Fatal(err)
	}
	checkTexts(t, st, want, "a move cut short")

	// A search holding references taken before the move reads them after
	// it.
	var held []TextRef
	if err := st.ScanTextRefs([]SeqRange{{Lo: 1, Hi: st.LastSeq()}}, false, func(_ uint64, _ []byte, ref *TextRef) (bool, error) {
		held = append(held, *ref)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := st.ReadShared(held, func(int, []byte) bool { return true }); err != nil {
		t.Errorf("a reference taken before the move: %v", err)
	}
	st.Close()
	if st, err = OpenWith(dir, Options{SharedTextMin: 32}); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, st, tagShared); n != 0 {
		t.Errorf("after Compact and a reopen, %d texts are still under X", n)
	}
	for k, v := range storedValues(t, st) {
		if !strings.HasPrefix(k, "log@") || v[0] != packMark {
			t.Fatalf("after Compact, stored text %q is not a packed record of the text file", k)
		}
	}
	checkTexts(t, st, want, "after Compact")
	if n, err := st.MoveTexts(t.Context()); err != nil || n != 0 {
		t.Fatalf("a second MoveTexts moved %d texts (%v); want none", n, err)
	}
	size := st.texts.bytes()
	if _, err := st.Apply(textBatch("/j/new.jsonl", "new", []string{texts[0], texts[1]}, true)); err != nil {
		t.Fatal(err)
	}
	if grown := st.texts.bytes() - size; grown != 0 {
		t.Errorf("storing two texts the store held before grew the text file by %d bytes; want 0", grown)
	}
	want[uint64(len(texts)+1)], want[uint64(len(texts)+2)] = texts[0], texts[1]
	checkTexts(t, st, want, "after storing old texts again")
}

// writeAsFormat3 turns the inline texts of st into what a build of format
// 3 wrote: each distinct one under X<seq><sum>, seq its first holder, as
// it is (the first packed ones packed, as an upgrade cut short by a crash
// leaves them), with its hash pointer and each holder's reference, and
// the store's format 3. It returns how many distinct texts it stored.
func writeAsFormat3(t *testing.T, st *Store, packed int) int {
	t.Helper()
	b := st.db.NewBatch()
	refs := map[[32]byte]TextRef{}
	for seq := uint64(1); seq <= st.LastSeq(); seq++ {
		text, err := st.Text(seq)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		ref, ok := refs[sum]
		if !ok {
			binary.BigEndian.PutUint64(ref[:8], seq)
			copy(ref[8:], sum[16:24])
			refs[sum] = ref
			v := []byte(text)
			if int(seq) <= packed {
				v = packS2Text(text) // what builds of format 3 and 4 wrote
			}
			if err := b.Set(sharedKey(ref[:]), v, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Set(append([]byte{tagSum}, sum[:16]...), ref[:], nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Set(refKey(seq), ref[:], nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(seqKey(tagText, seq), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, formatSharedTexts), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return len(refs)
}

// TestADamagedPackedTextIsAnErrorNotAText: what unpackText refuses.
func TestADamagedPackedTextIsAnErrorNotAText(t *testing.T) {
	text := strings.Repeat("abcdef", 100)
	good, goodS2 := packText(text), packS2Text(text)
	if good[1] != packLZ4 || goodS2[1] != packS2 {
		t.Fatalf("codecs %d and %d; want LZ4 and S2", good[1], goodS2[1])
	}
	huge := binary.AppendUvarint([]byte{packMark, packLZ4}, 1<<40)
	cases := []struct {
		name string
		v    []byte
		err  string
	}{
		{"no codec", []byte{packMark}, "too short"},
		{"unknown codec", []byte{packMark, 9, 'x'}, "unknown codec 9"},
		{"LZ4 cut short", good[:len(good)/2], "damaged"},
		{"LZ4 with no length", []byte{packMark, packLZ4}, "damaged"},
		{"LZ4 longer than a block can grow", append(huge, good[4:]...), "damaged"},
		{"LZ4 shorter than it says", append(binary.AppendUvarint([]byte{packMark, packLZ4}, 601), good[4:]...), "damaged"},
		{"S2 cut short", goodS2[:len(goodS2)/2], "damaged"},
		{"S2 with no block", []byte{packMark, packS2}, "damaged"},
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

// FuzzPackedTextsRoundTrip: any valid text packs (LZ4, or S2 as earlier
// builds did) and unpacks to itself, and unpacking any value returns a
// text or an error, never a panic.
func FuzzPackedTextsRoundTrip(f *testing.F) {
	f.Add("hello hello hello hello", []byte{packMark, packS2, 3, 0})
	f.Add(strings.Repeat("ab", 500), []byte{packMark, packNone})
	f.Add(strings.Repeat("abc", 300), []byte{packMark, packLZ4, 200, 7, 0x1f, 'a', 1, 0})
	f.Fuzz(func(t *testing.T, text string, v []byte) {
		var buf []byte
		for _, pack := range []func(string) []byte{packText, packS2Text} {
			got, err := unpackText(pack(text), &buf)
			if err != nil || string(got) != text {
				t.Fatalf("round trip of %q: %q, %v", text, got, err)
			}
		}
		_, _ = unpackText(v, &buf)
	})
}

// packS2Text is packText as builds before decision 410 packed texts (S2),
// for the tests of stores they wrote.
func packS2Text(text string) []byte {
	out := make([]byte, 2, 2+s2.MaxEncodedLen(len(text)))
	out[0] = packMark
	out[1] = packS2
	enc := s2.EncodeBetter(out[2:cap(out)], []byte(text))
	if len(enc) >= len(text) {
		out = append(out[:2], text...)
		out[1] = packNone
		return out
	}
	return out[:2+len(enc)]
}

// TestTextsOfOneRepeatedRunRoundTrip: the most compressible texts (LZ4's
// ratio nears its bound, which unpackText checks a length against) pack
// and unpack whole.
func TestTextsOfOneRepeatedRunRoundTrip(t *testing.T) {
	for _, n := range []int{16, 17, 65536, 1 << 20, 8 << 20} {
		for _, run := range []string{"a", "ab", "abc\n"} {
			text := strings.Repeat(run, n)
			v := packText(text)
			var buf []byte
			got, err := unpackText(v, &buf)
			if err != nil || string(got) != text {
				t.Fatalf("%d × %q: packed into %d bytes (codec %d), unpacked %d bytes, %v", n, run, len(v), v[1], len(got), err)
			}
		}
	}
}
