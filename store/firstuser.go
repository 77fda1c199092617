package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pi-history/pi-history/journal"
)

// KnowFirstUsers gives every session record that does not know the seq
// of its first user message (one written before sessions kept it,
// decision 460), or that message's title line, the seq the walk of its
// records finds and the line, so that its title stops walking them and
// reading the message. Each session is read, walked and written under the
// write lock, so that entries added meanwhile are not lost or missed. A
// server calls it once at start; it returns how many records it
// completed, and the errors of sessions it could not complete (it goes on
// past them). Once a pass leaves none behind, a mark says so and later
// calls return at once, without reading every record at each start. The
// writes are not synced: a crash loses only work the next call does
// again.
func (s *Store) KnowFirstUsers(ctx context.Context) (int, error) {
	if s.readOnly {
		return 0, nil
	}
	if _, err := s.getMeta(firstUsersMark); err == nil {
		return 0, nil // a pass found nothing left to do: records made since know
	}
	infos, err := s.Sessions()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, si := range infos {
		if knowsFirstUser(si) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		done, err := s.knowFirstUser(si.ID)
		if errors.Is(err, ErrWritesStopped) {
			return n, err // every session would fail the same way
		}
		if err != nil {
			// This session's titles go on walking; the others need not.
			errs = append(errs, fmt.Errorf("store: keep the first user message of session %s: %w", si.ID, err))
			continue
		}
		if done {
			n++
		}
	}
	if len(errs) == 0 {
		// Records made from here on know at once, so no pass is needed
		// again (a record an older version rewrites, after a downgrade,
		// goes on walking: slower titles, the same ones).
		if err := s.db.Set(append([]byte{tagMeta}, firstUsersMark...), nil, pebble.NoSync); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// firstUsersMark names the meta key set once KnowFirstUsers completed
// every session record, titles included (the pass before titles were kept
// set "firstusers"; a store marked so gets one more).
const firstUsersMark = "firsttitles"

// knowFirstUser is KnowFirstUsers for one session: false when it is gone
// or knows already.
func (s *Store) knowFirstUser(sid string) (bool, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return false, err
	}
	si, err := s.Session(sid)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil || knowsFirstUser(si) {
		return false, err
	}
	first, title, err := s.firstUserTitle(si)
	if err != nil {
		return false, err
	}
	si.FirstUser, si.FirstUserKnown, si.FirstTitle = first, true, title
	sib, err := json.Marshal(si)
	if err != nil {
		return false, err
	}
	return true, s.db.Set(sessionKey(tagSession, sid), sib, pebble.NoSync)
}

// knowsFirstUser says whether si knows its first user message and, when
// it has one, the message's title line.
func knowsFirstUser(si *SessionInfo) bool {
	return si.FirstUserKnown && (si.FirstUser == 0 || si.FirstTitle != "")
}

// FirstTitle returns the title line (journal.TitleLine) of session si's
// first user message among its first TitleScan entries, "" when it has
// none: from the record when it knows it, else worked out from the
// session's records and the message's text.
func (s *Store) FirstTitle(si *SessionInfo) (string, error) {
	_, title, err := s.firstUserTitle(si)
	return title, err
}

// firstUserTitle returns the seq of si's first user message (FirstUser)
// and its title line (FirstTitle).
func (s *Store) firstUserTitle(si *SessionInfo) (uint64, string, error) {
	if knowsFirstUser(si) {
		return si.FirstUser, si.FirstTitle, nil
	}
	first, err := s.FirstUser(si)
	if err != nil || first == 0 {
		return 0, "", err
	}
	text, err := s.Text(first)
	if err != nil {
		return 0, "", err
	}
	return first, journal.TitleLine(text, journal.TitleRunes), nil
}
