// Package chromium starts headless Chromium for browser tests. It is apart
// from testutil so that the programs using testutil do not link chromedp.
package chromium

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pi-history/pi-history/internal/testutil"
)

// Path returns Debian's Chromium, or skips the test when it is not
// installed (fails it under PI_HISTORY_REQUIRE_TOOLS=1; see testutil.NeedTool).
func Path(t testing.TB) string {
	t.Helper()
	exe := ""
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if lp, err := exec.LookPath(p); err == nil {
			exe = lp
			break
		}
	}
	testutil.NeedTool(t, exe != "", "chromium (apt-get install chromium)")
	return exe
}

// Start starts headless Chromium (1280×900, a fresh profile, no background
// traffic) with opts added to its options, and returns the context of its
// first tab. The browser stops when the test and its subtests are done.
func Start(t testing.TB, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exe := Path(t)
	all := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")),
		chromedp.WindowSize(1280, 900),
	}, opts...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), all...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// ShotsDir is where a browser test saves its screenshots:
// $PI_HISTORY_SCREENSHOTS when set, else a temporary directory.
func ShotsDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("PI_HISTORY_SCREENSHOTS")
	if d == "" {
		d = t.TempDir()
	}
	os.MkdirAll(d, 0o755)
	return d
}
