package main

// While 'pi-history serve' owns the data directory, opening it here fails
// with datadir.ErrLocked. The helpers below then find the server through
// <data>/server.json and <data>/api-token and answer through its API, so
// every command keeps working, with the same output, while the service runs.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	pihistory "github.com/pi-history/pi-history"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/service"
)

// remoteClient returns a client for the server that owns the data
// directory, given the error opening it returned. When no server owns it
// (the lock is held by another command, e.g. an import), or openErr is not
// a lock error, it returns openErr itself.
func (g *globals) remoteClient(openErr error) (*client.Client, error) {
	if !errors.Is(openErr, datadir.ErrLocked) {
		return nil, openErr
	}
	dir, err := g.dataDir()
	if err != nil {
		return nil, openErr
	}
	c, si, err := client.Discover(dir)
	if errors.Is(err, client.ErrNoServer) {
		return nil, openErr
	}
	if err != nil {
		return nil, fmt.Errorf("%w; a server is recorded but cannot be used: %v", openErr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("%w; %s names a server at %s (pid %d) but it does not answer: %v", openErr, client.ServerFile, si.URL, si.PID, err)
	}
	g.log.Debug("the data directory is owned by a running server; using its API", "url", si.URL, "pid", si.PID)
	return c, nil
}

// openOrRemote opens the data directory (creating it, for a bulk load:
// an import), or returns a client for the server that owns it: exactly one
// of svc and c is non-nil.
func (g *globals) openOrRemote(ctx context.Context) (svc *service.Service, c *client.Client, err error) {
	return g.orRemoteUntil(ctx, func() (*service.Service, error) { return g.openServiceWith(openHow{create: true, bulk: true}) })
}

// existingOrRemote is openOrRemote for a command that only reads (see
// openExisting): sharing the data directory unless share is false (a
// command that may build on disk what it reads, as 'sessions --match'
// builds the session word index), and waiting for it until ctx ends (a
// command that handles Ctrl-C itself passes the context its handler ends).
func (g *globals) existingOrRemote(ctx context.Context, share bool) (svc *service.Service, c *client.Client, err error) {
	return g.orRemoteUntil(ctx, func() (*service.Service, error) { return g.openExisting(share) })
}

// orRemoteUntil opens the data directory with open, or when a server owns
// it returns a client for that server. While another command holds the
// directory and no server answers for it (most often a one-shot command
// just as short), it waits up to lockWait, saying so after lockTell,
// rather than failing at once; the wait ends early when ctx does (a
// command's Ctrl-C handler cancels it).
func (g *globals) orRemoteUntil(ctx context.Context, open func() (*service.Service, error)) (*service.Service, *client.Client, error) {
	return g.waitToOpen(ctx, lockWait, func(locked *datadir.LockedError) {
		fmt.Fprintf(g.stderr, "pi-history: waiting for %s, which holds %s (up to %s)\n", holder(locked.PID), locked.Dir, lockWait)
	}, open)
}

// waitToOpen calls open until it opens the data directory, fails other
// than by another process holding it, or a server answers for the
// directory (then the server's client is returned), for at most wait;
// tell is called once when the wait passes lockTell.
func (g *globals) waitToOpen(ctx context.Context, wait time.Duration, tell func(*datadir.LockedError), open func() (*service.Service, error)) (*service.Service, *client.Client, error) {
	start, told := time.Now(), false
	for {
		svc, err := open()
		if err == nil {
			return svc, nil, nil
		}
		c, rerr := g.remoteClient(err)
		if rerr == nil {
			return nil, c, nil
		}
		var locked *datadir.LockedError
		if rerr != err || !errors.As(err, &locked) {
			return nil, nil, rerr
		}
		if time.Since(start) >= wait {
			return nil, nil, fmt.Errorf("waited %s for %s, which holds %s and is no server this command can use; run the command again once it has ended, or use another --data: %w",
				wait, holder(locked.PID), locked.Dir, datadir.ErrLocked)
		}
		if !told && time.Since(start) >= lockTell {
			tell(locked)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("interrupted while waiting for %s, which holds %s: %w", holder(locked.PID), locked.Dir, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// A command waits up to lockWait for another process holding the data
// directory (when no server answers for it), trying every lockPoll, and
// says so after lockTell. Tests shorten them.
var (
	lockWait = 10 * time.Second
	lockTell = 500 * time.Millisecond
	lockPoll = 20 * time.Millisecond
)

// holder names the process pid for people: its command line where the
// system shows it ("pi-history import ..." says what is waited for).
func holder(pid int) string {
	if pid <= 0 {
		return "another process"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("process %d", pid)
	}
	args := strings.Fields(strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	if len(args) > 0 {
		args[0] = filepath.Base(args[0])
	}
	line := strings.Join(args, " ")
	if r := []rune(line); len(r) > 60 {
		line = string(r[:60]) + "…"
	}
	return fmt.Sprintf("process %d (%s)", pid, line)
}

// remoteBackend answers through the API, as client.History does: a bad or
// unknown parameter comes back as the *pihistory.Error the engine returns
// locally, so commands print the same messages and exit with the same codes.
type remoteBackend struct {
	pihistory.History
	c *client.Client
}

func (r *remoteBackend) Close() error { return nil }

func (r *remoteBackend) MatchSessions(ctx context.Context, words string, limit int) ([]pihistory.SessionSummary, error) {
	ss, err := r.c.MatchSessions(ctx, words, limit)
	return ss, client.Refusal(err)
}
