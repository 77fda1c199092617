package window

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
)

func TestBranchPathResolvesSessionAndLeaf(t *testing.T) {
	f := newFixture(t)
	u1 := f.User("Please fix the parser.")
	a1 := f.Assistant("On it.", 100)
	const empty = "0199b000-0000-7000-8000-0000000000ee"
	var p journal.Parser // a fresh parser: one session header per journal
	h, _, err := p.Line([]byte(fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-05-01T10:00:00.000Z","cwd":"/tmp/p"}`, empty)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Push(empty, h, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		sid, leaf string
		wantLeaf  string
		wantIDs   []string
		wantKind  Kind
		wantParam string
	}{
		{name: "current leaf", sid: testSession, wantLeaf: a1, wantIDs: []string{u1, a1}},
		{name: "earlier leaf", sid: testSession, leaf: u1, wantLeaf: u1, wantIDs: []string{u1}},
		{name: "session without entries", sid: empty},
		{name: "unknown session", sid: "nope", wantKind: NotFound, wantParam: "id"},
		{name: "unknown leaf", sid: testSession, leaf: "zzz", wantKind: NotFound, wantParam: "leaf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, leaf, err := f.svc.branchPath(c.sid, c.leaf)
			if kind, param := kindOf(err); kind != c.wantKind || param != c.wantParam {
				t.Fatalf("error %v: kind %d param %q, want %d %q", err, kind, param, c.wantKind, c.wantParam)
			}
			if leaf != c.wantLeaf || len(path) != len(c.wantIDs) {
				t.Fatalf("leaf %q with %d entries, want %q with %v", leaf, len(path), c.wantLeaf, c.wantIDs)
			}
			for i, e := range path {
				if e.ID != c.wantIDs[i] || len(e.Raw) == 0 {
					t.Errorf("entry %d: %s with %d raw bytes, want %s with its raw line", i, e.ID, len(e.Raw), c.wantIDs[i])
				}
			}
		})
	}
}

// A request that is wrong whatever the branch is refused as invalid before
// the branch is read: on an unknown session it names the parameter, not
// the session.
func TestRequestsAreRefusedBeforeTheBranchIsRead(t *testing.T) {
	f := newFixture(t)
	const nope = "no-such-session"
	bogus := rollover.Reason("whim")
	cases := []struct {
		name  string
		call  func() error
		param string
	}{
		{"gate without a request", func() error { _, err := f.svc.Gate(nope, GateRequest{}); return err }, "request"},
		{"gate asked for the threshold", func() error {
			_, err := f.svc.Gate(nope, GateRequest{Request: rollover.ReasonThreshold})
			return err
		}, "request"},
		{"gate with an unknown pending reason", func() error {
			_, err := f.svc.Gate(nope, GateRequest{Request: rollover.ReasonModel, Pending: &bogus})
			return err
		}, "pending"},
		{"compaction with an unknown reason", func() error {
			_, err := f.svc.Compaction(nope, CompactionRequest{Reason: bogus})
			return err
		}, "reason"},
		{"unknown event", func() error {
			_, err := f.svc.Event(nope, EventRequest{Event: rollover.Event{Kind: "nap"}})
			return err
		}, "event.kind"},
		{"rollover failure with an unknown why", func() error {
			_, err := f.svc.Event(nope, EventRequest{Event: rollover.Event{Kind: rollover.EvRolloverFailed, Why: "gremlins"}})
			return err
		}, "event.why"},
		{"note change with an unknown op", func() error {
			_, err := f.svc.ChangeNote(nope, NoteOpRequest{Op: "frob"})
			return err
		}, "op"},
		{"note search without a query", func() error { _, err := f.svc.SearchNotes(nope, NoteQuery{}); return err }, "query"},
		{"note read by name and ref", func() error {
			_, err := f.svc.ReadNote(nope, NoteQuery{Name: "plan", Ref: "context:x:y"})
			return err
		}, "name"},
		{"notes in an unknown scope", func() error { _, err := f.svc.Notes(nope, NoteQuery{Scope: "everything"}); return err }, "scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if kind, param := kindOf(err); kind != Invalid || param != c.param {
				t.Errorf("error %v: kind %d param %q; want invalid %q", err, kind, param, c.param)
			}
		})
	}
	// The same requests, well formed, reach the store and miss the session.
	if _, err := f.svc.Gate(nope, GateRequest{Request: rollover.ReasonModel}); func() bool { k, p := kindOf(err); return k != NotFound || p != "id" }() {
		t.Errorf("a valid gate request on an unknown session: %v; want not found naming id", err)
	}
}

// A change missing the field its op needs, or carrying another op's, is
// refused and changes nothing: a write whose text came as "text" used to
// empty the note and say it was saved.
func TestNoteChangeNeedsItsOpsFieldAndNoOther(t *testing.T) {
	f := newFixture(t)
	f.User("hi")
	f.Assistant("ok", 10)
	op, err := f.svc.ChangeNote(testSession, NoteOpRequest{Op: notebook.OpWrite, Name: "plan", Content: ptr("step one")})
	if err != nil || op.Append == nil {
		t.Fatalf("write: %+v %v", op, err)
	}
	f.Custom(op.Append.CustomType, op.Append.Data)
	list, err := f.svc.Notes(testSession, NoteQuery{})
	if err != nil || list.Total != 1 {
		t.Fatalf("notes: %+v %v", list, err)
	}
	ref := list.Notes[0].Ref
	for _, c := range []struct {
		body  string
		param string
	}{
		{`{"op":"write","name":"plan","text":"more"}`, "text"},
		{`{"op":"write","name":"plan"}`, "content"},
		{`{"op":"append","name":"plan","content":"x"}`, "content"},
		{`{"op":"append","name":"plan"}`, "text"},
		{`{"op":"delete","name":"plan","content":"x"}`, "content"},
		{`{"op":"delete","name":"plan","scope":"lineage"}`, "scope"},
		{`{"op":"copy","name":"plan2"}`, "ref"},
		{`{"op":"copy","ref":"` + ref + `","text":"x"}`, "text"},
	} {
		var in NoteOpRequest
		if err := json.Unmarshal([]byte(c.body), &in); err != nil {
			t.Fatal(err)
		}
		out, err := f.svc.ChangeNote(testSession, in)
		if kind, param := kindOf(err); kind != Invalid || param != c.param || out.Append != nil {
			t.Errorf("%s: %+v, %v; want invalid %q and nothing to append", c.body, out, err, c.param)
		}
	}
	nt, err := f.svc.ReadNote(testSession, NoteQuery{Name: "plan"})
	if err != nil || nt.Content != "step one" {
		t.Errorf("plan after refused changes: %q %v", nt.Content, err)
	}
}

// An edited configuration file applies to the next request, without
// restarting serve; a removed one brings the defaults back.
func TestConfigIsReadAgainWhenTheFileChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	if err := os.WriteFile(path, []byte(`{"minReclaimTokens": 1000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := New(nil, nil, dir, nil) // configuration alone needs no store
	steps := []struct {
		name    string
		write   string // "" removes the file
		reclaim int
		enabled bool
	}{
		{"as serve read it", `{"minReclaimTokens": 1000}`, 1000, true},
		{"edited", `{"minReclaimTokens": 5000, "enabled": false}`, 5000, false},
		{"removed", "", rollover.DefaultConfig().MinReclaimTokens, true},
	}
	for i, s := range steps {
		if i > 0 {
			if s.write == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(s.write), 0o600); err != nil {
				t.Fatal(err)
			}
			// A new modification time even on a coarse clock.
			later := time.Now().Add(time.Duration(i) * time.Second)
			os.Chtimes(path, later, later)
		}
		info := svc.ConfigInfo()
		if info.Config.MinReclaimTokens != s.reclaim || info.Config.Enabled != s.enabled || info.Problems == nil || info.Path != path {
			t.Errorf("%s: %+v; want minReclaimTokens %d enabled %v, problems [] and path %s", s.name, info, s.reclaim, s.enabled, path)
		}
	}
}

// After a restart the volatile state comes back from the branch: its
// window, the reminder already sent in it and the last maintenance attempt.
func TestStateIsRebuiltFromTheBranchAfterARestart(t *testing.T) {
	f := newFixture(t)
	f.User("hi")
	kept := f.Assistant("ok", 10)
	f.compaction(kept, 2, "model")
	f.Add(`{"type":"custom_message","customType":"note-context/maintenance","content":"checkpoint","display":false,"details":{"attempt":4}}`)
	f.Add(`{"type":"custom_message","customType":"note-context/reminder","content":"rollover due","display":false}`)
	f.restart()
	v, err := f.svc.State(testSession, "")
	if err != nil {
		t.Fatal(err)
	}
	want := rollover.State{Window: 2, ReminderSent: true, Attempt: 4}
	if v.State != want || v.Leaf != f.Last || v.Session != testSession {
		t.Errorf("rebuilt state %+v at %s; want %+v at %s", v.State, v.Leaf, want, f.Last)
	}
}

// The state belongs to a window: when the leaf moves to another one (/tree,
// a fork) it is rebuilt from there, keeping only the attempt counter, which
// never goes back.
func TestStateFollowsTheLeafIntoAnotherWindow(t *testing.T) {
	f := newFixture(t)
	f.User("hi")
	inFirst := f.Assistant("ok", 10)
	f.compaction(inFirst, 2, "model")
	inSecond := f.User("go on")
	f.svc.states[testSession] = &rollover.State{Window: 2, Pending: rollover.ReasonUser, Stage: rollover.StageRequested, Attempt: 3, Active: 3}

	for _, step := range []struct {
		leaf string
		want rollover.State
	}{
		{inSecond, rollover.State{Window: 2, Pending: rollover.ReasonUser, Stage: rollover.StageRequested, Attempt: 3, Active: 3}},
		{inFirst, rollover.State{Window: 1, Attempt: 3}},
		{inSecond, rollover.State{Window: 2, Attempt: 3}},
	} {
		v, err := f.svc.State(testSession, step.leaf)
		if err != nil {
			t.Fatal(err)
		}
		if v.State != step.want {
			t.Errorf("state at %s: %+v; want %+v", step.leaf, v.State, step.want)
		}
	}
}

// Without a reason in the request, a compaction's reason comes from who
// asked and the session's state; the ledger's decline row carries it.
func TestCompactionReasonDefaultsToWhoAsked(t *testing.T) {
	cases := []struct {
		name  string
		state rollover.State
		in    CompactionRequest
		want  rollover.Reason
	}{
		{"Pi's own compaction", rollover.State{Window: 1, Pending: rollover.ReasonUser}, CompactionRequest{}, rollover.ReasonThreshold},
		{"ours after a checkpoint", rollover.State{Window: 1, Stage: rollover.StageCheckpointed, Pending: rollover.ReasonUser}, CompactionRequest{Ours: true}, rollover.ReasonFallback},
		{"ours with a schedule pending", rollover.State{Window: 1, Pending: rollover.ReasonHost}, CompactionRequest{Ours: true}, rollover.ReasonHost},
		{"ours with nothing pending", rollover.State{Window: 1}, CompactionRequest{Ours: true}, rollover.ReasonModel},
		{"the request's reason wins", rollover.State{Window: 1, Pending: rollover.ReasonHost}, CompactionRequest{Ours: true, Reason: rollover.ReasonUser}, rollover.ReasonUser},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.User("hi")
			f.Assistant("ok", 10)
			st := c.state
			f.svc.states[testSession] = &st
			d, err := f.svc.Compaction(testSession, c.in)
			if err != nil || d.Compaction != nil || d.Declined != rollover.DeclineNoNotebook {
				t.Fatalf("compaction without a notebook: %+v %v; want declined as %s", d, err, rollover.DeclineNoNotebook)
			}
			page, err := f.svc.Ledger(rollover.LedgerFilter{Kind: rollover.RowRolloverDeclined})
			if err != nil || len(page.Rows) != 1 {
				t.Fatalf("decline rows: %+v %v; want one", page, err)
			}
			if r := page.Rows[0]; r.Reason != c.want || r.Session != testSession || r.Window != 1 || r.Why != rollover.DeclineNoNotebook {
				t.Errorf("decline row %+v; want reason %s in window 1", r, c.want)
			}
		})
	}
}

// writeNotebook validates a notebook write (or a review, without sections)
// and appends its record, as the extension does.
func (f *fixture) writeNotebook(sections notebook.Sections) {
	f.t.Helper()
	req := notebook.WriteRequest{Sections: sections, Reviewed: sections == nil}
	out, err := f.svc.WriteNotebook(testSession, NotebookWriteRequest{WriteRequest: req})
	if err != nil {
		f.t.Fatalf("notebook write %v: %v", sections, err)
	}
	f.Custom(out.Append.CustomType, out.Append.Data)
}

// When a compaction of ours reaches the branch, the compaction event
// ledgers it with the notebook work of the window it ended (not of earlier
// ones) and that window's cache figures. A compaction someone else wrote is
// not ours to ledger.
func TestCompactionEventLedgersTheWindowItEnded(t *testing.T) {
	f := newFixture(t)
	f.User("Task: port the parser.")
	kept := f.Assistant("Noted.", 1000)
	f.writeNotebook(notebook.Sections{{Name: "Task", Text: "port the parser"}})
	f.writeNotebook(nil)
	first := f.compaction(kept, 2, "user")
	f.User("Next: the tests.")
	kept = f.Assistant("Writing them.", 2000)
	f.writeNotebook(notebook.Sections{{Name: "Task", Text: "port the parser"}, {Name: "Next", Text: "tests"}})
	second := f.compaction(kept, 3, "model")
	f.User("And the docs.")
	f.Assistant("Sure.", 3000)
	foreign := f.Add(fmt.Sprintf(`{"type":"compaction","summary":"Pi's own","firstKeptEntryId":%q,"tokensBefore":1000}`, f.Last))

	type want struct {
		entry                  string
		ended, writes, reviews int
		reason                 rollover.Reason
	}
	for _, step := range []struct {
		leaf string
		want *want // nil: no rollover row
	}{
		{first, &want{first, 1, 1, 1, rollover.ReasonUser}},
		{second, &want{second, 2, 1, 0, rollover.ReasonModel}},
		{foreign, nil},
	} {
		before, _ := f.svc.Ledger(rollover.LedgerFilter{})
		if _, err := f.svc.Event(testSession, EventRequest{Leaf: step.leaf, Event: rollover.Event{Kind: rollover.EvCompaction}}); err != nil {
			t.Fatal(err)
		}
		after, _ := f.svc.Ledger(rollover.LedgerFilter{})
		var roll, cache []rollover.Row
		for _, r := range after.Rows[len(before.Rows):] {
			switch r.Kind {
			case rollover.RowRollover:
				roll = append(roll, r)
			case rollover.RowWindowCache:
				cache = append(cache, r)
			}
		}
		if step.want == nil {
			if len(roll)+len(cache) != 0 {
				t.Errorf("compaction %s not written by us: rows %+v %+v; want none", step.leaf, roll, cache)
			}
			continue
		}
		w := step.want
		if len(roll) != 1 || len(cache) != 1 {
			t.Fatalf("compaction %s: rollover rows %+v, cache rows %+v; want one of each", step.leaf, roll, cache)
		}
		r := roll[0]
		if r.EntryID != w.entry || r.EndedWindow != w.ended || r.NotebookWrites != w.writes || r.NotebookReviews != w.reviews || r.Reason != w.reason {
			t.Errorf("rollover row of %s: %+v; want entry %s, ended window %d, %d writes, %d reviews, reason %s",
				step.leaf, r, w.entry, w.ended, w.writes, w.reviews, w.reason)
		}
		if cache[0].Window != w.ended || cache[0].Calls != 1 {
			t.Errorf("cache row of %s: %+v; want window %d with its one call", step.leaf, cache[0], w.ended)
		}
	}
}
