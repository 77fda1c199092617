package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api"
	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/ingest"
	"github.com/pi-history/pi-history/internal/procmem"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/webui"
)

var serveFlags struct {
	addr       string
	allowHosts string
	noWatch    bool
	memoryMB   int
	cacheMB    int  // replaced by memoryMB: refused with a pointer to it
	sketchMB   int  // the same
	smallPages bool // removed (no more huge pages): refused with why
}

func init() {
	register(&command{
		name:    "serve",
		usage:   "[--addr HOST:PORT] [--allow-host NAME,...] [--no-watch] [--memory-mb N]",
		summary: "watch Pi's sessions and serve the HTTP API and web UI",
		help: `Owns the data directory: reads every journal Pi writes into the store as it
is written (within milliseconds), and serves the HTTP API (/v1, documented at
/v1/openapi.json), /metrics, /healthz and the web UI ('pi-history open'
logs a browser in to it).

Listens on 127.0.0.1:7314 unless --addr says otherwise, and records the
address in <data>/server.json; other pi-history commands find the server
there and talk to it while it runs. Every /v1 request needs the bearer token
printed by 'pi-history token'. Binding to a non-loopback address exposes
your history to the network (the token still guards it): do it only on
purpose, and name the host clients use with --allow-host.

--memory-mb bounds what the server keeps in memory: 256 MB unless told
(a quarter of the machine's memory when it has less than a gigabyte). A
quarter of it caches decompressed store blocks, and the rest is for the
store's write buffers, the search index's newest entries, each session's
current branch, requests in flight and the collector; the process's Go
memory limit is set so that all of it stays within the budget. The search
index's files are read in place: the pages they occupy are the kernel's
file cache, outside the budget. The "serving" line of the log gives each
part. docs/tuning.md says how to choose a budget.

Once the journals that changed since the last run are read (all of them
into a new data directory, logged with progress), the server loads every
session's current branch in the background, searches running meanwhile.

Stops cleanly on Ctrl-C or SIGTERM: requests in progress finish first.

Examples:
  pi-history serve
  pi-history serve --addr 127.0.0.1:8080 --log-level debug
  pi-history open        # in another terminal: the web UI, logged in`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.StringVar(&serveFlags.addr, "addr", api.DefaultAddr, "address to listen on (HOST:PORT)")
			fs.StringVar(&serveFlags.allowHosts, "allow-host", "", "further names clients may use in the Host header, comma-separated (for a non-loopback --addr)")
			fs.BoolVar(&serveFlags.noWatch, "no-watch", false, "do not watch Pi's sessions directories (serve what is stored)")
			fs.IntVar(&serveFlags.memoryMB, "memory-mb", 0, "MB of memory the server may keep: the store's cache and the Go heap's limit (0: 256, less on a machine under 1 GB)")
			fs.IntVar(&serveFlags.cacheMB, "cache-mb", 0, "replaced by --memory-mb")
			fs.IntVar(&serveFlags.sketchMB, "sketch-mb", 0, "replaced by --memory-mb")
			fs.BoolVar(&serveFlags.smallPages, "small-pages", false, "removed: memory is no longer moved into huge pages")
		},
		run: runServe,
	})
}

// errRestartServe ends serveOnce when the store asks for a restart (see
// store.Store.RestartWanted).
var errRestartServe = errors.New("restart to resume writes")

// runServe serves until a signal; when a failed write stopped the store's
// writes and the disk takes writes again, it shuts down as for a signal
// and replaces itself with a new server process (the same pid, arguments
// and environment), whose store replays its log and takes writes again.
func runServe(g *globals, args []string) error {
	err := serveOnce(g, args)
	if !errors.Is(err, errRestartServe) {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("restart after a write fault: %w; start 'pi-history serve' again to resume writes", err)
	}
	g.log.Info("restarting to resume writes after a write fault", "exe", exe)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, restartedEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("%s=%d", restartedEnv, time.Now().Unix()))
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("restart after a write fault: exec %s: %w; start 'pi-history serve' again to resume writes", exe, err)
	}
	return nil
}

// restartedEnv holds, in a server that replaced itself, when it did (Unix
// seconds); restartEvery is the least time between two such restarts, so
// that a disk that fails again at once does not make the server restart
// over and over.
const (
	restartedEnv = "PI_HISTORY_RESTARTED_AT"
	restartEvery = time.Minute
)

// restartDelay is how long a server must wait before it replaces itself
// again.
func restartDelay(now time.Time) time.Duration {
	at, err := strconv.ParseInt(os.Getenv(restartedEnv), 10, 64)
	if err != nil {
		return 0
	}
	return max(0, time.Unix(at, 0).Add(restartEvery).Sub(now))
}

// serveOnce runs the server once, from opening the data directory until
// it is stopped (or restarts itself after a failed write).
//
// One piece (174 lines): its steps must run in this order (the store
// opened before the token and the listener, server.json written once
// listening, the watcher started before the preload, ingest stopped before
// the store closes), and each resource is released by a defer that runs,
// in reverse order, when serving ends; split, those releases would have to
// be handed back up through returned closers.
func serveOnce(g *globals, args []string) error {
	if len(args) > 0 {
		return usagef("serve takes no arguments")
	}
	if _, _, err := net.SplitHostPort(serveFlags.addr); err != nil {
		return usagef("--addr %q: want HOST:PORT, like 127.0.0.1:7314", serveFlags.addr)
	}
	dir, err := g.dataDir()
	if err != nil {
		return err
	}
	sessions, err := datadir.SessionsDirs(g.sessions)
	if err != nil {
		return err
	}
	if serveFlags.cacheMB != 0 || serveFlags.sketchMB != 0 {
		return usagef("--cache-mb and --sketch-mb were replaced by one budget: use --memory-mb N (256 unless told)")
	}
	if serveFlags.smallPages {
		return usagef("--small-pages was removed: the server no longer moves its memory into huge pages (its heap no longer holds the search's data), so memory always stays in small pages; drop the flag")
	}
	total, err := megabytes("--memory-mb", serveFlags.memoryMB, service.ServeMemoryBytes)
	if err != nil {
		return err
	}
	mem := service.SplitMemory(total)
	// The process-wide settings are decided here, not in the library.
	procmem.TuneServe(mem.GoLimit)
	reserve, err := reserveBytes()
	if err != nil {
		return err
	}
	svc, err := g.openToServe(service.Options{DataDir: dir, SessionsDirs: sessions, Log: g.log, Memory: mem, ReserveBytes: reserve,
		FollowSessions: true})
	if err != nil {
		return err
	}
	defer svc.Close()

	token, created, fixed, err := api.LoadOrCreateToken(dir)
	if err != nil {
		return err
	}
	if created {
		g.log.Info("created the API token; 'pi-history token' prints it", "file", dir+"/"+client.TokenFile)
	}
	if fixed {
		g.log.Warn("the API token file was readable by others; made it private (delete it and restart for a new token)", "file", dir+"/"+client.TokenFile)
	}

	ln, err := net.Listen("tcp", serveFlags.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: the address is in use by another program (another pi-history serve for another data directory?); give another with --addr, e.g. --addr 127.0.0.1:7315", serveFlags.addr)
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w; give another address with --addr HOST:PORT", serveFlags.addr, err)
	}
	addr := ln.Addr().String()
	if !api.IsLoopback(addr) {
		g.log.Warn("listening on a NON-LOOPBACK address: other machines can reach this server; only the bearer token protects your history", "addr", addr)
		fmt.Fprintf(g.stderr, "\n  WARNING: pi-history is listening on %s, reachable from other machines.\n"+
			"  Your whole session history is guarded only by the API token. Use --addr 127.0.0.1:7314 unless you mean it.\n\n", addr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A failed write stops the store's writes until a new process opens
	// it: once the disk takes writes again, the server restarts itself.
	var restart atomic.Bool
	go func() {
		select {
		case <-svc.Store.RestartWanted():
			if d := restartDelay(time.Now()); d > 0 {
				g.log.Warn("the server restarted itself less than a minute ago; waiting before it does again", "wait", d.Round(time.Second).String())
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return
				}
			}
			restart.Store(true)
			g.log.Warn("restarting the server to resume writes; requests are refused for a moment")
			stop()
		case <-ctx.Done():
		}
	}()

	serial := svc.Serial()
	var watcher *ingest.Watcher
	if !serveFlags.noWatch {
		watcher = ingest.NewWatcher(svc.Store, sessions, ingest.WatchOptions{Serial: serial, Log: g.log})
	}
	var allow []string
	for _, h := range strings.Split(serveFlags.allowHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			allow = append(allow, h)
		}
	}
	logins := webui.NewLogins()
	engine := search.New(svc.Store, svc.Index)
	srv, err := newAPIServer(g, svc, serverParts{token: token, addr: addr, allow: allow, watcher: watcher, serial: serial, done: ctx.Done(), logins: logins, engine: engine})
	if err != nil {
		ln.Close()
		return err
	}

	info := client.ServerInfo{Addr: addr, PID: os.Getpid(), URL: api.URLFor(addr)}
	if err := api.WriteServerInfo(dir, info); err != nil {
		ln.Close()
		return fmt.Errorf("record the server in %s: %w", dir, err)
	}
	defer api.RemoveServerInfo(dir, info.PID)

	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	if watcher != nil {
		go func() {
			defer close(wdone)
			if err := watcher.Run(wctx); err != nil {
				g.log.Error("cannot watch Pi's sessions directories; journals are read only by import and sync", "err", err)
			}
		}()
		// A full disk stops ingest, not the server: once space is back,
		// the journals are read again at once.
		svc.OnWritesResumed(wctx, watcher.Rescan)
	} else {
		close(wdone)
	}
	// Preload what the first searches would otherwise read from disk
	// piece by piece (see service.Warm).
	warmDone := make(chan struct{})
	go func() {
		defer close(warmDone)
		if watcher != nil {
			// The warm-up waits for the first scan (see
			// ingest.Watcher.FirstScanDone).
			select {
			case <-watcher.FirstScanDone():
			case <-wdone: // the watcher could not start
			case <-wctx.Done():
			}
		}
		preload(wctx, g, svc, engine)
	}()
	g.log.Info("serving", "url", info.URL, "data", dir, "sessions", strings.Join(sessions, string(os.PathListSeparator)), "watch", watcher != nil, "memoryMB", mem.Total>>20, "cacheMB", mem.Cache>>20, "memTableMB", mem.MemTable>>20, "goLimitMB", mem.GoLimit>>20)
	// Like Jupyter: a URL that logs a browser in once (the code is single-use
	// and expires in 10 minutes; 'pi-history open' makes a fresh one).
	fmt.Fprintf(g.stdout, "pi-history is serving %s\nOpen the web UI (this link logs you in once, for 10 minutes):\n    %s\n",
		info.URL, webui.LoginURL(info.URL, logins.NewCode()))

	err = srv.Serve(ctx, ln, api.Timeouts{})
	// Every request has finished: stop reading journals (the read in
	// progress completes), then the deferred calls forget server.json and
	// close the store and index.
	wcancel()
	<-wdone
	<-warmDone
	if err != nil {
		return err
	}
	g.log.Info("stopped")
	if restart.Load() {
		return errRestartServe
	}
	return nil
}

// preload warms svc for search (service.Warm), then the engine's titles
// (search.Engine.WarmTitles), and logs what it did. It stops when ctx
// ends.
func preload(ctx context.Context, g *globals, svc *service.Service, engine *search.Engine) {
	w, err := svc.Warm(ctx)
	var titles int
	var titleTime time.Duration
	if err == nil {
		t0 := time.Now()
		titles, err = engine.WarmTitles(ctx)
		titleTime = time.Since(t0)
	}
	switch {
	case err != nil && ctx.Err() == nil:
		g.log.Warn("searches will load from disk what was not preloaded", "err", err)
	case err == nil:
		g.log.Info("preloaded for search", "branches", w.Branches, "branchTime", w.BranchTime.Round(time.Millisecond),
			"titles", titles, "titleTime", titleTime.Round(time.Millisecond))
	}
}

// serverParts are what newAPIServer needs besides the open data directory.
type serverParts struct {
	token, addr string
	allow       []string
	watcher     *ingest.Watcher // nil: no watcher
	serial      *ingest.Serial  // nil: a new one
	done        <-chan struct{} // closed when the server stops (ends the web UI's event streams)
	logins      *webui.Logins   // nil: a new one
	engine      *search.Engine  // nil: a new one
}

// newAPIServer wires everything 'serve' answers over svc: the /v1 API, the
// notebook and rollover routes, POST /v1/ui/login-code for 'pi-history
// open', and the web UI with its login cookie.
func newAPIServer(g *globals, svc *service.Service, p serverParts) (*api.Server, error) {
	engine := p.engine
	if engine == nil {
		engine = search.New(svc.Store, svc.Index)
	}
	contextRoutes := api.NewContextRoutes(svc.Store, engine, svc.Dir, g.log)
	logins := p.logins
	if logins == nil {
		logins = webui.NewLogins()
	}
	var srv *api.Server
	srv, err := api.New(api.Options{
		Service: svc, Engine: engine, Token: p.token, Addr: p.addr, AllowedHosts: p.allow,
		Watcher: p.watcher, Serial: p.serial, Log: g.log, StreamPaths: []string{webui.EventsPath},
		MountV1: func(r chi.Router) {
			contextRoutes.Mount(r)
			api.MountLoginCode(r, logins.CodeHandler())
		},
		Mount: func(r chi.Router) {
			ui := webui.Handler(webui.Options{Store: svc.Store, Logins: logins, ValidToken: func(t string) bool { return srv.Auth().ValidToken(t) },
				Done: p.done, Log: g.log, Engine: engine})
			r.Handle("/", ui)
			r.Handle("/assets/*", ui)
			r.Handle("/ui/*", ui)
		},
	})
	if err != nil {
		return nil, err
	}
	srv.Auth().SetCookieValidator(logins.ValidCookieValue)
	return srv, nil
}

// megabytes turns the value mb of a memory flag into bytes: def() for 0,
// a usage error below 8 MB.
func megabytes(flag string, mb int, def func() int64) (int64, error) {
	least := int(service.MinMemoryBytes >> 20)
	switch {
	case mb == 0:
		return def(), nil
	case mb < least:
		return 0, usagef("%s %d: want at least %d, or 0 for the default", flag, mb, least)
	}
	return int64(mb) << 20, nil
}

// openToServe opens the data directory for serve. While another command
// holds it (a search reading it, an import) and no server answers for it,
// it waits up to serveLockWait, logging so, rather than failing: the Pi
// extension starts serve whenever it finds none, whatever else runs. A
// server answering for it is an error naming it.
func (g *globals) openToServe(o service.Options) (*service.Service, error) {
	svc, c, err := g.waitToOpen(context.Background(), serveLockWait, func(locked *datadir.LockedError) {
		g.log.Info("waiting for another process holding the data directory", "holder", holder(locked.PID), "dir", locked.Dir, "upTo", serveLockWait.String())
	}, func() (*service.Service, error) { return service.Open(o) })
	if c != nil {
		return nil, fmt.Errorf("%w\n(a server answers at %s: use it, or stop it first)", datadir.ErrLocked, c.BaseURL())
	}
	return svc, err
}

// serveLockWait is how long serve waits for another process holding the
// data directory (openToServe). Tests shorten it.
var serveLockWait = 30 * time.Second
