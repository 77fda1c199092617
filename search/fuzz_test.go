package search

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzDecodeCursor: any string is either refused with a cursor error or
// decodes to the seq it was made from; nothing panics.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(queryHash("a"), 42), uint64(42))
	f.Add("", uint64(0))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAA", uint64(1))
	f.Add("!!!", uint64(7))
	f.Fuzz(func(t *testing.T, s string, seq uint64) {
		qh := queryHash("a")
		if got, err := decodeCursor(encodeCursor(qh, seq), qh); err != nil || got != seq {
			t.Fatalf("round trip of %d: %d %v", seq, got, err)
		}
		got, err := decodeCursor(s, qh)
		if err != nil {
			if se, ok := err.(*Error); !ok || se.Param != "cursor" {
				t.Fatalf("cursor error of the wrong kind: %v", err)
			}
			return
		}
		if encodeCursor(qh, got) != s {
			t.Fatalf("accepted a cursor that does not re-encode the same: %q", s)
		}
	})
}

// FuzzSearchRequest sends arbitrary requests to a small real store: each
// is answered or refused with a *search.Error; nothing panics, and every
// hit really contains the needle.
func FuzzSearchRequest(f *testing.F) {
	f.Add("alpha", "all", "", "", 0, 5, false, "")
	f.Add("a", "branch", "fz-one", "", 1, 1, true, "")
	f.Add("\x00", "session", "fz-one", "zzz", -1, 2000, false, "x")
	f.Add(strings.Repeat("é", 3000), "lineage", "nope", "", 3, 0, true, "AAAA")
	e := newEnvF(f)
	f.Fuzz(func(t *testing.T, needle, scope, session, leaf string, window, limit int, newest bool, cursor string) {
		req := &Request{Needle: needle, Scope: Scope(scope), Session: session, Leaf: leaf, Window: window, Limit: limit, NewestFirst: newest, Cursor: cursor}
		resp, err := e.eng.Search(context.Background(), req)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error that is not a *search.Error: %v", err)
			}
			return
		}
		for _, h := range resp.Hits {
			text, _ := e.st.Text(h.Seq)
			if !strings.Contains(text, needle) {
				t.Fatalf("hit %s does not contain %q", h.Entry, needle)
			}
		}
	})
}

func newEnvF(f *testing.F) *env {
	dir := f.TempDir()
	e := newEnvDir(f, dir)
	r := rand.New(rand.NewPCG(11, 12))
	e.importFile(f, writeJournal(f, dir, "fz-one", r, 300, ""))
	if _, err := e.ix.CatchUp(context.Background(), nil); err != nil {
		f.Fatal(err)
	}
	return e
}

// FuzzFinder: the finder agrees with bytes.Index for any text and needle.
func FuzzFinder(f *testing.F) {
	f.Add([]byte("the quick brown fox jumps over the lazy dog, then the end"), []byte("the "))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"), []byte("aab"))
	f.Add([]byte("\x00\x00\xff\xfe\x00"), []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, text, needle []byte) {
		if len(needle) == 0 || len(text) > 4096 {
			return
		}
		checkFinder(t, text, needle)
	})
}
