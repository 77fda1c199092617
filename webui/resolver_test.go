package webui

import (
	"encoding/json"
	"testing"

	"github.com/pi-history/pi-history/internal/problem"
)

// TestDataRoutesRefuseWhatTheResolverRefuses: an unknown session or leaf
// on the entry pages and the notebook view is the one resolver's refusal
// (search.Engine.Branch), with the parameter and message the API's routes
// send for it too.
func TestDataRoutesRefuseWhatTheResolverRefuses(t *testing.T) {
	f := newFixture(t, "shop.jsonl")
	for _, c := range []struct {
		path, param, detail string
	}{
		{"/ui/data/sessions/nope/entries", "session", `no session "nope"; list sessions to find its id`},
		{"/ui/data/sessions/nope/notebook", "session", `no session "nope"; list sessions to find its id`},
		{"/ui/data/sessions/nope/branches", "session", `no session "nope"; list sessions to find its id`},
		{"/ui/data/sessions/" + shopID + "/entries?leaf=zz", "leaf", `entry "zz" is not in session "` + shopID + `"`},
		{"/ui/data/sessions/" + shopID + "/notebook?leaf=zz", "leaf", `entry "zz" is not in session "` + shopID + `"`},
	} {
		rec := f.get(t, c.path, nil)
		var d problem.Doc
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		want := problem.Doc{Type: problem.NotFound, Title: "Not found", Status: 404, Param: c.param, Detail: c.detail}
		if rec.Code != 404 || d != want {
			t.Errorf("%s: %d %+v, want 404 %+v", c.path, rec.Code, d, want)
		}
	}
}
