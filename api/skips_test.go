package api

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/service"
)

// TestWatcherSkipsAreReported: a file in the sessions directory the
// watcher cannot use is listed with its reason in /v1/ingest/status,
// counted in the metrics and in /v1/stats.
func TestWatcherSkipsAreReported(t *testing.T) {
	var w *ingest.Watcher
	h := newHarness(t, func(o *Options) {
		w = ingest.NewWatcher(o.Service.Store, o.Service.SessionsDirs, ingest.WatchOptions{Rescan: time.Hour})
		o.Watcher = w
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	bad := filepath.Join(filepath.Dir(h.journal), "notes.jsonl")
	if err := os.WriteFile(bad, []byte(`{"note":"not a journal"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var is client.IngestStatus
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		h.ok(h.do(req{Path: "/v1/ingest/status"}), &is)
		if is.Watcher != nil && len(is.Watcher.Skipped) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the header-less file is not listed after 5s: %+v", is.Watcher)
		}
	}
	if sk := is.Watcher.Skipped; len(sk) != 1 || sk[0].Path != bad || !strings.Contains(sk[0].Reason, "not read") || is.Watcher.Skips != 1 {
		t.Errorf("watcher skips: %+v (%d counted); want %s, not read, 1 counted", sk, is.Watcher.Skips, bad)
	}
	m := regexp.MustCompile(`(?m)^pi_history_watcher_skips_total (\d+)$`).FindStringSubmatch(h.do(req{Path: "/metrics"}).Body.String())
	if m == nil || m[1] != "1" {
		t.Errorf("pi_history_watcher_skips_total: %v; want 1", m)
	}
	var st service.Stats
	h.ok(h.do(req{Path: "/v1/stats"}), &st)
	if st.SkippedPaths == nil || *st.SkippedPaths != 1 {
		t.Errorf("stats skippedPaths %v; want 1", st.SkippedPaths)
	}
}
