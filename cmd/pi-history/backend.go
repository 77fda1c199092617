package main

import (
	"context"
	"errors"

	pihistory "github.com/pi-history/pi-history"

	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

// backend is what read-only commands need, a History: answered either by
// opening the data directory here (a search.Engine) or, when a server owns
// it, by that server's API (client.History), with the same errors.
type backend interface {
	pihistory.History
	// MatchSessions lists the sessions whose words match words, best
	// first (service.Service.MatchSessions; GET /v1/sessions?match=).
	MatchSessions(ctx context.Context, words string, limit int) ([]pihistory.SessionSummary, error)
	Close() error
}

// localBackend answers from a data directory opened by this process.
type localBackend struct {
	*search.Engine
	svc *service.Service
}

func (l *localBackend) Close() error { return l.svc.Close() }

func (l *localBackend) MatchSessions(ctx context.Context, words string, limit int) ([]pihistory.SessionSummary, error) {
	ms, err := l.svc.MatchSessions(ctx, words, limit)
	if err != nil {
		return nil, err
	}
	return l.Engine.MatchedSessions(ctx, ms)
}

// backend opens the data directory, or (when a server owns it) connects to
// the server. See remote.go.
// sessionArg resolves a session given on the command line as export
// does: its id, or a unique prefix of it ('0199bbbb'). An id no session
// starts with is passed on as given, for the engine's own error.
func sessionArg(ctx context.Context, b backend, arg string) (string, error) {
	if arg == "" {
		return "", nil
	}
	// A whole id is the usual case: one lookup, not a list of every session.
	if _, err := b.Session(ctx, arg); err == nil {
		return arg, nil
	}
	ss, err := b.Sessions(ctx)
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(ss))
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	id, err := pickPrefix(arg, ids)
	if errors.Is(err, store.ErrNotFound) {
		return arg, nil
	}
	return id, err
}

// backend opens the data directory for a command that reads (sharing it
// unless share is false: see existingOrRemote), or answers through the
// server that owns it (see orRemoteUntil).
func (g *globals) backend(share bool) (backend, error) {
	svc, c, err := g.existingOrRemote(context.Background(), share)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return &remoteBackend{History: c.History(), c: c}, nil
	}
	return &localBackend{Engine: search.New(svc.Store, svc.Index), svc: svc}, nil
}
