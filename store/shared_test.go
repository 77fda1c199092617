package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/pi-history/pi-history/journal"
)

// textBatch is a batch of session sid's journal at path with one user
// message per text ("" for an entry without searchable text), ids sid-0000
// on; first says whether it holds the header.
func textBatch(path, sid string, texts []string, first bool) *FileBatch {
	fb := &FileBatch{Path: path, State: FileState{Offset: int64(len(texts)) * 100}}
	if first {
		fb.Header = &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
	}
	for i, text := range texts {
		id := fmt.Sprintf("%s-%04d", sid, i)
		fb.Entries = append(fb.Entries, &journal.Entry{Type: "message", Role: "user", ID: id, Searchable: text != "", Text: text,
			Raw: []byte(fmt.Sprintf(`{"type":"message","id":%q,"message":{"role":"user","content":%q}}`, id, text))})
	}
	return fb
}

// bySeq maps the texts of one batch of a new store to their seqs (from 1).
func bySeq(texts []string) map[uint64]string {
	want := make(map[uint64]string, len(texts))
	for i, text := range texts {
		want[uint64(i+1)] = text
	}
	return want
}

// checkTexts reads every text of st through each way the store offers and
// compares it with want (seq → text; a seq missing from want has none).
func checkTexts(t *testing.T, st *Store, want map[uint64]string, how string) {
	t.Helper()
	last := st.LastSeq()
	for seq := uint64(1); seq <= last; seq++ {
		got, err := st.Text(seq)
		if err != nil || got != want[seq] {
			t.Fatalf("%s: Text(%d) = %.40q, %v; want %.40q", how, seq, got, err, want[seq])
		}
	}
	for _, reverse := range []bool{false, true} {
		seen := map[uint64]string{}
		prev := uint64(0)
		err := st.ScanTexts(0, last, reverse, func(seq uint64, text []byte) bool {
			if prev != 0 && (seq > prev) == reverse {
				t.Fatalf("%s: ScanTexts(reverse %v) visited %d after %d", how, reverse, seq, prev)
			}
			prev = seq
			seen[seq] = string(text)
			return true
		})
		if err != nil || len(seen) != len(want) {
			t.Fatalf("%s: ScanTexts(reverse %v) saw %d texts (%v); want %d", how, reverse, len(seen), err, len(want))
		}
		for seq, text := range seen {
			if want[seq] != text {
				t.Fatalf("%s: ScanTexts(reverse %v) gave seq %d %.40q; want %.40q", how, reverse, seq, text, want[seq])
			}
		}
	}
	r := rand.New(rand.NewPCG(uint64(len(want)), 7))
	for range 20 {
		var ranges []SeqRange
		for lo := uint64(1) + r.Uint64N(3); lo <= last; {
			hi := min(lo+r.Uint64N(4), last)
			ranges = append(ranges, SeqRange{Lo: lo, Hi: hi})
			lo = hi + 2 + r.Uint64N(20)
		}
		in := func(seq uint64) bool {
			for _, rg := range ranges {
				if seq >= rg.Lo && seq <= rg.Hi {
					return true
				}
			}
			return false
		}
		n := 0
		for seq := range want {
			if in(seq) {
				n++
			}
		}
		for _, reverse := range []bool{false, true} {
			got := 0
			prev := uint64(0)
			err := st.ScanTextRanges(ranges, reverse, func(seq uint64, text []byte) bool {
				if !in(seq) || want[seq] != string(text) {
					t.Fatalf("%s: ScanTextRanges gave seq %d %.40q; want it only in %v, as %.40q", how, seq, text, ranges, want[seq])
				}
				if prev != 0 && (seq > prev) == reverse {
					t.Fatalf("%s: ScanTextRanges(reverse %v) visited %d after %d", how, reverse, seq, prev)
				}
				prev = seq
				got++
				return true
			})
			if err != nil || got != n {
				t.Fatalf("%s: ScanTextRanges(reverse %v) gave %d texts (%v); want %d", how, reverse, got, err, n)
			}
		}
		// The texts again, each stored text read through its reference.
		var refs []TextRef
		var refSeqs []uint64
		got := 0
		err := st.ScanTextRefs(ranges, false, func(seq uint64, text []byte, ref *TextRef) (bool, error) {
			if ref != nil {
				refs, refSeqs = append(refs, *ref), append(refSeqs, seq)
				return true, nil
			}
			if want[seq] != string(text) {
				t.Fatalf("%s: ScanTextRefs gave seq %d %.40q; want %.40q", how, seq, text, want[seq])
			}
			got++
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = st.ReadShared(refs, func(i int, text []byte) bool {
			if want[refSeqs[i]] != string(text) {
				t.Fatalf("%s: ReadShared gave seq %d %.40q; want %.40q", how, refSeqs[i], text, want[refSeqs[i]])
			}
			got++
			return true
		})
		if err != nil || got != n {
			t.Fatalf("%s: ScanTextRefs and ReadShared gave %d texts (%v); want %d", how, got, err, n)
		}
		tr := st.NewTextReader(0, last)
		for seq := uint64(1); seq <= last; seq += 1 + r.Uint64N(3) {
			text, ok, err := tr.Text(seq)
			w, has := want[seq]
			if err != nil || ok != has || string(text) != w {
				t.Fatalf("%s: TextReader.Text(%d) = %.40q, %v, %v; want %.40q, %v", how, seq, text, ok, err, w, has)
			}
		}
		tr.Close()
	}
}

// TestLongTextsAreStoredOnceAndReadBackExactly: texts from
// SharedTextMin bytes on are kept once however many entries (of one
// batch, of later batches, of other sessions) hold them; an edited entry
// takes its new text while the others keep theirs; a dropped session
// takes none of the others' texts with it; and every way of reading texts
// gives each entry its own, before and after a reopen.
func TestLongTextsAreStoredOnceAndReadBackExactly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{SharedTextMin: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	long := func(i int) string { return fmt.Sprintf("long text number %d %s", i, strings.Repeat("x", i%7)) }
	var a, b []string
	for i := range 60 {
		switch i % 4 {
		case 0:
			a = append(a, long(i%5)) // five texts, each held many times
		case 1:
			a = append(a, fmt.Sprintf("short %d", i))
		case 2:
			a = append(a, long(100+i)) // held once
		default:
			a = append(a, "")
		}
		b = append(b, long(i%3)) // held by a too
	}
	if _, err := st.Apply(textBatch("/j/a.jsonl", "a", a, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(textBatch("/j/b.jsonl", "b", b, true)); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{}
	for i, text := range append(append([]string(nil), a...), b...) {
		if text != "" {
			want[uint64(i+1)] = text
		}
	}
	checkTexts(t, st, want, "after two sessions")
	if got, distinct := len(storedValues(t, st)), 5+15; got != distinct {
		t.Fatalf("%d texts stored once; want %d (the distinct long ones)", got, distinct)
	}

	// Session a's journal rewritten: every long text it first held gets
	// another, one short text becomes long and one long one short.
	edited := append([]string(nil), a...)
	for i := range edited {
		switch {
		case i%4 == 0:
			edited[i] = long(1000 + i%5)
		case i == 1:
			edited[i] = long(2000)
		case i == 2:
			edited[i] = "now short"
		}
	}
	fb := textBatch("/j/a.jsonl", "a", edited, true)
	fb.Replace = true
	res, err := st.Apply(fb)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replaced == 0 {
		t.Fatalf("the rewrite replaced nothing (%+v)", res)
	}
	for i, text := range edited {
		if text != "" {
			want[uint64(i+1)] = text
		}
	}
	checkTexts(t, st, want, "after session a's journal was edited")

	if _, err := st.DropSession("a"); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		delete(want, uint64(i+1))
	}
	checkTexts(t, st, want, "after session a was dropped")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenWith(dir, Options{SharedTextMin: 16}); err != nil {
		t.Fatal(err)
	}
	checkTexts(t, st, want, "after a reopen")
	// A store opened with another threshold reads what was written with
	// this one.
	st.Close()
	if st, err = OpenWith(dir, Options{SharedTextMin: -1}); err != nil {
		t.Fatal(err)
	}
	checkTexts(t, st, want, "after a reopen that shares nothing")
}

// TestCompactStoresOnceTheLongTextsOfAnEarlierBuild: a store whose long
// texts were kept inline (as builds before decision 360 kept them, here a
// store that shares nothing) gets them stored once by Compact, each
// entry's text the same before and after, once: a second Compact moves
// nothing.
func TestCompactStoresOnceTheLongTextsOfAnEarlierBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := OpenWith(dir, Options{SharedTextMin: -1})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 9000 { // more than two chunks of ShareTexts
		if i%3 == 0 {
			texts = append(texts, fmt.Sprintf("a long text, one of seven: %d %s", i%7, strings.Repeat("y", 20)))
		} else {
			texts = append(texts, fmt.Sprintf("short %d", i))
		}
	}
	if _, err := st.Apply(textBatch("/j/old.jsonl", "old", texts, true)); err != nil {
		t.Fatal(err)
	}
	want := bySeq(texts)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenWith(dir, Options{SharedTextMin: 32}); err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	if n := len(storedValues(t, st)); n != 0 {
		t.Fatalf("before Compact, %d texts are stored once; want none", n)
	}
	if err := st.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(storedValues(t, st)); n != 7 {
		t.Fatalf("after Compact, %d texts are stored once; want the 7 distinct long ones", n)
	}
	checkTexts(t, st, want, "after Compact")
	if n, err := st.ShareTexts(t.Context()); err != nil || n != 0 {
		t.Fatalf("a second ShareTexts moved %d texts (%v); want none", n, err)
	}
}

// TestABriefStoreCollectsNoTableStatistics: a store opened for a one-shot
// command (Options.Brief) leaves its tables unopened until a read needs
// them, where a long-lived one collects their statistics in the
// background; both read what was written.
func TestABriefStoreCollectsNoTableStatistics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"one text", "another text"}
	if _, err := st.Apply(textBatch("/j/a.jsonl", "a", texts, true)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, brief := range []bool{false, true} {
		st, err := OpenWith(dir, Options{Brief: brief})
		if err != nil {
			t.Fatal(err)
		}
		// Collected, the statistics are complete within milliseconds of
		// the open here: a brief store is given a while to show it does
		// not collect them, a long-lived one a while longer to finish.
		wait := 5 * time.Second
		if brief {
			wait = 300 * time.Millisecond
		}
		deadline := time.Now().Add(wait)
		for !st.db.Metrics().Table.InitialStatsCollectionComplete && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := st.db.Metrics().Table.InitialStatsCollectionComplete; got == brief {
			t.Errorf("opened with Brief %v, the table statistics were collected: %v", brief, got)
		}
		if got, err := st.Text(2); err != nil || got != texts[1] {
			t.Errorf("opened with Brief %v, seq 2 reads %q (%v)", brief, got, err)
		}
		st.Close()
	}
}

// TestMetaReaderReadsWhatMetaIntoReads: records read through one
// iterator, in ascending order, descending, and at seqs that hold none,
// are those Store.MetaInto reads.
func TestMetaReaderReadsWhatMetaIntoReads(t *testing.T) {
	st := pushTexts(t, []string{"a", "", "b", "c", "", "d", "e", "f", "g", "h", "i", "j"})
	last := st.LastSeq()
	var seqs []uint64
	for seq := uint64(0); seq <= last+3; seq++ {
		seqs = append(seqs, seq)
	}
	for _, order := range []string{"ascending", "descending", "every third"} {
		r := st.NewMetaReader()
		var visit []uint64
		switch order {
		case "ascending":
			visit = seqs
		case "descending":
			for i := len(seqs) - 1; i >= 0; i-- {
				visit = append(visit, seqs[i])
			}
		default:
			for i := 0; i < len(seqs); i += 3 {
				visit = append(visit, seqs[i])
			}
		}
		for _, seq := range visit {
			var got, want Meta
			gerr := r.MetaInto(seq, &got)
			werr := st.MetaInto(seq, &want)
			if errors.Is(gerr, ErrNotFound) != errors.Is(werr, ErrNotFound) || (werr == nil) != (gerr == nil) {
				t.Fatalf("%s: seq %d: MetaReader says %v, MetaInto %v", order, seq, gerr, werr)
			}
			if werr == nil && (got.Seq != want.Seq || got.ID != want.ID || got.Session != want.Session) {
				t.Fatalf("%s: seq %d: MetaReader reads %+v, MetaInto %+v", order, seq, got, want)
			}
		}
		r.Close()
	}
}

// TestNewEntriesWriteNoDeletionsOfTheirTexts: entries stored under fresh
// seqs, with short, long and no searchable text, leave no deletion in the
// texts' and references' key ranges (each would be a tombstone that text
// lookups step over until a compaction drops it), while a rewritten
// journal, whose entries keep their seqs, still deletes what they held.
func TestNewEntriesWriteNoDeletionsOfTheirTexts(t *testing.T) {
	st, err := OpenWith(filepath.Join(t.TempDir(), "store"), Options{SharedTextMin: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	texts := []string{"short", strings.Repeat("long text ", 4), "", "tiny", strings.Repeat("other long ", 3), ""}
	if _, err := st.Apply(textBatch("/j/a.jsonl", "a", texts, true)); err != nil {
		t.Fatal(err)
	}
	if n := textDeletions(t, st); n != 0 {
		t.Fatalf("storing %d new entries wrote %d deletions of texts or references; want none", len(texts), n)
	}
	checkTexts(t, st, nonEmpty(texts), "after new entries")

	edited := []string{strings.Repeat("now long ", 3), "now short", "", "tiny", "", "added"}
	fb := textBatch("/j/a.jsonl", "a", edited, true)
	fb.Replace = true
	if _, err := st.Apply(fb); err != nil {
		t.Fatal(err)
	}
	if n := textDeletions(t, st); n == 0 {
		t.Fatal("a rewritten journal wrote no deletions of the texts its entries held")
	}
	checkTexts(t, st, nonEmpty(edited), "after the journal was rewritten")
}

// nonEmpty maps the non-empty texts of one batch of a new store to their
// seqs (from 1).
func nonEmpty(texts []string) map[uint64]string {
	want := bySeq(texts)
	for seq, text := range want {
		if text == "" {
			delete(want, seq)
		}
	}
	return want
}

// textDeletions counts the point deletions Pebble holds for keys of the
// inline texts and the references.
func textDeletions(t *testing.T, st *Store) int {
	t.Helper()
	n := 0
	for _, tag := range []byte{tagText, tagRef} {
		err := st.db.ScanInternal(context.Background(), block.CategoryUnknown, []byte{tag}, []byte{tag + 1},
			func(k *pebble.InternalKey, _ pebble.LazyValue, _ pebble.IteratorLevel) error {
				if k.Kind() == pebble.InternalKeyKindDelete || k.Kind() == pebble.InternalKeyKindSingleDelete {
					n++
				}
				return nil
			}, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}
