package webui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/testutil/chromium"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
)

// TestBrowserShowsTheFirstReadingOfPiSessions runs a server whose watcher
// reads Pi's sessions for the first time, one journal held back: the page
// shows a banner saying how far the reading is, and once it ends the banner
// goes and the list holds every session, each titled by its first message.
func TestBrowserShowsTheFirstReadingOfPiSessions(t *testing.T) {
	chromium.Path(t)
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions", "--home-dev-app--")
	os.MkdirAll(sessions, 0o755)
	for i, first := range []string{"Make the login form remember me", "Why is the build slow?", "Port the parser to Go"} {
		sid := fmt.Sprintf("0199aaaa-0000-7000-8000-00000000000%d", i)
		lines := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-11-0%dT08:00:00.000Z","cwd":"/home/dev/app"}`+"\n", sid, i+1) +
			fmt.Sprintf(`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-0%dT08:00:01.000Z","message":{"role":"user","content":%q}}`+"\n", i+1, first+"\nwith details below")
		if err := os.WriteFile(filepath.Join(sessions, fmt.Sprintf("2026-11-0%dT08-00-00-000Z_%s.jsonl", i+1, sid)), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := service.Open(service.Options{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	// The last journal's read waits until the test lets it end.
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	w := ingest.NewWatcher(svc.Store, []string{filepath.Dir(sessions)}, ingest.WatchOptions{Rescan: time.Hour, Workers: 1,
		OnIngest: func(path string, _ ingest.FileReport, _ error) {
			if strings.Contains(path, "00000000002") {
				<-release
			}
		}})
	logins := NewLogins()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ui := Handler(Options{Store: svc.Store, Logins: logins, Done: ctx.Done()})
	srv, err := api.New(api.Options{Service: svc, Engine: search.New(svc.Store, svc.Index), Token: "browser-test-token-0123456789",
		Addr: ln.Addr().String(), Watcher: w, Mount: func(r chi.Router) {
			r.Get("/", ui.ServeHTTP)
			r.Handle("/assets/*", ui)
			r.Handle("/ui/*", ui)
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Auth().SetCookieValidator(logins.ValidCookieValue)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, api.Timeouts{Shutdown: 5 * time.Second}) }()
	watched := make(chan error, 1)
	go func() { watched <- w.Run(ctx) }()
	t.Cleanup(func() {
		free()
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		<-watched
		svc.Close()
	})
	e := &browserEnv{base: "http://" + ln.Addr().String(), logins: logins, svc: svc, shots: chromium.ShotsDir(t)}
	e.ctx = chromium.Start(t, chromedp.Flag("disable-quic", true))

	e.run(t, "login while the reading is held", chromedp.Navigate(LoginURL(e.base, logins.NewCode())),
		waitJS(`document.getElementById('firstscan') !== null`))
	text := e.str(t, `document.getElementById('firstscan').textContent`)
	if !strings.Contains(text, "Reading Pi's sessions: 2 of 3 journals") || !strings.Contains(text, "partial") {
		t.Errorf("banner %q; want it to say 2 of 3 journals are read and that results are partial", text)
	}
	e.shot(t, "first-scan.png")
	free()
	e.run(t, "the reading ends", waitJS(`document.getElementById('firstscan') === null && document.querySelectorAll('tr.srow').length === 3`))
	names := e.str(t, `[...document.querySelectorAll('tr.srow a.sname')].map(a => a.textContent).sort().join('|')`)
	if names != "Make the login form remember me|Port the parser to Go|Why is the build slow?" {
		t.Errorf("session titles %q; want each session's first message line", names)
	}
	if title := e.str(t, `document.title`); title != "pi-history" {
		t.Errorf("list page title %q", title)
	}
	e.run(t, "open one", chromedp.Navigate(e.base+"/#/s/0199aaaa-0000-7000-8000-000000000001"),
		waitJS(`document.title === 'pi-history · Why is the build slow?'`))
}
