package api

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/service"
)

// TestIndexLagReachesZeroWhenCaughtUp checks that every place reporting
// the index's lag (/v1/stats, /v1/ingest/status, the metric) says 0 once
// the index has caught up. A client waiting for lag 0 must not wait
// forever on an idle server.
func TestIndexLagReachesZeroWhenCaughtUp(t *testing.T) {
	h := newHarness(t)
	lags := func() (stats, status, metric uint64) {
		var st service.Stats
		h.ok(h.do(req{Path: "/v1/stats"}), &st)
		var is client.IngestStatus
		h.ok(h.do(req{Path: "/v1/ingest/status"}), &is)
		w := h.do(req{Path: "/metrics"})
		m := regexp.MustCompile(`(?m)^pi_history_index_lag_entries (\d+)$`).FindStringSubmatch(w.Body.String())
		if m == nil {
			t.Fatalf("no pi_history_index_lag_entries in the metrics")
		}
		v, _ := strconv.ParseUint(m[1], 10, 64)
		return st.IndexLag, is.Index.Lag, v
	}
	parent := "l1"
	for _, add := range []int{0, 3, 16, 21} {
		for i := range add {
			id := fmt.Sprintf("n%d-%d", add, i)
			appendLines(h.t, h.journal, userLine(id, parent, "a line for the lag"))
			parent = id
		}
		if _, err := h.svc.Import(t.Context(), []string{h.sessions}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.Index.CatchUp(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		last := h.svc.Store.LastSeq()
		if got := h.svc.Index.IndexedThrough(); got != last {
			t.Fatalf("after catching up the index is through %d, want %d (last seq %d)", got, last, last)
		}
		if s, i, m := lags(); s != 0 || i != 0 || m != 0 {
			t.Errorf("caught up at last seq %d: lag %d in /v1/stats, %d in /v1/ingest/status, %d in the metric; want 0 everywhere", last, s, i, m)
		}
	}
}
