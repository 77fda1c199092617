package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/internal/testutil/growing"
	"github.com/pi-history/pi-history/notebook"
	"github.com/pi-history/pi-history/rollover"
	"github.com/pi-history/pi-history/store"
)

const ctxSession = "0199a000-0000-7000-8000-000000000001"

// ctxFixture is a real store holding one session that the test grows entry
// by entry, the way the extension pushes them.
type ctxFixture struct {
	*growing.Session
	t      *testing.T
	dir    string
	st     *store.Store
	routes *ContextRoutes
	srv    *httptest.Server
}

func newCtxFixture(t *testing.T, config string) *ctxFixture {
	t.Helper()
	dir := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, ContextConfigFile), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &ctxFixture{t: t, dir: dir, st: st}
	f.restart()
	f.Session = growing.New(t, st, ctxSession)
	return f
}

// restart serves the same store from a fresh ContextRoutes, as after a
// server restart: the volatile state is gone.
func (f *ctxFixture) restart() {
	if f.srv != nil {
		f.srv.Close()
	}
	f.routes = NewContextRoutes(f.st, nil, f.dir, nil)
	r := chi.NewRouter()
	r.Route("/v1", f.routes.Mount)
	f.srv = httptest.NewServer(r)
	f.t.Cleanup(f.srv.Close)
}

// do sends a request and decodes the answer into out (when non-nil); it
// returns the status and the raw body.
func (f *ctxFixture) do(method, path string, in any, out any) (int, []byte) {
	f.t.Helper()
	var body *bytes.Reader
	if in != nil {
		b, ok := in.(string)
		if !ok {
			j, err := json.Marshal(in)
			if err != nil {
				f.t.Fatal(err)
			}
			b = string(j)
		}
		body = bytes.NewReader([]byte(b))
	} else {
		body = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, body)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		v := reflect.ValueOf(out).Elem()
		v.Set(reflect.Zero(v.Type()))
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			f.t.Fatalf("%s %s: decode %s: %v", method, path, buf.String(), err)
		}
	}
	return resp.StatusCode, buf.Bytes()
}

func (f *ctxFixture) must(method, path string, in, out any) {
	f.t.Helper()
	if code, b := f.do(method, path, in, out); code != http.StatusOK {
		f.t.Fatalf("%s %s: status %d: %s", method, path, code, b)
	}
}

const sp = "/v1/sessions/" + ctxSession

func TestContextNotebookRoutes(t *testing.T) {
	f := newCtxFixture(t, "")
	f.User("Please fix the parser.")
	a1 := f.Assistant("Writing notes.", 1000)

	var view NotebookView
	f.must("GET", sp+"/notebook", nil, &view)
	if view.Exists || view.Leaf != a1 || view.Window != 1 {
		t.Fatalf("empty notebook view: %+v", view)
	}

	// A write returns the result and the exact entry data to append.
	var wr NotebookWriteResponse
	f.must("POST", sp+"/notebook", map[string]any{"sections": map[string]string{"Task": "fix the parser", "Next": "run tests"}, "reviewedThrough": a1, "reviewedTokens": 1000}, &wr)
	if wr.Result.Revision != 1 || wr.Append.CustomType != notebook.NotebookType || !wr.Result.Changed {
		t.Fatalf("write: %+v", wr)
	}
	rec, err := notebook.ParseRecord(wr.Append.Data)
	if err != nil || rec.ReviewedThrough != a1 || rec.Revision != 1 {
		t.Fatalf("record %s: %+v %v", wr.Append.Data, rec, err)
	}
	nbID := f.Custom(notebook.NotebookType, wr.Append.Data)

	f.must("GET", sp+"/notebook", nil, &view)
	if !view.Exists || view.Notebook.Revision != 1 || view.Notebook.EntryID != nbID || view.Text != "## Task\nfix the parser\n\n## Next\nrun tests" {
		t.Fatalf("notebook after write: %+v", view)
	}
	// The leaf parameter reads the notebook as of an earlier entry.
	f.must("GET", sp+"/notebook?leaf="+a1, nil, &view)
	if view.Exists {
		t.Fatalf("notebook at %s should not exist yet", a1)
	}

	// Stale write: 409 with the current revision.
	code, body := f.do("POST", sp+"/notebook", map[string]any{"sections": map[string]string{"State": "x"}, "expectedRevision": 0}, nil)
	var prob contextProblem
	json.Unmarshal(body, &prob)
	if code != http.StatusConflict || prob.CurrentRevision == nil || *prob.CurrentRevision != 1 {
		t.Fatalf("stale write: %d %s", code, body)
	}
	// Over the byte ceiling: 413 with the excess.
	code, body = f.do("POST", sp+"/notebook", map[string]any{"sections": map[string]string{"State": strings.Repeat("x", 20000)}}, nil)
	prob = contextProblem{}
	json.Unmarshal(body, &prob)
	if code != http.StatusRequestEntityTooLarge || len(prob.Excess) == 0 || prob.Excess[0].Limit != 16384 {
		t.Fatalf("oversized write: %d %s", code, body)
	}
	// Malformed: 400 naming the field.
	code, body = f.do("POST", sp+"/notebook", `{"sections":{"Bad Name!":"x"}}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "Bad Name!") {
		t.Fatalf("bad section name: %d %s", code, body)
	}
	code, body = f.do("POST", sp+"/notebook", `{"sections":{"A":"x"},"reviewed":true}`, nil)
	if code != http.StatusBadRequest {
		t.Fatalf("reviewed with sections: %d %s", code, body)
	}
	// A lone surrogate escape would be stored as U+FFFD: refused, as
	// every other JSON body with one is.
	code, body = f.do("POST", sp+"/notebook", `{"sections":{"Task":"fix a\ud800b"}}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "surrogate") {
		t.Fatalf("a lone surrogate in a notebook write: %d %s", code, body)
	}
	// Unknown session and leaf: 404.
	if code, _ := f.do("GET", "/v1/sessions/nope/notebook", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown session: %d", code)
	}
	if code, _ := f.do("GET", sp+"/notebook?leaf=zzz", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown leaf: %d", code)
	}

	// Review advances the revision without changing the sections.
	a2 := f.Assistant("Reviewed.", 2000)
	f.must("POST", sp+"/notebook/review", map[string]any{"reviewedThrough": a2, "reviewedTokens": 2000, "expectedRevision": 1}, &wr)
	if wr.Result.Revision != 2 || wr.Result.Changed {
		t.Fatalf("review: %+v", wr)
	}
	f.Custom(notebook.NotebookType, wr.Append.Data)

	var revs RevisionsResponse
	f.must("GET", sp+"/notebook/revisions", nil, &revs)
	if len(revs.Revisions) != 2 || !revs.Revisions[1].ReviewOnly || len(revs.Revisions[0].Added) != 2 {
		t.Fatalf("revisions: %+v", revs)
	}

	// Status line: usage far past the review gives a step.
	var st notebook.Status
	f.must("POST", sp+"/status", map[string]any{"contextTokens": 2000 + 45000}, &st)
	if !st.Due || st.Step != 1 || !strings.HasPrefix(st.Text, notebook.StatusPrefix) {
		t.Fatalf("status: %+v", st)
	}
	f.must("POST", sp+"/status", map[string]any{"contextTokens": 2000 + 45000, "deliveredStep": 1}, &st)
	if st.Due {
		t.Fatalf("status repeated a delivered step: %+v", st)
	}
	f.must("POST", sp+"/status", map[string]any{"contextTokens": 47000, "suppressed": true}, &st)
	if st.Due {
		t.Fatalf("suppressed status: %+v", st)
	}
}

func TestContextNamedNotes(t *testing.T) {
	f := newCtxFixture(t, "")
	f.User("hi")
	f.Assistant("ok", 10)

	var op NoteOpResponse
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "write", Name: "plan", Content: ptr("step one")}, &op)
	if op.Append == nil || op.Append.CustomType != notebook.NoteType || !op.Result.Saved {
		t.Fatalf("write: %+v", op)
	}
	f.Custom(op.Append.CustomType, op.Append.Data)
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "append", Name: "plan", Text: ptr("step two")}, &op)
	f.Custom(op.Append.CustomType, op.Append.Data)
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "append", Name: "plan", Text: ptr("")}, &op)
	if op.Append != nil || !op.Result.Unchanged {
		t.Fatalf("empty append: %+v", op)
	}

	var list notebook.NoteList
	f.must("GET", sp+"/notes", nil, &list)
	if list.Total != 1 || list.Notes[0].Name != "plan" {
		t.Fatalf("list: %+v", list)
	}
	var nt notebook.NoteText
	f.must("GET", sp+"/notes/read?name=plan", nil, &nt)
	if nt.Content != "step one\nstep two" {
		t.Fatalf("read: %+v", nt)
	}
	f.must("GET", sp+"/notes/read?ref="+list.Notes[0].Ref+"&offset=5&limit=3", nil, &nt)
	if nt.Content != "one" {
		t.Fatalf("read by ref: %+v", nt)
	}
	var page notebook.SearchPage
	f.must("GET", sp+"/notes/search?query=two", nil, &page)
	if page.Total != 1 || page.Matches[0].Name != "plan" {
		t.Fatalf("search: %+v", page)
	}
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "copy", Ref: list.Notes[0].Ref, Name: "plan2"}, &op)
	f.Custom(op.Append.CustomType, op.Append.Data)
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "delete", Name: "plan"}, &op)
	f.Custom(op.Append.CustomType, op.Append.Data)
	f.must("GET", sp+"/notes", nil, &list)
	if list.Total != 1 || list.Notes[0].Name != "plan2" {
		t.Fatalf("list after copy and delete: %+v", list)
	}
	if code, _ := f.do("GET", sp+"/notes/read?name=plan", nil, nil); code != http.StatusNotFound {
		t.Fatalf("deleted note read: %d", code)
	}
	if code, _ := f.do("POST", sp+"/notes", NoteOpRequest{Op: "frob", Name: "x"}, nil); code != http.StatusBadRequest {
		t.Fatalf("bad op: %d", code)
	}
	if code, _ := f.do("POST", sp+"/notes", NoteOpRequest{Op: "write", Name: "big", Content: ptr(strings.Repeat("y", 64001))}, nil); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized note: %d", code)
	}
	if code, _ := f.do("GET", sp+"/notes?scope=everything", nil, nil); code != http.StatusBadRequest {
		t.Fatalf("bad scope: %d", code)
	}
	// A change missing its op's field, or carrying another op's, is
	// refused with a problem naming the field (window's tests hold the
	// whole table of ops and fields).
	for _, c := range []struct {
		body  string
		param string
	}{
		{`{"op":"write","name":"plan2","text":"more"}`, "text"},
		{`{"op":"write","name":"plan2"}`, "content"},
	} {
		code, body := f.do("POST", sp+"/notes", c.body, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s; want 400 naming %s", c.body, code, body, c.param)
		}
	}
	f.must("GET", sp+"/notes/read?name=plan2", nil, &nt)
	if nt.Content != "step one\nstep two" {
		t.Errorf("plan2 after refused changes: %q", nt.Content)
	}
	// An explicit empty content still empties a note.
	f.must("POST", sp+"/notes", NoteOpRequest{Op: "write", Name: "plan2", Content: ptr("")}, &op)
	if !op.Result.Saved {
		t.Errorf("write of \"\": %+v", op)
	}
}

func ptr[T any](v T) *T { return &v }

// longSession builds a session whose early part can leave the window:
// big user/assistant exchanges, then a notebook reviewed through the last
// of them, then a short tail.
func longSession(f *ctxFixture) (firstUser, reviewed string) {
	big := strings.Repeat("lorem ipsum ", 4000) // ~12K tokens per message
	firstUser = f.User("Task: port the parser. Keep the API stable.")
	f.Assistant(big, 13000)
	f.User("Also handle CRLF.")
	f.Assistant(big, 26000)
	f.User("Now the tests.")
	reviewed = f.Assistant("Checkpointing.", 39000)
	var wr NotebookWriteResponse
	f.must("POST", sp+"/notebook", map[string]any{"sections": map[string]string{"Task": "port the parser", "Next": "tests"}, "reviewedThrough": reviewed, "reviewedTokens": 39000}, &wr)
	f.Custom(notebook.NotebookType, wr.Append.Data)
	f.User("Go on.")
	f.Assistant("Continuing.", 39100)
	return firstUser, reviewed
}

func TestContextGateAndCompaction(t *testing.T) {
	f := newCtxFixture(t, `{"minReclaimTokens": 1000}`)
	f.User("hi")
	f.Assistant("ok", 10)
	pi := rollover.PiSettings{KeepRecentTokens: 100, ReserveTokens: 1000}

	// No notebook: the gate refuses with its blocker.
	var v rollover.Verdict
	f.must("POST", sp+"/gate", GateRequest{Request: rollover.ReasonModel, Pi: &pi}, &v)
	if v.OK || v.Blocker != rollover.BlockNoNotebook {
		t.Fatalf("gate without notebook: %+v", v)
	}

	for _, body := range []string{`{"request":"bogus"}`, `{}`, `{"request":"model","pending":"nonsense"}`} {
		if code, b := f.do("POST", sp+"/gate", body, nil); code != http.StatusBadRequest || !strings.Contains(string(b), "model, user") {
			t.Errorf("gate %s: %d %s; want 400 naming the valid values", body, code, b)
		}
	}

	firstUser, _ := longSession(f)
	f.must("POST", sp+"/gate", GateRequest{Request: rollover.ReasonUser, Pi: &pi}, &v)
	if !v.OK || v.Reason != rollover.ReasonUser {
		t.Fatalf("user gate: %+v", v)
	}

	// Custom instructions: Pi's own summary runs.
	var cd rollover.CompactDecision
	f.must("POST", sp+"/compaction", CompactionRequest{CustomInstructions: "focus on tests", Pi: &pi}, &cd)
	if cd.Compaction != nil || cd.Declined != rollover.DeclineCustomInstructions {
		t.Fatalf("custom instructions: %+v", cd)
	}
	// Ours, reason user: the template, with the notebook verbatim.
	f.must("POST", sp+"/compaction", CompactionRequest{Ours: true, Reason: rollover.ReasonUser, Pi: &pi}, &cd)
	if cd.Compaction == nil {
		t.Fatalf("template declined: %+v", cd)
	}
	c := cd.Compaction
	if !strings.Contains(c.Summary, "## Task\nport the parser\n\n## Next\ntests") || c.Details.Reason != rollover.ReasonUser ||
		c.Details.WindowNumber != 2 || !strings.Contains(c.Summary, "[history entry="+firstUser+"]") {
		t.Fatalf("summary: %+v\n%s", c, c.Summary)
	}
	// A bad reason is refused.
	if code, _ := f.do("POST", sp+"/compaction", `{"reason":"whim"}`, nil); code != http.StatusBadRequest {
		t.Fatalf("bad reason: %d", code)
	}

	// Once appended (fromHook) and reported, the ledger gets a rollover row
	// and the state moves to window 2.
	summary, _ := json.Marshal(c.Summary)
	details, _ := json.Marshal(c.Details)
	compID := f.Add(fmt.Sprintf(`{"type":"compaction","summary":%s,"firstKeptEntryId":%q,"tokensBefore":%d,"details":%s,"fromHook":true}`, summary, c.FirstKeptEntryID, c.TokensBefore, details))
	var er EventResponse
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvCompaction}, Pi: &pi}, &er)
	if er.State.Window != 2 {
		t.Fatalf("state after compaction: %+v", er.State)
	}
	var led LedgerResponse
	f.must("GET", "/v1/ledger?kind=rollover", nil, &led)
	if len(led.Rows) != 1 || led.Rows[0].EntryID != compID || led.Rows[0].Reason != rollover.ReasonUser || led.Rows[0].Window != 2 {
		t.Fatalf("ledger rollover rows: %+v", led)
	}
	// Per window (docs/spec-notes.md, "The ledger"): the notebook writes and reviews of the
	// window that ended, and what left it.
	if r := led.Rows[0]; r.EndedWindow != 1 || r.NotebookWrites != 1 || r.NotebookReviews != 0 || r.ReclaimTokens <= 0 {
		t.Errorf("rollover row: ended window %d, %d writes, %d reviews, reclaim %d; want window 1, 1, 0 and what left the window", r.EndedWindow, r.NotebookWrites, r.NotebookReviews, r.ReclaimTokens)
	}
	// And one window_cache row for the window that ended (docs/spec-notes.md, "Entry-id trailers and the window cache row").
	f.must("GET", "/v1/ledger?kind=window_cache", nil, &led)
	if len(led.Rows) != 1 || led.Rows[0].Window != 1 || led.Rows[0].Calls == 0 || led.Rows[0].UncachedTokens == 0 {
		t.Errorf("window_cache rows: %+v; want one for window 1 with its calls", led.Rows)
	}
	f.must("GET", "/v1/ledger?kind=rollover_declined&session="+ctxSession, nil, &led)
	if len(led.Rows) != 1 || led.Rows[0].Why != rollover.DeclineCustomInstructions {
		t.Fatalf("ledger declined rows: %+v", led)
	}
	if code, _ := f.do("GET", "/v1/ledger?bogus=1", nil, nil); code != http.StatusBadRequest {
		t.Fatalf("unknown ledger parameter accepted")
	}
}

func TestContextStateMachine(t *testing.T) {
	// A 60K window: reminder from 60000-1000-24000 = 35000, fallback from
	// 60000-1000-12000 = 47000.
	f := newCtxFixture(t, `{"minReclaimTokens": 1000}`)
	pi := rollover.PiSettings{KeepRecentTokens: 100, ReserveTokens: 1000}
	usage := func(n int) *UsageBody { return &UsageBody{Tokens: &n, ContextWindow: 60000} }
	f.User("hi")
	f.Assistant("ok", 10)

	// new_context without notes: refused, with the blocker text as the tool text.
	var er EventResponse
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvNewContext}, Usage: usage(20000), Pi: &pi}, &er)
	if er.Decision.Gate == nil || er.Decision.Gate.OK || er.Decision.ToolText != "no notebook on this branch — write notes first" {
		t.Fatalf("new_context without notes: %+v", er.Decision)
	}

	longSession(f)
	// Reminder zone: one reminder per window, with the notebook attached.
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd}, Usage: usage(36000), Pi: &pi}, &er)
	if er.Decision.SteerType != rollover.ReminderType || !strings.Contains(er.Decision.Steer, "port the parser") {
		t.Fatalf("reminder: %+v", er.Decision)
	}
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd}, Usage: usage(37000), Pi: &pi}, &er)
	if er.Decision.Steer != "" {
		t.Fatalf("second reminder: %+v", er.Decision)
	}
	// Fallback zone: maintenance requested, other tools blocked, notes allowed.
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd}, Usage: usage(48000), Pi: &pi}, &er)
	if er.Decision.SteerType != rollover.MaintenanceType || er.State.Stage != rollover.StageRequested {
		t.Fatalf("maintenance: %+v", er)
	}
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvToolCall, Tool: "read"}, Usage: usage(48000), Pi: &pi}, &er)
	if !er.Decision.Block {
		t.Fatalf("read not blocked: %+v", er.Decision)
	}
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvToolCall, Tool: "notes"}, Usage: usage(48000), Pi: &pi}, &er)
	if er.Decision.Block {
		t.Fatalf("notes blocked: %+v", er.Decision)
	}

	// A restart loses the volatile state; it is rebuilt from the journal.
	f.restart()
	var got struct {
		State rollover.State `json:"state"`
	}
	f.must("GET", sp+"/rollover-state", nil, &got)
	if got.State.Window != 1 || got.State.Stage != "" {
		t.Fatalf("rebuilt state: %+v", got.State)
	}

	// notes lands, then turn_end asks for the fallback rollover.
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd}, Usage: usage(48000), Pi: &pi}, &er)
	if er.State.Stage != rollover.StageRequested {
		t.Fatalf("maintenance after restart: %+v", er)
	}
	// A review (no change) lands: its ledger row says so.
	var wr NotebookWriteResponse
	f.must("POST", sp+"/notebook", map[string]any{"reviewed": true}, &wr)
	f.Custom(notebook.NotebookType, wr.Append.Data)
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvNotes, NotesOK: true}, Usage: usage(48000), Pi: &pi}, &er)
	var nl LedgerResponse
	f.must("GET", "/v1/ledger?kind=notes&session="+ctxSession, nil, &nl)
	if n := len(nl.Rows); n == 0 || !nl.Rows[n-1].Review {
		t.Errorf("notes rows after a review: %+v; want the last marked as a review", nl.Rows)
	}
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvTurnEnd}, Usage: usage(48000), Pi: &pi}, &er)
	if er.Decision.RollOver != rollover.ReasonFallback {
		t.Fatalf("fallback rollover: %+v", er)
	}
	var cd rollover.CompactDecision
	f.must("POST", sp+"/compaction", CompactionRequest{Ours: true, Pi: &pi}, &cd)
	if cd.Compaction == nil || cd.Compaction.Details.Reason != rollover.ReasonFallback {
		t.Fatalf("fallback compaction: %+v", cd)
	}
	if code, _ := f.do("POST", sp+"/events", `{"event":{"kind":"nap"}}`, nil); code != http.StatusBadRequest {
		t.Fatalf("unknown event accepted")
	}
	if code, body := f.do("POST", sp+"/events", `{"event":{"kind":"rollover_failed","why":"gremlins"}}`, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "no_model") {
		t.Fatalf("a rollover failure with an unknown why: %d %s", code, body)
	}
	// The extension's compaction for a rollover failed: the schedule goes,
	// and the ledger says why.
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvCompaction}, Usage: usage(30000), Pi: &pi}, &er)
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvNewContext}, Usage: usage(30000), Pi: &pi}, &er)
	if er.Decision.Schedule == "" {
		t.Fatalf("new_context not scheduled: %+v", er)
	}
	f.must("POST", sp+"/events", EventRequest{Event: rollover.Event{Kind: rollover.EvRolloverFailed, Why: "nothing_to_compact"}, Usage: usage(30000), Pi: &pi}, &er)
	if er.State.Pending != "" || er.Decision.Failed != rollover.ReasonModel {
		t.Fatalf("after a failed rollover: %+v", er)
	}
	var lg struct {
		Rows []rollover.Row `json:"rows"`
	}
	f.must("GET", "/v1/ledger?kind=rollover_failed", nil, &lg)
	if len(lg.Rows) != 1 || lg.Rows[0].Why != "nothing_to_compact" || lg.Rows[0].Reason != rollover.ReasonModel {
		t.Fatalf("ledger rows of kind rollover_failed: %+v", lg.Rows)
	}
	var cfg ContextConfigResponse
	f.must("GET", "/v1/context/config", nil, &cfg)
	if cfg.Config.MinReclaimTokens != 1000 || cfg.Config.LeadTokens != 24000 {
		t.Fatalf("config: %+v", cfg)
	}
}
