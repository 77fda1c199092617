package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pi-history/pi-history/journal"
)

// walkFirstUser is FirstUser's walk, asked of a copy of si that does not
// know the answer: what every store computed before sessions kept it.
func walkFirstUser(t *testing.T, st *Store, si *SessionInfo) uint64 {
	t.Helper()
	c := *si
	c.FirstUserKnown, c.FirstUser = false, 0
	seq, err := st.FirstUser(&c)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// firstUserEntry is an entry of kind k ("u" a user message, "a" an
// assistant one, "m" a model change) with id id.
func firstUserEntry(k, id string) *journal.Entry {
	e := &journal.Entry{ID: id, Raw: []byte(fmt.Sprintf(`{"id":%q,"k":%q}`, id, k)), Text: "text of " + id, Searchable: true}
	switch k {
	case "u":
		e.Type, e.Role = "message", "user"
	case "a":
		e.Type, e.Role = "message", "assistant"
	default:
		e.Type, e.Searchable, e.Text = "model_change", false, ""
	}
	return e
}

// TestASessionKeepsItsFirstUserMessageAsTheWalkFindsIt: the seq a session
// record keeps for its title is the one the walk of its records finds,
// however its entries came (pushed, from its file, in several batches,
// past TitleScan, replaced by another kind), and a record that does not
// know it (an older store's) still gets the walk's answer.
func TestASessionKeepsItsFirstUserMessageAsTheWalkFindsIt(t *testing.T) {
	many := func(k string, n int) []string {
		var ks []string
		for range n {
			ks = append(ks, k)
		}
		return ks
	}
	cases := []struct {
		name    string
		batches [][]string // kinds of the new entries, batch by batch
		pushed  bool       // the first batch is pushed, the file then holds every entry
		replace string     // the kind entry 0 is replaced by in a last batch
		want    int        // the index of the first user message, -1 none
		known   bool       // the record still knows it
	}{
		{name: "user message after the model change", batches: [][]string{{"m", "m", "u", "a", "u"}}, want: 2, known: true},
		{name: "no user message", batches: [][]string{{"m", "a", "a"}}, want: -1, known: true},
		{name: "user message in a later batch", batches: [][]string{{"m", "a"}, {"a", "u"}}, want: 3, known: true},
		{name: "user message past the entries looked at", batches: [][]string{append(many("a", TitleScan), "u")}, want: -1, known: true},
		{name: "user message the last looked at", batches: [][]string{append(many("a", TitleScan-1), "u")}, want: TitleScan - 1, known: true},
		{name: "pushed first, then the file", batches: [][]string{{"m", "u"}, {"a"}}, pushed: true, want: 1, known: true},
		{name: "the first entry replaced by a user message", batches: [][]string{{"a", "a", "u"}}, replace: "u", want: 0, known: false},
		{name: "the first user message replaced by another kind", batches: [][]string{{"u", "a", "u"}}, replace: "a", want: 2, known: false},
		{name: "replaced by the same kind", batches: [][]string{{"a", "u"}}, replace: "a", want: 1, known: true},
		{name: "the first user message edited", batches: [][]string{{"u", "a", "u"}}, replace: "u", want: 0, known: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openTemp(t)
			h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
			var all []*journal.Entry
			var offset int64
			for i, kinds := range tc.batches {
				var es []*journal.Entry
				for _, k := range kinds {
					es = append(es, firstUserEntry(k, fmt.Sprintf("e%d", len(all)+len(es))))
				}
				all = append(all, es...)
				if tc.pushed && i == 0 {
					if _, err := st.Push("s", h, es); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if tc.pushed {
					es = all // the file holds what was pushed too
				}
				offset += 100
				fb := &FileBatch{Path: "/x/s.jsonl", Header: h, Entries: es, State: FileState{Offset: offset}}
				if _, err := st.Apply(fb); err != nil {
					t.Fatal(err)
				}
			}
			if tc.replace != "" {
				e := firstUserEntry(tc.replace, "e0")
				e.Raw = append(e.Raw[:len(e.Raw)-1], `,"edited":true}`...)
				if e.Text != "" {
					e.Text = "edited " + e.Text
				}
				offset += 100
				if _, err := st.Apply(&FileBatch{Path: "/x/s.jsonl", Entries: []*journal.Entry{e}, State: FileState{Offset: offset}}); err != nil {
					t.Fatal(err)
				}
			}
			si, err := st.Session("s")
			if err != nil {
				t.Fatal(err)
			}
			var want uint64
			if tc.want >= 0 {
				m, err := st.Meta(uint64(tc.want) + 1) // one session: seqs from 1 in order
				if err != nil || !m.isUserMessage() {
					t.Fatalf("entry %d = %+v, %v; the case expects a user message there", tc.want, m, err)
				}
				want = m.Seq
			}
			if walked := walkFirstUser(t, st, si); walked != want {
				t.Fatalf("the walk finds seq %d, the case expects %d", walked, want)
			}
			got, err := st.FirstUser(si)
			if err != nil || got != want {
				t.Fatalf("FirstUser = %d, %v; want %d", got, err, want)
			}
			if si.FirstUserKnown != tc.known {
				t.Fatalf("record knows its first user message: %v, want %v (record %+v)", si.FirstUserKnown, tc.known, si)
			}
			// The title line kept with it is the message's as stored now.
			wantTitle := ""
			if tc.known && want != 0 {
				text, err := st.Text(want)
				if err != nil {
					t.Fatal(err)
				}
				wantTitle = journal.TitleLine(text, journal.TitleRunes)
			}
			if si.FirstTitle != wantTitle {
				t.Fatalf("record keeps the title %q, want %q", si.FirstTitle, wantTitle)
			}
		})
	}
}

// TestAnOlderSessionRecordIsWalked: a session record written before
// sessions kept their first user message reads as not knowing it, and
// FirstUser walks the records for it.
func TestAnOlderSessionRecordIsWalked(t *testing.T) {
	var si SessionInfo
	if err := json.Unmarshal([]byte(`{"id":"s","entries":3,"leafSeq":3}`), &si); err != nil {
		t.Fatal(err)
	}
	if si.FirstUserKnown || si.FirstUser != 0 {
		t.Fatalf("an older record decodes as %+v; want it not to know its first user message", si)
	}
	st := openTemp(t)
	h := &journal.Header{ID: "s", Version: 3, Raw: []byte(`{"type":"session","id":"s"}`)}
	es := []*journal.Entry{firstUserEntry("m", "e0"), firstUserEntry("a", "e1"), firstUserEntry("u", "e2")}
	if _, err := st.Apply(&FileBatch{Path: "/x/s.jsonl", Header: h, Entries: es, State: FileState{Offset: 10}}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.FirstUser(&si); err != nil || got != 3 {
		t.Fatalf("FirstUser of a record that does not know = %d, %v; want 3 (walked)", got, err)
	}
}

// TestSessionRecordsThatDoNotKnowAreCompletedOnce: KnowFirstUsers gives
// records written before sessions kept their first user message the seq
// the walk finds (a user message, none) and its title line, gives records
// that knew the seq but not the title the title, and after a complete
// pass returns at once.
func TestSessionRecordsThatDoNotKnowAreCompletedOnce(t *testing.T) {
	st := openTemp(t)
	want := map[string]uint64{}
	for i, kinds := range [][]string{{"m", "a", "u"}, {"m", "a"}, {"u"}} {
		sid := fmt.Sprintf("s%d", i)
		h := &journal.Header{ID: sid, Version: 3, Raw: []byte(`{"type":"session","id":"` + sid + `"}`)}
		var es []*journal.Entry
		for j, k := range kinds {
			es = append(es, firstUserEntry(k, fmt.Sprintf("%s-e%d", sid, j)))
		}
		if _, err := st.Apply(&FileBatch{Path: "/x/" + sid + ".jsonl", Header: h, Entries: es, State: FileState{Offset: 10}}); err != nil {
			t.Fatal(err)
		}
		si, err := st.Session(sid)
		if err != nil {
			t.Fatal(err)
		}
		want[sid] = si.FirstUser
		if sid == "s2" {
			// What the build before titles wrote: the seq, no title.
			si.FirstTitle = ""
			b, _ := json.Marshal(si)
			if err := st.db.Set(sessionKey(tagSession, sid), b, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// What an older version wrote: no first user message.
		si.FirstUser, si.FirstUserKnown = 0, false
		b, _ := json.Marshal(si)
		if err := st.db.Set(sessionKey(tagSession, sid), b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if want["s0"] == 0 || want["s1"] != 0 || want["s2"] == 0 {
		t.Fatalf("the sessions' first user messages as kept = %v; the test expects s0 and s2 to have one", want)
	}
	n, err := st.KnowFirstUsers(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("KnowFirstUsers = %d, %v; want the 3 records that did not know (2 the seq, 1 the title) completed", n, err)
	}
	titles := map[string]string{"s0": "text of s0-e2", "s1": "", "s2": "text of s2-e0"}
	for sid, seq := range want {
		si, err := st.Session(sid)
		if err != nil || !si.FirstUserKnown || si.FirstUser != seq || si.FirstTitle != titles[sid] {
			t.Fatalf("session %s after KnowFirstUsers: %+v, %v; want it to know seq %d, titled %q", sid, si, err, seq, titles[sid])
		}
	}
	if n, err := st.KnowFirstUsers(context.Background()); err != nil || n != 0 {
		t.Fatalf("KnowFirstUsers again = %d, %v; want nothing left to do", n, err)
	}
	// Once a pass completed every record, later ones read none: a record
	// that does not know (one an older version rewrote) is left to walk.
	si, _ := st.Session("s0")
	si.FirstUser, si.FirstUserKnown = 0, false
	b, _ := json.Marshal(si)
	if err := st.db.Set(sessionKey(tagSession, "s0"), b, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := st.KnowFirstUsers(context.Background()); err != nil || n != 0 {
		t.Fatalf("KnowFirstUsers after a complete pass = %d, %v; want it to return at once", n, err)
	}
	if si, _ := st.Session("s0"); si.FirstUserKnown {
		t.Fatal("a pass ran after a complete one: the record was completed again")
	}
	if got, err := st.FirstUser(si); err != nil || got != want["s0"] {
		t.Fatalf("FirstUser of a record left to walk = %d, %v; want %d", got, err, want["s0"])
	}
}
