package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/store"
)

// TestAFullDiskDegradesHealthAndRefusesOnlyWrites: when the store's disk
// fills, pushes are refused with a 503 that says why, /healthz reports
// degraded with the cause while searches, lists and reads go on, and once
// space is back the health is ok again without a restart and pushes are
// stored.
func TestAFullDiskDegradesHealthAndRefusesOnlyWrites(t *testing.T) {
	fs := &testutil.ShortFS{FS: vfs.Default}
	h := newHarnessOn(t, fs)
	push := func(id string) req {
		return req{Method: "POST", Path: "/v1/sessions/s1/entries", Body: client.PushRequest{Lines: []string{userLine(id, "m5", "pushed "+id)}}}
	}
	var hl client.Health
	h.ok(h.do(req{Path: "/healthz", NoAuth: true}), &hl)
	if hl.Status != "ok" || len(hl.Faults) != 0 {
		t.Fatalf("health before the disk fills: %+v; want ok", hl)
	}

	fs.Avail.Store(1 << 20)
	p := h.problem(h.do(push("x1")), http.StatusServiceUnavailable, "")
	if p.Type != ProblemWritesStopped || !strings.Contains(p.Detail, "free") {
		t.Errorf("push on a full disk: %+v; want a writes-stopped problem naming the free space", p)
	}
	hl = client.Health{}
	h.ok(h.do(req{Path: "/healthz", NoAuth: true}), &hl)
	if hl.Status != "degraded" || len(hl.Faults) != 1 || hl.Faults[0].Part != "writes" || !strings.Contains(hl.Faults[0].Cause, "free") || hl.Faults[0].Since == "" {
		t.Errorf("health on a full disk: %+v; want degraded, with the writes fault and its cause", hl)
	}
	if len(hl.Faults) > 0 && (strings.Contains(hl.Faults[0].Cause, h.dataDir) || !strings.Contains(hl.Faults[0].Cause, "<data>/store")) {
		t.Errorf("the cause names the data directory's path: %q; want <data>", hl.Faults[0].Cause)
	}
	for _, path := range []string{"/v1/search?needle=ErrCartEmpty", "/v1/sessions", "/v1/sessions/s1/entries", "/v1/stats"} {
		if w := h.do(req{Path: path}); w.Code != http.StatusOK {
			t.Errorf("GET %s on a full disk: %d %s; want 200", path, w.Code, w.Body)
		}
	}
	if w := h.do(req{Path: "/v1/search?needle=ErrCartEmpty"}); !strings.Contains(w.Body.String(), "m1") {
		t.Errorf("search on a full disk found nothing: %s", w.Body)
	}

	fs.Avail.Store(0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		hl = client.Health{}
		h.ok(h.do(req{Path: "/healthz", NoAuth: true}), &hl)
		if hl.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health still %+v 5s after space came back", hl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var res store.Result
	h.ok(h.do(push("x1")), &res)
	if res.Added != 1 {
		t.Errorf("push once space is back: %+v; want 1 added", res)
	}
}
