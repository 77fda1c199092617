package api

import (
	"context"
	"net/http"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/search"
)

// sessionsMatching is GET /v1/sessions?match=: the sessions whose words
// match, best first, described as the plain listing describes them.
func (s *Server) sessionsMatching(ctx context.Context, words string, limit int) ([]search.SessionSummary, error) {
	ms, err := s.svc.MatchSessions(ctx, words, limit)
	if err != nil {
		return nil, err
	}
	return s.engine.MatchedSessions(ctx, ms)
}

// handleSessions is GET /v1/sessions: every session, newest activity
// first, or with match those whose words match (sessionsMatching).
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	words, match := q.one("match")
	limit := q.int("limit", 1)
	if err := q.done(); err != nil {
		return err
	}
	if !match && limit != 0 {
		return badParam("limit", "limit bounds a word search: give it with match")
	}
	if limit == 0 {
		limit = index.DefaultMatchLimit
	}
	var ss []search.SessionSummary
	var err error
	if match {
		ss, err = s.sessionsMatching(r.Context(), words, limit)
	} else {
		ss, err = s.engine.Sessions(r.Context())
	}
	if err != nil {
		return err
	}
	if ss == nil {
		ss = []search.SessionSummary{}
	}
	return writeJSON(w, client.SessionsResponse{Sessions: ss})
}
