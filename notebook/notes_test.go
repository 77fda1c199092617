package notebook

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const mainSession = "0199aaaa-0000-7000-8000-000000000001"
const childSession = "0199bbbb-0000-7000-8000-000000000002"

func TestNotesRebuiltPerBranch(t *testing.T) {
	s := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	tests := []struct {
		name string
		leaf string
		want map[string]string // name → content
		refs map[string]string // name → entry of the last change
	}{
		{name: "before any note", leaf: "b0000002", want: map[string]string{}},
		{name: "write then append joins with one newline", leaf: "c0000002",
			want: map[string]string{"plan": "1. read the importer\n2. add a cursor"}, refs: map[string]string{"plan": "c0000002"}},
		{name: "two notes", leaf: "c0000003", want: map[string]string{"plan": "1. read the importer\n2. add a cursor", "todo": "flaky test in ingest"}},
		{name: "delete removes a note, across a compaction", leaf: "a000000a", want: map[string]string{"plan": "1. read the importer\n2. add a cursor"}},
		{name: "sibling branch: own note, unknown op ignored", leaf: "", want: map[string]string{"todo": "B-only todo"},
			refs: map[string]string{"todo": "c0000005"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			notes := Notes(s.branch(t, tc.leaf))
			got := map[string]string{}
			for _, n := range notes {
				got[n.Name] = n.Content
				if n.Characters != len([]rune(n.Content)) || n.Ref != Ref(mainSession, n.EntryID) || n.UpdatedAt == "" {
					t.Errorf("note %+v", n)
				}
				if e, ok := tc.refs[n.Name]; ok && n.EntryID != e {
					t.Errorf("%s last changed by %s, want %s", n.Name, n.EntryID, e)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

// replay appends a note record when there is one.
func replay(t *testing.T, b Branch, rec *NoteRecord) Branch {
	t.Helper()
	if rec != nil {
		b.Path = appendCustom(t, b.Path, NoteType, rec)
	}
	return b
}

func TestNoteOperations(t *testing.T) {
	start := Branch{Session: "s-test", Path: chain(t)}
	_, rec, err := WriteNote(start, "log", "first")
	if err != nil {
		t.Fatal(err)
	}
	base := replay(t, start, rec)
	_, rec, _ = WriteNote(base, "nl", "ends with newline\n")
	base = replay(t, base, rec)

	tests := []struct {
		name      string
		op        func(Branch) (NoteResult, *NoteRecord, error)
		note      string
		want      string // content afterwards; "<gone>" when deleted
		unchanged bool
	}{
		{name: "write replaces", op: func(b Branch) (NoteResult, *NoteRecord, error) { return WriteNote(b, "log", "second") }, note: "log", want: "second"},
		{name: "write creates", op: func(b Branch) (NoteResult, *NoteRecord, error) { return WriteNote(b, "new", "x") }, note: "new", want: "x"},
		{name: "write may empty a note", op: func(b Branch) (NoteResult, *NoteRecord, error) { return WriteNote(b, "log", "") }, note: "log", want: ""},
		{name: "append inserts one newline", op: func(b Branch) (NoteResult, *NoteRecord, error) { return AppendNote(b, "log", "more") }, note: "log", want: "first\nmore"},
		{name: "append after a trailing newline adds none", op: func(b Branch) (NoteResult, *NoteRecord, error) { return AppendNote(b, "nl", "more") }, note: "nl", want: "ends with newline\nmore"},
		{name: "append creates a missing note", op: func(b Branch) (NoteResult, *NoteRecord, error) { return AppendNote(b, "fresh", "a") }, note: "fresh", want: "a"},
		{name: "append of nothing changes nothing", op: func(b Branch) (NoteResult, *NoteRecord, error) { return AppendNote(b, "log", "") }, note: "log", want: "first", unchanged: true},
		{name: "delete", op: func(b Branch) (NoteResult, *NoteRecord, error) { return DeleteNote(b, "log") }, note: "log", want: "<gone>"},
		{name: "copy a note of the same branch under a new name", op: func(b Branch) (NoteResult, *NoteRecord, error) {
			return CopyNote([]Branch{b}, Notes(b)[0].Ref, "copy")
		}, note: "copy", want: "first"},
		{name: "a 64-character name", op: func(b Branch) (NoteResult, *NoteRecord, error) {
			return WriteNote(b, strings.Repeat("n", 64), "ok")
		}, note: strings.Repeat("n", 64), want: "ok"},
		{name: "content of exactly 64,000 characters", op: func(b Branch) (NoteResult, *NoteRecord, error) {
			return WriteNote(b, "big", strings.Repeat("é", MaxNoteChars))
		}, note: "big", want: strings.Repeat("é", MaxNoteChars)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, rec, err := tc.op(base)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Saved || res.Unchanged != tc.unchanged || (rec == nil) != tc.unchanged {
				t.Fatalf("result %+v record %+v", res, rec)
			}
			after := replay(t, base, rec)
			n, err := ReadNote(after, tc.note, 0, 0)
			if tc.want == "<gone>" {
				var nf *NotFoundError
				if !errors.As(err, &nf) {
					t.Fatalf("still there: %+v %v", n, err)
				}
				return
			}
			if err != nil || n.Content != tc.want || n.TotalCharacters != res.Characters {
				t.Fatalf("read %+v %v; result %+v", n, err, res)
			}
		})
	}
}

func TestNoteRejections(t *testing.T) {
	b := Branch{Session: "s-test", Path: chain(t)}
	_, rec, _ := WriteNote(b, "x", strings.Repeat("a", MaxNoteChars-1))
	b = replay(t, b, rec)
	full := b
	for i := 0; i < MaxNotes-1; i++ {
		_, rec, err := WriteNote(full, fmt.Sprintf("n%03d", i), "·")
		if err != nil {
			t.Fatal(err)
		}
		full = replay(t, full, rec)
	}
	if len(Notes(full)) != MaxNotes {
		t.Fatalf("%d notes", len(Notes(full)))
	}
	tests := []struct {
		name  string
		op    func() (NoteResult, *NoteRecord, error)
		check func(*testing.T, error)
	}{
		{name: "empty name", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(b, "", "c") }, check: wantInvalid("is empty")},
		{name: "65-character name", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(b, strings.Repeat("n", 65), "c") }, check: wantInvalid("65 characters")},
		{name: "control character in name", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(b, "a\nb", "c") }, check: wantInvalid("control")},
		{name: "invalid UTF-8 content", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(b, "a", "\xfe") }, check: wantInvalid("UTF-8")},
		{name: "invalid UTF-8 appended text", op: func() (NoteResult, *NoteRecord, error) { return AppendNote(b, "a", "\xfe") }, check: wantInvalid("UTF-8")},
		{name: "content of 64,001 characters", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(b, "a", strings.Repeat("a", MaxNoteChars+1)) },
			check: wantNoteLimit("characters", MaxNoteChars, 1)},
		{name: "append over the limit counts the separator", op: func() (NoteResult, *NoteRecord, error) { return AppendNote(b, "x", "b") },
			check: wantNoteLimit("characters", MaxNoteChars, 1)},
		{name: "129th note", op: func() (NoteResult, *NoteRecord, error) { return WriteNote(full, "one more", "c") }, check: wantNoteLimit("notes", MaxNotes, 1)},
		{name: "129th note by append", op: func() (NoteResult, *NoteRecord, error) { return AppendNote(full, "one more", "c") }, check: wantNoteLimit("notes", MaxNotes, 1)},
		{name: "129th note by copy", op: func() (NoteResult, *NoteRecord, error) {
			return CopyNote([]Branch{full}, Notes(full)[0].Ref, "one more")
		}, check: wantNoteLimit("notes", MaxNotes, 1)},
		{name: "delete a missing note", op: func() (NoteResult, *NoteRecord, error) { return DeleteNote(b, "nope") }, check: wantNotFound},
		{name: "copy onto an existing note", op: func() (NoteResult, *NoteRecord, error) { return CopyNote([]Branch{b}, Notes(b)[0].Ref, "") },
			check: wantInvalid("already exists")},
		{name: "copy from a malformed ref", op: func() (NoteResult, *NoteRecord, error) { return CopyNote([]Branch{b}, "x:y", "") }, check: wantInvalid("not a reference")},
		{name: "copy from a ref off the branch", op: func() (NoteResult, *NoteRecord, error) { return CopyNote([]Branch{b}, Ref("s-test", "ffffffff"), "") },
			check: wantNotFound},
		{name: "copy from a ref to a non-note entry", op: func() (NoteResult, *NoteRecord, error) { return CopyNote([]Branch{b}, Ref("s-test", "00000001"), "") },
			check: wantNotFound},
		{name: "copy with no branches", op: func() (NoteResult, *NoteRecord, error) { return CopyNote(nil, Ref("s", "e"), "") }, check: wantInvalid("no branch")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, rec, err := tc.op()
			if err == nil || rec != nil || res != (NoteResult{}) {
				t.Fatalf("accepted: %+v %+v %v", res, rec, err)
			}
			tc.check(t, err)
		})
	}
}

func wantNoteLimit(what string, limit, over int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var le *LimitError
		if !errors.As(err, &le) || len(le.Excess) != 1 || le.Excess[0].What != what || le.Excess[0].Limit != limit || le.Excess[0].Over() != over {
			t.Fatalf("want *LimitError %s/%d over %d, got %T %v", what, limit, over, err, err)
		}
	}
}

func wantNotFound(t *testing.T, err error) {
	t.Helper()
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("want *NotFoundError, got %T %v", err, err)
	}
}

func TestReadNoteRanges(t *testing.T) {
	b := Branch{Session: "s-test", Path: chain(t)}
	_, rec, _ := WriteNote(b, "r", "héllo wörld")
	b = replay(t, b, rec)
	tests := []struct {
		name          string
		offset, limit int
		want          string
		next          *int
		err           bool
	}{
		{name: "whole", want: "héllo wörld"},
		{name: "range counts characters, not bytes", offset: 1, limit: 4, want: "éllo", next: intp(5)},
		{name: "limit past the end", offset: 6, limit: 100, want: "wörld"},
		{name: "the largest limit (offset+limit would overflow)", offset: 1, limit: math.MaxInt, want: "éllo wörld"},
		{name: "offset at the end", offset: 11, want: ""},
		{name: "offset past the end", offset: 12, err: true},
		{name: "negative offset", offset: -1, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadNote(b, "r", tc.offset, tc.limit)
			if tc.err {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				return
			}
			if err != nil || got.Content != tc.want || !reflect.DeepEqual(got.NextOffset, tc.next) || got.TotalCharacters != 11 {
				t.Fatalf("%+v %v", got, err)
			}
		})
	}
	if _, err := ReadNote(b, "missing", 0, 0); err == nil {
		t.Error("read a missing note")
	}
}

// lineage is the main session's first branch plus the child session.
func lineage(t *testing.T) []Branch {
	main := loadJournal(t, filepath.Join("testdata", "branches.jsonl"))
	child := loadJournal(t, filepath.Join("testdata", "child.jsonl"))
	own := main.branch(t, "a000000a")
	own.Agent = "root"
	other := child.branch(t, "")
	other.Agent = "child-1"
	return []Branch{own, other}
}

func TestLineageListReadCopy(t *testing.T) {
	bs := lineage(t)
	list := ListNotes(bs, 0)
	var got []string
	for _, n := range list.Notes {
		got = append(got, n.Agent+"/"+n.Name)
	}
	if want := []string{"root/plan", "child-1/findings", "child-1/plan"}; !reflect.DeepEqual(got, want) || list.Total != 3 || list.NextOffset != nil {
		t.Fatalf("list %v total %d", got, list.Total)
	}
	ref := list.Notes[1].Ref
	if ref != Ref(childSession, "e0000002") {
		t.Fatalf("ref %s", ref)
	}
	txt, err := ReadNoteRef(bs, ref, 4, 6)
	if err != nil || txt.Content != "cursor" || txt.Session != childSession || txt.Agent != "child-1" {
		t.Fatalf("%+v %v", txt, err)
	}
	// Copying under the source's name into the caller's branch.
	res, rec, err := CopyNote(bs, ref, "")
	if err != nil || res.Name != "findings" || rec.Op != OpCopy || rec.Source != ref {
		t.Fatalf("%+v %+v %v", res, rec, err)
	}
	after := replay(t, bs[0], rec)
	n, _ := ReadNote(after, "findings", 0, 0)
	if !strings.HasPrefix(n.Content, "The cursor lives") || n.Session != mainSession {
		t.Fatalf("copied %+v", n)
	}
	// The copy is unlinked: the child's later change does not reach it.
	bs[1].Path = appendCustom(t, bs[1].Path, NoteType, NoteRecord{Version: 1, Op: OpWrite, Name: "findings", Content: "changed"})
	n, _ = ReadNote(after, "findings", 0, 0)
	if n.Content == "changed" {
		t.Error("copy follows its source")
	}
	// A ref reads the current version of its note.
	txt, _ = ReadNoteRef(bs, ref, 0, 0)
	if txt.Content != "changed" {
		t.Errorf("ref read %q, want the current version", txt.Content)
	}
	// Copy onto a name that exists is refused.
	if _, _, err := CopyNote(bs, Ref(childSession, "e0000003"), ""); err == nil {
		t.Error("copied over the caller's plan")
	}
}

func TestSearchNotes(t *testing.T) {
	bs := lineage(t)
	tests := []struct {
		name    string
		query   string
		want    []string // agent/name@offset
		preview string   // of the first match
	}{
		{name: "literal across sessions", query: "plan", want: []string{"child-1/plan@6"}, preview: "child plan: grep for cursor"},
		{name: "case-sensitive", query: "The cursor", want: []string{"child-1/findings@0", "child-1/findings@40"},
			preview: "The cursor lives in ingest/state.go:42. The cursor…"},
		{name: "every occurrence, offsets in characters", query: "cursor",
			want: []string{"root/plan@30", "child-1/findings@4", "child-1/findings@44", "child-1/plan@21"}},
		{name: "no match", query: "Cursor", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := SearchNotes(bs, tc.query, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range page.Matches {
				got = append(got, fmt.Sprintf("%s/%s@%d", m.Agent, m.Name, m.Offset))
			}
			if !reflect.DeepEqual(got, tc.want) || page.Total != len(tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
			if tc.preview != "" && page.Matches[0].Preview != tc.preview {
				t.Errorf("preview %q", page.Matches[0].Preview)
			}
		})
	}
	if _, err := SearchNotes(bs, "", 0); err == nil {
		t.Error("empty query accepted")
	}
}

func TestPagingBy20(t *testing.T) {
	b := Branch{Session: "s", Path: chain(t)}
	for i := 0; i < 45; i++ {
		_, rec, err := WriteNote(b, fmt.Sprintf("note %02d", i), "needle "+strings.Repeat("x", 100)+" needle")
		if err != nil {
			t.Fatal(err)
		}
		b = replay(t, b, rec)
	}
	var names []string
	for off, pages := 0, 0; ; pages++ {
		list := ListNotes([]Branch{b}, off)
		if len(list.Notes) > PageSize || list.Total != 45 || pages > 3 {
			t.Fatalf("page at %d: %d notes, total %d", off, len(list.Notes), list.Total)
		}
		for _, n := range list.Notes {
			names = append(names, n.Name)
		}
		if list.NextOffset == nil {
			break
		}
		off = *list.NextOffset
	}
	if len(names) != 45 || names[0] != "note 00" || names[44] != "note 44" {
		t.Fatalf("%d names", len(names))
	}
	var matches int
	for off := 0; ; {
		page, err := SearchNotes([]Branch{b}, "needle", off)
		if err != nil || len(page.Matches) > PageSize || page.Total != 90 {
			t.Fatalf("%v %d %d", err, len(page.Matches), page.Total)
		}
		matches += len(page.Matches)
		if page.NextOffset == nil {
			break
		}
		off = *page.NextOffset
	}
	if matches != 90 {
		t.Fatalf("%d matches", matches)
	}
	if p := ListNotes([]Branch{b}, 1000); len(p.Notes) != 0 || p.NextOffset != nil {
		t.Errorf("past the end: %+v", p)
	}
	if len(b.Path[len(b.Path)-1].Raw) == 0 {
		t.Error("records must keep Raw")
	}
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct{ ref, session, entry string }{
		{"context:0199aaaa-0000-7000-8000-000000000001:c0000001", mainSession, "c0000001"},
		{"context:a:b:c", "a:b", "c"},
	} {
		s, e, err := ParseRef(tc.ref)
		if err != nil || s != tc.session || e != tc.entry {
			t.Errorf("%s: %s %s %v", tc.ref, s, e, err)
		}
	}
	for _, bad := range []string{"", "context:", "context::e", "context:s:", "history:s:e", "context:nocolon"} {
		if _, _, err := ParseRef(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
