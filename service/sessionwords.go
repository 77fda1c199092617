package service

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pi-history/pi-history/index"
)

// SessionWordsDir is the session word index's directory in a data
// directory (index.Sessions).
const SessionWordsDir = "index-sessions"

// sessionWords opens the session word index on first use: a command that
// never asks for it does not pay for opening it. A data directory opened
// read-only gets one in memory, built when first asked.
func (s *Service) sessionWords() (*index.Sessions, error) {
	s.swMu.Lock()
	defer s.swMu.Unlock()
	if s.swClosed {
		return nil, fmt.Errorf("the data directory %s is closed", s.Dir)
	}
	if s.sw == nil {
		dir := filepath.Join(s.Dir, SessionWordsDir)
		if s.readOnly {
			dir = ""
		}
		sw, err := index.OpenSessions(dir, s.Store, s.Log)
		if err != nil {
			return nil, err
		}
		s.sw = sw
	}
	return s.sw, nil
}

// followSessionWords opens the session word index and keeps it up to date
// with the store until ctx ends (index.Sessions.Run): a server's.
func (s *Service) followSessionWords(ctx context.Context) {
	sw, err := s.sessionWords()
	if err != nil {
		s.Log.Error("session word index: cannot open it; word search of sessions will fail", "err", err)
		return
	}
	s.swFollowed.Store(true)
	sw.Run(ctx)
}

// MatchSessions finds the sessions whose title, name, project or user
// messages hold the words of q, best first, at most limit
// (index.Sessions.Match, whose query syntax and refusals apply). Without
// a server following the store, the index first catches up with it.
func (s *Service) MatchSessions(ctx context.Context, q string, limit int) ([]index.SessionMatch, error) {
	if err := index.CheckMatch(q, limit); err != nil {
		return nil, err
	}
	sw, err := s.sessionWords()
	if err != nil {
		return nil, err
	}
	if !s.swFollowed.Load() {
		if _, err := sw.CatchUp(ctx); err != nil {
			return nil, err
		}
	}
	return sw.Match(ctx, q, limit)
}

// closeSessionWords closes the session word index if it was opened; no
// later call opens it.
func (s *Service) closeSessionWords() error {
	s.swMu.Lock()
	defer s.swMu.Unlock()
	s.swClosed = true
	if s.sw == nil {
		return nil
	}
	return s.sw.Close()
}
