package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/webui"
)

var openPrint bool

func init() {
	register(&command{
		name:    "open",
		usage:   "[--print] [SESSION[/ENTRY]]",
		summary: "log in to the web UI of the running server (opens a browser), at a session or entry if given",
		help: `Asks the running 'pi-history serve' (found through <data>/server.json, with
the token in <data>/api-token) for a one-time login code, prints the login
URL and opens it in your browser (xdg-open, or open on macOS) when stdout
is a terminal. The browser is handed a private page in the data directory
(open-login.html, readable by you only) that forwards to the URL, not the
URL itself: other users of the machine can read a program's command line.
(A browser confined so that it cannot read the data directory, as a snap
package may be, shows an error instead: paste the printed URL into it.)
The link logs the browser in once, within 10 minutes, and
sets a session cookie good for 30 days; a restarted server forgets it and
you run 'pi-history open' again. Anyone who gets the link before you use
it can log in as you: do not paste it anywhere shared.

With --print the URL is only printed (for a browser on another machine
reached through an SSH tunnel, say).

Given a session (its id or a unique prefix, as 'show' takes it) the browser
lands on that session's page; given SESSION/ENTRY, scrolled to the entry
(the address 'search' prints beside each hit while a server runs).

Examples:
  pi-history open
  pi-history open 01a2286a               # that session's page
  pi-history open 01a2286a/3f9c2e10      # that entry, highlighted
  pi-history open --print
  ssh -L 7314:127.0.0.1:7314 devbox pi-history open --print   # then open the URL locally`,
		flags: func(fs *flag.FlagSet, g *globals) {
			fs.BoolVar(&openPrint, "print", false, "only print the login URL; do not start a browser")
		},
		run: runOpen,
	})
}

// browserOpener returns the command that opens a URL in the desktop's
// browser, or "" when there is none. Tests replace it.
var browserOpener = func() string {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// stdoutIsTerminal reports whether w is a terminal. Tests replace it.
var stdoutIsTerminal = isTerminal

func runOpen(g *globals, args []string) error {
	if len(args) > 1 {
		return usagef("open takes at most one SESSION or SESSION/ENTRY")
	}
	c, err := g.runningServer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	route := ""
	if len(args) == 1 {
		if route, err = openRoute(ctx, &remoteBackend{History: c.History()}, args[0]); err != nil {
			return err
		}
	}
	lc, err := c.LoginCode(ctx)
	if err != nil {
		return fmt.Errorf("ask the server at %s for a login code: %w", c.BaseURL(), err)
	}
	u := webui.LoginURLTo(c.BaseURL(), lc.Code, route)
	fmt.Fprintln(g.stdout, u)
	if openPrint || !stdoutIsTerminal(g.stdout) {
		return nil
	}
	opener := browserOpener()
	if opener == "" {
		fmt.Fprintln(g.stderr, "no xdg-open or open found: open the URL above in a browser (good once, for 10 minutes)")
		return nil
	}
	dir, err := g.dataDir()
	if err != nil {
		return err
	}
	page, err := webui.WriteLoginPage(dir, u)
	if err != nil {
		fmt.Fprintf(g.stderr, "cannot write the login page for the browser (%v): open the URL above in a browser\n", err)
		return nil
	}
	return startBrowser(g.stderr, opener, (&url.URL{Scheme: "file", Path: page}).String())
}

// startBrowser runs opener on u without waiting for the browser.
func startBrowser(stderr io.Writer, opener, u string) error {
	cmd := exec.Command(opener, u)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "cannot start %s (%v): open the URL above in a browser\n", opener, err)
		return nil
	}
	go cmd.Wait() // reap it if it exits before we do
	return nil
}

// runningServer returns a client for the server recorded in the data
// directory, checked to answer; the error says how to start one.
func (g *globals) runningServer() (*client.Client, error) {
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	c, si, err := client.Discover(dir)
	if errors.Is(err, client.ErrNoServer) {
		return nil, fmt.Errorf("no pi-history server is running for %s; start it with 'pi-history serve' (in another terminal, or as a service)", dir)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("the pi-history server recorded in %s (%s, pid %d) does not answer (%v); start it with 'pi-history serve'",
			dir, si.URL, si.PID, err)
	}
	return c, nil
}

// openRoute is the web UI's route of the page for arg, SESSION or
// SESSION/ENTRY (the session as an id or a unique prefix of it); an
// unknown session or entry is an error here, not a blank page there.
func openRoute(ctx context.Context, b backend, arg string) (string, error) {
	sid, entry, _ := strings.Cut(arg, "/")
	if sid == "" {
		return "", usagef("open %q: give SESSION or SESSION/ENTRY", arg)
	}
	sid, err := sessionArg(ctx, b, sid)
	if err != nil {
		return "", err
	}
	if _, err := b.Session(ctx, sid); err != nil {
		return "", err
	}
	if entry == "" {
		return strings.TrimPrefix(client.SessionURL("", sid), "/#"), nil
	}
	if _, err := b.Read(ctx, &search.ReadRequest{Session: sid, Entry: entry, Length: 1}); err != nil {
		return "", err
	}
	return strings.TrimPrefix(client.EntryURL("", sid, entry), "/#"), nil
}
