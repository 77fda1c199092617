package notebook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-history/pi-history/journal"
)

func TestReadRebuildsNotebookPerBranch(t *testing.T) {
	s := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	rev2 := secs("Task", "Make the importer resumable.", "State", "Cursor design drafted; untested.",
		"Next", "Read ingest/importer.go.", "Decisions", "Keep the CLI flags (user).")
	tests := []struct {
		name       string
		leaf       string
		wantEntry  string
		wantRev    int
		wantSecs   Sections
		wantTokens *int
		review     bool
		precedes   bool
	}{
		{name: "no notebook before the first write", leaf: "a0000003"},
		{name: "first revision right after its write", leaf: "b0000001", wantEntry: "b0000001", wantRev: 1,
			wantSecs:   secs("Task", "Make the importer resumable.", "State", "untested: nothing changed yet.", "Next", "Read ingest/importer.go."),
			wantTokens: intp(1020)},
		{name: "a later leaf before rev 2 still sees rev 1", leaf: "a0000005", wantEntry: "b0000001", wantRev: 1,
			wantSecs:   secs("Task", "Make the importer resumable.", "State", "untested: nothing changed yet.", "Next", "Read ingest/importer.go."),
			wantTokens: intp(1020)},
		{name: "new section appended after existing ones", leaf: "c0000003", wantEntry: "b0000002", wantRev: 2, wantSecs: rev2,
			wantTokens: intp(30000)},
		{name: "review-only record past a compaction, malformed later record skipped", leaf: "a000000a", wantEntry: "b0000003",
			wantRev: 3, wantSecs: rev2, wantTokens: intp(70000), review: true, precedes: true},
		{name: "sibling branch forked at rev 1 has its own rev 2; bad version skipped", leaf: "c0000006", wantEntry: "b0000004",
			wantRev: 2, wantSecs: secs("Task", "Resume only the Pebble import.", "Refs", "[history entry=a0000010]")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Read(s.path(t, tc.leaf))
			if st.EntryID != tc.wantEntry || st.Revision != tc.wantRev {
				t.Fatalf("entry %q rev %d, want %q rev %d", st.EntryID, st.Revision, tc.wantEntry, tc.wantRev)
			}
			if st.Exists() != (tc.wantEntry != "") {
				t.Errorf("Exists() = %v", st.Exists())
			}
			want := tc.wantSecs
			if want == nil {
				want = Sections{}
			}
			if !reflect.DeepEqual(st.Sections, want) {
				t.Errorf("sections\n got %#v\nwant %#v", st.Sections, want)
			}
			if !reflect.DeepEqual(st.ReviewedTokens, tc.wantTokens) {
				t.Errorf("reviewedTokens %v, want %v", st.ReviewedTokens, tc.wantTokens)
			}
			if st.ReviewOnly != tc.review || st.PrecedesCompaction != tc.precedes {
				t.Errorf("reviewOnly %v precedesCompaction %v, want %v %v", st.ReviewOnly, st.PrecedesCompaction, tc.review, tc.precedes)
			}
			b, tok := st.Sections.Measure()
			if st.Bytes != b || st.TokensEstimate != tok {
				t.Errorf("size %d/%d, want %d/%d", st.Bytes, st.TokensEstimate, b, tok)
			}
		})
	}
}

// The shared fixture is a real journal written by Pi's SessionManager: its
// notebook entry sits on the abandoned branch only.
func TestReadSharedTreeFixture(t *testing.T) {
	file := filepath.Join(sharedDir, "fixtures", "pi", "tree.jsonl")
	if _, err := os.Stat(file); err != nil {
		t.Skipf("shared fixtures absent (%v)", err)
	}
	s := loadJournal(t, file)
	tests := []struct {
		name    string
		leaf    string
		wantRev int
		wantSec []string
	}{
		{name: "abandoned leaf after the notebook write", leaf: "9e0cdd09", wantRev: 1, wantSec: []string{"Task", "State", "Next"}},
		{name: "notebook entry itself", leaf: "3f13fe4d", wantRev: 1, wantSec: []string{"Task", "State", "Next"}},
		{name: "branch point before the write", leaf: "cdf049ec"},
		{name: "active leaf on the other branch", leaf: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := s.path(t, tc.leaf)
			st := Read(path)
			if st.Revision != tc.wantRev || !reflect.DeepEqual(st.Sections.Names(), orEmpty(tc.wantSec)) {
				t.Fatalf("rev %d sections %v, want rev %d %v", st.Revision, st.Sections.Names(), tc.wantRev, tc.wantSec)
			}
			if tc.wantRev > 0 {
				if st.ReviewedThrough != "680f99a4" || st.ReviewedTokens == nil || *st.ReviewedTokens != 900 {
					t.Errorf("review marker %q %v", st.ReviewedThrough, st.ReviewedTokens)
				}
				// The journal reader's own view of the sections agrees.
				var nb *journal.Entry
				for _, e := range path {
					if e.ID == "3f13fe4d" {
						nb = e
					}
				}
				data, _ := customData(nb, NotebookType)
				got := journal.NotebookSections(data)
				for i, sec := range got {
					if st.Sections[i].Name != sec.Name || st.Sections[i].Text != sec.Text {
						t.Errorf("section %d: %v vs journal %v", i, st.Sections[i], sec)
					}
				}
			}
			if revs := Revisions(path); len(revs) != min(tc.wantRev, 1) {
				t.Errorf("%d revisions", len(revs))
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestWriteOperations(t *testing.T) {
	base := mustWrite(t, chain(t), WriteRequest{Sections: secs("Next", "n1", "Task", "t1", "Scratch", "s1")})
	tests := []struct {
		name    string
		req     WriteRequest
		want    Sections
		changed bool
	}{
		{name: "creating puts canonical sections first in canonical order",
			req: WriteRequest{Sections: secs("Mine", "m", "Refs", "r", "Task", "t")}, want: secs("Task", "t", "Next", "n1", "Scratch", "s1", "Refs", "r", "Mine", "m"), changed: true},
		{name: "replacing one section leaves the others and their order",
			req: WriteRequest{Sections: secs("Next", "n2")}, want: secs("Task", "t1", "Next", "n2", "Scratch", "s1"), changed: true},
		{name: "empty text deletes a section", req: WriteRequest{Sections: secs("Scratch", "")}, want: secs("Task", "t1", "Next", "n1"), changed: true},
		{name: "white space only deletes too", req: WriteRequest{Sections: secs("Scratch", " \n\t")}, want: secs("Task", "t1", "Next", "n1"), changed: true},
		{name: "deleting an absent section is a no-op", req: WriteRequest{Sections: secs("Nope", "")}, want: secs("Task", "t1", "Next", "n1", "Scratch", "s1")},
		{name: "prune and add in one call", req: WriteRequest{Sections: secs("Scratch", "", "State", "s")},
			want: secs("Task", "t1", "Next", "n1", "State", "s"), changed: true},
		{name: "texts are trimmed", req: WriteRequest{Sections: secs("Next", "  n3 \n")}, want: secs("Task", "t1", "Next", "n3", "Scratch", "s1"), changed: true},
		{name: "replaceAll keeps exactly the given sections, canonical first",
			req: WriteRequest{ReplaceAll: true, Sections: secs("Zeta", "z", "State", "s", "Task", "t2")}, want: secs("Task", "t2", "State", "s", "Zeta", "z"), changed: true},
		{name: "replaceAll ignores deletions of sections it drops anyway",
			req: WriteRequest{ReplaceAll: true, Sections: secs("Next", "", "Task", "t1")}, want: secs("Task", "t1"), changed: true},
		{name: "reviewed keeps the sections", req: WriteRequest{Reviewed: true}, want: secs("Task", "t1", "Next", "n1", "Scratch", "s1")},
		{name: "a repeated name in the request: last text wins",
			req: WriteRequest{Sections: secs("Refs", "a", "Refs", "b")}, want: secs("Task", "t1", "Next", "n1", "Scratch", "s1", "Refs", "b"), changed: true},
		{name: "matching expected revision", req: WriteRequest{ExpectedRevision: intp(1), Sections: secs("Next", "n4")},
			want: secs("Task", "t1", "Next", "n4", "Scratch", "s1"), changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, rec, err := Write(base, tc.req, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.Sections, tc.want) {
				t.Fatalf("sections\n got %v\nwant %v", rec.Sections, tc.want)
			}
			if res.Revision != 2 || rec.Revision != 2 || rec.Version != NotebookVersion {
				t.Errorf("revision %d/%d version %d", res.Revision, rec.Revision, rec.Version)
			}
			if res.Changed != tc.changed {
				t.Errorf("changed %v, want %v", res.Changed, tc.changed)
			}
			if rec.ReviewOnly != tc.req.Reviewed {
				t.Errorf("reviewOnly %v", rec.ReviewOnly)
			}
			// The state after appending the record is what the result reported.
			st := Read(appendCustom(t, base, NotebookType, rec))
			if st.Revision != res.Revision || st.Bytes != res.Bytes || st.TokensEstimate != res.TokensEstimate ||
				res.RemainingBytes != DefaultMaxBytes-res.Bytes || !reflect.DeepEqual(st.Sections, tc.want) {
				t.Errorf("state after append %+v disagrees with result %+v", st, res)
			}
		})
	}
}

func TestWriteFirstRevisionAndReviewMarker(t *testing.T) {
	p := chain(t)
	res, rec, err := Write(p, WriteRequest{Sections: secs("Task", "t"), ReviewedTokens: intp(5000), ExpectedRevision: intp(0)}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 1 || rec.ReviewedThrough != "00000002" || *rec.ReviewedTokens != 5000 {
		t.Fatalf("res %+v rec %+v", res, rec)
	}
	_, rec, err = Write(p, WriteRequest{Sections: secs("Task", "t"), ReviewedThrough: "00000002"}, Limits{})
	if err != nil || rec.ReviewedThrough != "00000002" || rec.ReviewedTokens != nil {
		t.Fatalf("explicit marker: %v %+v", err, rec)
	}
	got, _ := json.Marshal(rec)
	if want := `{"version":1,"revision":1,"sections":{"Task":"t"},"reviewedThrough":"00000002","reviewedTokens":null}`; string(got) != want {
		t.Errorf("record JSON\n got %s\nwant %s", got, want)
	}
	// The marker is the assistant message that called (docs/spec-notes.md,
	// "The review marker"): any other entry would count as reviewed what the
	// model never read.
	var inv *InvalidError
	if _, _, err := Write(p, WriteRequest{Sections: secs("Task", "t"), ReviewedThrough: "00000001"}, Limits{}); !errors.As(err, &inv) || inv.Field != "reviewedThrough" {
		t.Errorf("a user message as the marker: %v, want an InvalidError on reviewedThrough", err)
	}
}

func TestWriteRejections(t *testing.T) {
	base := mustWrite(t, chain(t), WriteRequest{Sections: secs("Task", "t", "State", "s", "Next", "n", "Decisions", "d", "Refs", "r", "A", "a", "B", "b", "C", "c")})
	big := strings.Repeat("x", DefaultMaxBytes)
	tests := []struct {
		name   string
		path   []*journal.Entry
		req    WriteRequest
		limits Limits
		check  func(t *testing.T, err error)
	}{
		{name: "ninth section", req: WriteRequest{Sections: secs("D", "d")}, check: wantInvalid("at most 8")},
		{name: "ninth section in replaceAll", req: WriteRequest{ReplaceAll: true, Sections: secs("A", "1", "B", "2", "C", "3", "D", "4", "E", "5", "F", "6", "G", "7", "H", "8", "I", "9")},
			check: wantInvalid("9 sections")},
		{name: "bytes over the ceiling", req: WriteRequest{Sections: secs("A", big)}, limits: Limits{MaxTokens: 1 << 20}, check: wantLimit("bytes", 16384)},
		{name: "tokens over a configured ceiling", req: WriteRequest{Sections: secs("A", strings.Repeat("y", 500))}, limits: Limits{MaxTokens: 100},
			check: wantLimit("tokens", 100)},
		{name: "both ceilings reported", req: WriteRequest{ReplaceAll: true, Sections: secs("Task", big)}, check: func(t *testing.T, err error) {
			var le *LimitError
			if !errors.As(err, &le) || len(le.Excess) != 2 || le.Excess[0].What != "bytes" || le.Excess[1].What != "tokens" {
				t.Fatalf("%v", err)
			}
			if want := len("## Task\n"); le.Excess[0].Over() != want {
				t.Errorf("over by %d bytes, want %d", le.Excess[0].Over(), want)
			}
		}},
		{name: "stale revision", req: WriteRequest{ExpectedRevision: intp(0), Sections: secs("Task", "t2")}, check: func(t *testing.T, err error) {
			var se *StaleError
			if !errors.As(err, &se) || se.Current != 1 || se.Expected != 0 || !strings.Contains(err.Error(), "revision 1 is current") {
				t.Fatalf("%v", err)
			}
		}},
		{name: "empty section name", req: WriteRequest{Sections: secs("", "x")}, check: wantInvalid("empty")},
		{name: "section name starting with a digit", req: WriteRequest{Sections: secs("1st", "x")}, check: wantInvalid("start with a letter")},
		{name: "section name with a newline", req: WriteRequest{Sections: secs("A\nB", "x")}, check: wantInvalid("only letters")},
		{name: "section name too long", req: WriteRequest{Sections: secs(strings.Repeat("a", 33), "x")}, check: wantInvalid("33 characters")},
		{name: "invalid UTF-8 text", req: WriteRequest{Sections: secs("Task", "a\xffb")}, check: wantInvalid("UTF-8")},
		{name: "invalid UTF-8 name", req: WriteRequest{Sections: secs("T\xff", "x")}, check: wantInvalid("UTF-8")},
		{name: "nothing to write", req: WriteRequest{}, check: wantInvalid("nothing to write")},
		{name: "reviewed with sections", req: WriteRequest{Reviewed: true, Sections: secs("Task", "t")}, check: wantInvalid("cannot be combined")},
		{name: "reviewed without a notebook", path: chain(t), req: WriteRequest{Reviewed: true}, check: wantInvalid("no notebook")},
		{name: "deleting the last section", path: mustWrite(t, chain(t), WriteRequest{Sections: secs("Task", "t")}),
			req: WriteRequest{Sections: secs("Task", "")}, check: wantInvalid("empty")},
		{name: "replaceAll with nothing", req: WriteRequest{ReplaceAll: true, Sections: Sections{}}, check: wantInvalid("empty")},
		{name: "review marker not on the branch", req: WriteRequest{Sections: secs("Task", "t"), ReviewedThrough: "deadbeef"}, check: wantInvalid("not on this branch")},
		{name: "negative tokens", req: WriteRequest{Sections: secs("Task", "t"), ReviewedTokens: intp(-1)}, check: wantInvalid("negative")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path
			if p == nil {
				p = base
			}
			before := Read(p)
			res, rec, err := Write(p, tc.req, tc.limits)
			if err == nil {
				t.Fatalf("accepted: %+v", res)
			}
			if !reflect.DeepEqual(rec, Record{}) || res != (Result{}) {
				t.Errorf("a rejected write returned data: %+v %+v", res, rec)
			}
			if !reflect.DeepEqual(Read(p), before) {
				t.Error("state changed")
			}
			tc.check(t, err)
		})
	}
}

func wantInvalid(substr string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ie *InvalidError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), substr) {
			t.Fatalf("want *InvalidError containing %q, got %T %v", substr, err, err)
		}
	}
}

func wantLimit(what string, limit int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var le *LimitError
		if !errors.As(err, &le) || len(le.Excess) != 1 || le.Excess[0].What != what || le.Excess[0].Limit != limit || le.Excess[0].Over() <= 0 {
			t.Fatalf("want *LimitError on %s/%d, got %T %v", what, limit, err, err)
		}
		if !strings.Contains(err.Error(), "over by") || !strings.Contains(err.Error(), "previous state stands") {
			t.Errorf("message does not report the excess: %v", err)
		}
	}
}

func TestWriteLimitBoundaries(t *testing.T) {
	header := len("## A\n")
	tests := []struct {
		name   string
		text   string
		limits Limits
		ok     bool
	}{
		{name: "exactly 16 KiB fits", text: strings.Repeat("x", DefaultMaxBytes-header), ok: true},
		{name: "multi-byte characters count their UTF-8 bytes", text: strings.Repeat("é", (DefaultMaxBytes-header+1)/2)},
		{name: "one byte over 16 KiB", text: strings.Repeat("x", DefaultMaxBytes-header+1), limits: Limits{MaxTokens: 1 << 20}},
		{name: "exactly 4096 tokens fits", text: strings.Repeat("x", 4096*4-header), ok: true},
		{name: "one character over 4096 tokens", text: strings.Repeat("x", 4096*4-header+1), limits: Limits{MaxBytes: 1 << 20}},
		{name: "astral characters count two UTF-16 units", text: strings.Repeat("😀", (400-header)/2), limits: Limits{MaxTokens: 100}, ok: true},
		{name: "astral characters over", text: strings.Repeat("😀", (400-header)/2+1), limits: Limits{MaxTokens: 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := Write(chain(t), WriteRequest{Sections: secs("A", tc.text)}, tc.limits)
			if (err == nil) != tc.ok {
				t.Fatalf("ok=%v, err %v (res %+v)", tc.ok, err, res)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"日本語", 1}, {"😀😀", 1}, {"😀😀a", 2}} {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseWriteRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Sections
		wantErr string
	}{
		{name: "keeps key order", body: `{"sections":{"Next":"n","Task":"t","Zed":"z"}}`, want: secs("Next", "n", "Task", "t", "Zed", "z")},
		{name: "repeated key keeps first position, last value", body: `{"sections":{"A":"1","B":"2","A":"3"}}`, want: secs("A", "3", "B", "2")},
		{name: "non-string section", body: `{"sections":{"Task":5}}`, wantErr: `section "Task": value is not a string`},
		{name: "null section", body: `{"sections":{"Task":null}}`, wantErr: "not a string"},
		{name: "sections not an object", body: `{"sections":["Task"]}`, wantErr: "must be an object"},
		{name: "invalid UTF-8", body: "{\"sections\":{\"Task\":\"\xff\"}}", wantErr: "UTF-8"},
		{name: "unknown field", body: `{"section":{}}`, wantErr: "unknown field"},
		{name: "trailing data", body: `{"reviewed":true} {}`, wantErr: "trailing"},
		{name: "not JSON", body: `notes`, wantErr: "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseWriteRequest([]byte(tc.body))
			if tc.wantErr != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want *InvalidError %q, got %T %v", tc.wantErr, err, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(req.Sections, tc.want) {
				t.Fatalf("%v %v", req.Sections, err)
			}
		})
	}
}

func TestRecordRoundTripsThroughJSON(t *testing.T) {
	rec := Record{Version: 1, Revision: 7, Sections: secs("Task", "a <b> & \"c\"\n", "Zed", "日本"), ReviewedThrough: "abc", ReviewedTokens: intp(42), ReviewOnly: true}
	data, err := rec.MarshalJSON() // json.Marshal would add HTML escapes; an Encoder with SetEscapeHTML(false) does not
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"revision":7,"sections":{"Task":"a <b> & \"c\"\n","Zed":"日本"},"reviewedThrough":"abc","reviewedTokens":42,"reviewOnly":true}`; string(data) != want {
		t.Errorf("record JSON\n got %s\nwant %s", data, want)
	}
	back, err := ParseRecord(data)
	if err != nil || !reflect.DeepEqual(back, rec) {
		t.Fatalf("%+v %v", back, err)
	}
	for _, bad := range []string{`[]`, `{"version":0,"revision":1,"sections":{}}`, `{"version":1,"revision":1.5,"sections":{}}`,
		`{"version":1,"revision":1}`, `{"version":1,"revision":1,"sections":{"A":1}}`, `{"version":1,"revision":1,"sections":{},"reviewedThrough":3}`,
		`{"version":1,"revision":1,"sections":{},"reviewedTokens":"x"}`} {
		if _, err := ParseRecord([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestRevisionsTimeline(t *testing.T) {
	s := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	tests := []struct {
		name string
		leaf string
		want []Revision
	}{
		{name: "linear branch with a review", leaf: "a000000a", want: []Revision{
			{Revision: 1, EntryID: "b0000001", Timestamp: "2026-12-01T10:00:03.000Z", ReviewedThrough: "a0000003",
				Sections: []string{"Task", "State", "Next"}, Added: []string{"Task", "State", "Next"}},
			{Revision: 2, EntryID: "b0000002", Timestamp: "2026-12-01T10:00:06.000Z", ReviewedThrough: "a0000005",
				Sections: []string{"Task", "State", "Next", "Decisions"}, Added: []string{"Decisions"}, Changed: []string{"State"}},
			{Revision: 3, EntryID: "b0000003", Timestamp: "2026-12-01T10:00:12.000Z", ReviewedThrough: "a0000007", ReviewOnly: true,
				Sections: []string{"Task", "State", "Next", "Decisions"}},
		}},
		{name: "sibling branch replaced everything", leaf: "", want: []Revision{
			{Revision: 1, EntryID: "b0000001", Timestamp: "2026-12-01T10:00:03.000Z", ReviewedThrough: "a0000003",
				Sections: []string{"Task", "State", "Next"}, Added: []string{"Task", "State", "Next"}},
			{Revision: 2, EntryID: "b0000004", Timestamp: "2026-12-01T10:00:21.000Z", ReviewedThrough: "a0000011",
				Sections: []string{"Task", "Refs"}, Added: []string{"Refs"}, Changed: []string{"Task"}, Removed: []string{"State", "Next"}},
		}},
		{name: "no notebook yet", leaf: "a0000002", want: []Revision{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Revisions(s.path(t, tc.leaf))
			for i := range got {
				got[i].Bytes, got[i].TokensEstimate = 0, 0
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Every revision's size in the timeline equals Read's at that point.
func TestRevisionsSizesMatchRead(t *testing.T) {
	s := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	for _, r := range Revisions(s.path(t, "a000000a")) {
		st := Read(s.path(t, r.EntryID))
		if st.Bytes != r.Bytes || st.TokensEstimate != r.TokensEstimate || !utf8.ValidString(st.Sections.Render()) {
			t.Errorf("rev %d: %d/%d vs %d/%d", r.Revision, r.Bytes, r.TokensEstimate, st.Bytes, st.TokensEstimate)
		}
	}
}
