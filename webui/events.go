package webui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/pi-history/pi-history/internal/problem"
	"github.com/pi-history/pi-history/store"
)

// Event timing.
const (
	eventCoalesce     = 150 * time.Millisecond // commits closer than this make one event
	eventHeartbeat    = 20 * time.Second       // a comment line keeps proxies and the browser from timing out
	eventWriteTimeout = 30 * time.Second       // a write to a client that stopped reading fails after this
)

// Change is the data of a "change" event: the store's last seq and the
// sessions whose entries, size or current leaf moved since the last event.
// "hello", sent first, has the same shape with no sessions.
type Change struct {
	LastSeq  uint64   `json:"lastSeq"`
	Sessions []string `json:"sessions"`
}

type sessionMark struct {
	entries int
	bytes   int64
	leafSeq uint64
	leaf    string
	name    string
}

func marks(st *store.Store) (map[string]sessionMark, error) {
	infos, err := st.Sessions()
	if err != nil {
		return nil, err
	}
	m := make(map[string]sessionMark, len(infos))
	for _, si := range infos {
		m[si.ID] = sessionMark{si.Entries, si.Bytes, si.LeafSeq, si.Leaf, si.Name}
	}
	return m, nil
}

// EventsPath is where the page's event stream is served: a server counts
// these long-lived requests apart from the others (api.Options.StreamPaths).
const EventsPath = "/ui/events"

// events streams server-sent events until the client goes away.
func (u *ui) events(w http.ResponseWriter, r *http.Request) {
	st := u.o.Store
	rc := http.NewResponseController(w)
	// A server WriteTimeout must not cut the stream; each write gets its
	// own deadline instead, so that a client that stops reading frees its
	// stream (and the slot it holds) instead of keeping it until shutdown.
	_ = rc.SetWriteDeadline(time.Time{})
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) }
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")

	ch := st.Changed()
	prev, err := marks(st)
	if err != nil {
		u.o.Log.Error("webui: events", "err", err)
		writeError(w, http.StatusInternalServerError, problem.Internal, "Internal server error", "the server failed to read sessions; the cause is in its log")
		return
	}
	w.WriteHeader(http.StatusOK)
	send := func(event string, c Change) bool {
		if c.Sessions == nil {
			c.Sessions = []string{}
		}
		b, _ := json.Marshal(c)
		deadline()
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	deadline()
	if _, err := fmt.Fprint(w, "retry: 2000\n"); err != nil {
		return
	}
	if !send("hello", Change{LastSeq: st.LastSeq()}) {
		return
	}
	beat := time.NewTicker(eventHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-u.o.Done:
			return
		case <-beat.C:
			deadline()
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			continue
		case <-ch:
		}
		// Let a burst of commits settle into one event.
		t := time.NewTimer(eventCoalesce)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		ch = st.Changed()
		cur, err := marks(st)
		if err != nil {
			u.o.Log.Error("webui: events", "err", err)
			return
		}
		c := Change{LastSeq: st.LastSeq()}
		for id, m := range cur {
			if prev[id] != m {
				c.Sessions = append(c.Sessions, id)
			}
		}
		for id := range prev {
			if _, ok := cur[id]; !ok {
				c.Sessions = append(c.Sessions, id)
			}
		}
		slices.Sort(c.Sessions)
		prev = cur
		if len(c.Sessions) == 0 {
			continue
		}
		if !send("change", c) {
			return
		}
	}
}
