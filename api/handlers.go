package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/index"
	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/search"
	"github.com/pi-history/pi-history/service"
	"github.com/pi-history/pi-history/store"
)

// handleHealth answers without a token; given ?challenge=C (see
// client.Proof) it also shows that it holds the token, so that a client
// sends its token only to this server.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	c := q.str("challenge")
	if err := q.done(); err != nil {
		return err
	}
	h := client.Health{Status: "ok"}
	// Anyone who reaches the server may ask: the causes name the data
	// directory as <data>, not by its path.
	cause := func(c string) string { return strings.ReplaceAll(c, s.svc.Dir, "<data>") }
	for _, f := range s.svc.Store.Faults() {
		h.Status = "degraded"
		h.Faults = append(h.Faults, client.Fault{Part: f.Part, Cause: cause(f.Cause), Since: f.Since.UTC().Format(time.RFC3339), Restart: f.Restart})
	}
	if f := s.svc.Index.Failing(); f != nil {
		h.Status = "degraded"
		h.Faults = append(h.Faults, client.Fault{Part: "index", Cause: cause(f.Cause), Since: f.Since.UTC().Format(time.RFC3339)})
	}
	if c != "" {
		if !client.ValidChallenge(c) {
			return badParam("challenge", "challenge must be %d to 64 bytes in lower-case hex", client.ChallengeBytes)
		}
		h.Proof = client.Proof(s.o.Token, r.Host, c)
	}
	return writeJSON(w, h)
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDoc)
}

// searchRequestFromQuery reads GET /v1/search's parameters; they are named
// as the fields of search.Request.
func searchRequestFromQuery(r *http.Request) (*search.Request, error) {
	q := newQuery(r)
	req := &search.Request{
		Needle:      q.str("needle"),
		IgnoreCase:  q.bool("ignoreCase", false),
		Regex:       q.bool("regex", false),
		Scope:       search.Scope(q.str("scope")),
		Session:     q.str("session"),
		Leaf:        q.str("leaf"),
		Window:      q.int("window", 0),
		Types:       q.list("types"),
		Roles:       q.list("roles"),
		Since:       q.time("since"),
		Until:       q.time("until"),
		NewestFirst: q.bool("newestFirst", false),
		Limit:       q.int("limit", 0),
		All:         q.bool("all", false),
		Cursor:      q.str("cursor"),
		Count:       q.bool("count", false),
		Budget:      q.int("budget", 0),
	}
	// q is the web UI's name for the needle in its addresses (#/search?q=):
	// a URL copied from there works here too.
	if alias := q.str("q"); alias != "" {
		if req.Needle != "" && req.Needle != alias {
			return nil, badParam("q", "give the needle once: as needle or as q (the web UI's name), not both")
		}
		req.Needle = alias
	}
	return req, q.done()
}

func (s *Server) handleSearchGet(w http.ResponseWriter, r *http.Request) error {
	req, err := searchRequestFromQuery(r)
	if err != nil {
		return err
	}
	return s.search(w, r, req)
}

func (s *Server) handleSearchPost(w http.ResponseWriter, r *http.Request) error {
	var req search.Request
	if err := decodeJSON(w, r, &req, s.o.MaxBodyBytes); err != nil {
		return err
	}
	return s.search(w, r, &req)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, req *search.Request) error {
	if req.Needle == "" {
		return badParam("needle", "needle is required: the text to find (with regex=true, an RE2 regular expression)")
	}
	if req.All {
		return s.searchEvery(w, r, req)
	}
	resp, err := s.engine.Search(r.Context(), req)
	if err != nil {
		return err
	}
	for i := range resp.Hits {
		s.link(&resp.Hits[i])
	}
	return writeJSON(w, resp)
}

// link gives a hit the address of its entry's page in this server's web UI.
func (s *Server) link(h *search.Hit) {
	h.URL = client.EntryURL(s.base, h.Session, h.Entry)
}

// searchEvery answers a search for every hit (all) as its pages come from
// the engine, so that the server holds one page of a thousand hits at a
// time, not every hit at once (with a one-character needle, most of the
// store). The body has the shape of any search answer. A bad request is an
// ordinary error answer; an error once hits are written (the client gone,
// the store failing) breaks the connection, so that a cut answer is never
// read as a whole one.
func (s *Server) searchEvery(w http.ResponseWriter, r *http.Request, req *search.Request) error {
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var sum search.Response
	started := time.Now()
	opened, n := false, 0
	err := s.engine.SearchPages(r.Context(), req, func(page *search.Response) error {
		// Each page may take its time to write; the next one starts a
		// new allowance.
		rc.SetWriteDeadline(time.Now().Add(searchPageWriteTimeout))
		if !opened {
			opened = true
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			if _, err := io.WriteString(w, `{"hits":[`); err != nil {
				return err
			}
			sum.Total, sum.Stats.Plan = page.Total, page.Stats.Plan
		}
		for _, h := range page.Hits {
			if n > 0 {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			n++
			s.link(&h)
			if err := enc.Encode(h); err != nil {
				return err
			}
		}
		st := &sum.Stats
		st.Candidates += page.Stats.Candidates
		st.Scanned += page.Stats.Scanned
		st.Confirmed += page.Stats.Confirmed
		st.BytesScanned += page.Stats.BytesScanned
		st.Skipped += page.Stats.Skipped
		sum.Truncated = sum.Truncated || page.Truncated
		return nil
	})
	if err != nil {
		if !opened {
			return err // nothing written: the usual error answer
		}
		s.log.Warn("api: search for every hit cut short", "err", err)
		panic(http.ErrAbortHandler)
	}
	sum.Stats.TookMs = float64(time.Since(started).Microseconds()) / 1000
	tail, err := json.Marshal(struct {
		Total     *int         `json:"total,omitempty"`
		Truncated bool         `json:"truncated"`
		Stats     search.Stats `json:"stats"`
	}{sum.Total, sum.Truncated, sum.Stats})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "],%s", tail[1:])
	return err
}

// searchPageWriteTimeout bounds the writing of one page of a search for
// every hit.
const searchPageWriteTimeout = 30 * time.Second

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "id")
	q := newQuery(r)
	leaf := q.str("leaf")
	withTree := q.bool("tree", true)
	if err := q.done(); err != nil {
		return err
	}
	sum, err := s.engine.Session(r.Context(), id)
	if err != nil {
		return err
	}
	tr, err := s.svc.Store.Tree(id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("id", "session %q is not stored", id)
		}
		return err
	}
	d := client.SessionDetail{Summary: *sum, CurrentLeaf: tr.Leaf(), Leaves: tr.Leaves()}
	if d.Leaves == nil {
		d.Leaves = []string{}
	}
	if withTree {
		labels := tr.Labels()
		d.Tree = make([]client.TreeEntry, len(tr.Metas))
		for i, m := range tr.Metas {
			d.Tree[i] = client.TreeEntry{ID: m.ID, ParentID: m.ParentID, Type: m.Type, Role: m.Role, CustomType: m.Extra.CustomType,
				Label: labels[m.ID], Timestamp: m.Timestamp, Window: m.Window, Pushed: m.Flags&store.FlagPushed != 0}
		}
	}
	if tr.Len() > 0 || leaf != "" {
		// The resolver refuses a leaf the session does not hold.
		d.WindowsLeaf, d.Windows, err = s.engine.Windows(r.Context(), id, leaf)
		if err != nil {
			return err
		}
	}
	if d.Windows == nil {
		d.Windows = []journal.Window{}
	}
	return writeJSON(w, d)
}

func (s *Server) handleWindows(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "id")
	q := newQuery(r)
	leaf := q.str("leaf")
	windows := s.engine.Windows
	if q.bool("allowlisted", false) {
		windows = s.engine.AllowlistedWindows
	}
	if err := q.done(); err != nil {
		return err
	}
	used, ws, err := windows(r.Context(), id, leaf)
	if err != nil {
		return err
	}
	if ws == nil {
		ws = []journal.Window{}
	}
	return writeJSON(w, client.WindowsResponse{Session: id, Leaf: used, Windows: ws})
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	req := &search.ListRequest{
		Session:     pathParam(r, "id"),
		Leaf:        q.str("leaf"),
		Window:      q.int("window", 0),
		Types:       q.list("types"),
		Roles:       q.list("roles"),
		NewestFirst: q.bool("newestFirst", false),
		AllBranches: q.bool("allBranches", false),
		Limit:       q.int("limit", 0),
		Cursor:      q.str("cursor"),
		Offset:      q.int("offset", 0),
		Allowlisted: q.bool("allowlisted", false),
	}
	if err := q.done(); err != nil {
		return err
	}
	resp, err := s.engine.List(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, resp)
}

func (s *Server) handleRead(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	req := &search.ReadRequest{
		Session: pathParam(r, "id"),
		Entry:   pathParam(r, "entry"),
		Context: q.int("context", 0),
		Offset:  q.int("offset", 0),
		Length:  q.int("length", 0),
		Raw:     q.bool("raw", false),

		Allowlisted: q.bool("allowlisted", false),
	}
	if err := q.done(); err != nil {
		return err
	}
	resp, err := s.engine.Read(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, resp)
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) error {
	if err := newQuery(r).done(); err != nil {
		return err
	}
	st, err := s.svc.Stats()
	if err != nil {
		return err
	}
	if s.o.Watcher != nil {
		n := s.o.Watcher.SkippedPaths()
		st.SkippedPaths = &n
	}
	return writeJSON(w, st)
}

func (s *Server) handleIngestStatus(w http.ResponseWriter, r *http.Request) error {
	if err := newQuery(r).done(); err != nil {
		return err
	}
	files, err := s.svc.Store.Files()
	if err != nil {
		return err
	}
	out := client.IngestStatus{Files: make([]client.FileStatus, 0, len(files))}
	for _, f := range files {
		fs := client.FileStatus{Path: f.Path, Session: f.Session, Offset: f.Offset, Size: -1, Skipped: f.Skipped, LastError: f.LastError}
		if info, err := os.Stat(f.Path); err == nil {
			fs.Size = info.Size()
			if fs.Size > f.Offset {
				fs.Pending = fs.Size - f.Offset
			}
		}
		out.PendingBytes += fs.Pending
		out.SkippedLines += f.Skipped
		out.Files = append(out.Files, fs)
	}
	out.Index = s.indexStatus()
	if s.o.Watcher != nil {
		ws := s.o.Watcher.Status()
		out.Watcher = &client.WatcherStatus{Running: ws.Running, Dirs: ws.Dirs, WatchedDirs: ws.WatchedDirs, Ingests: ws.Ingests,
			Errors: ws.Errors, LastError: ws.LastError, LastRescan: ws.LastRescan, Polling: ws.Polling, Skips: ws.Skips}
		for _, sk := range ws.Skipped {
			out.Watcher.Skipped = append(out.Watcher.Skipped, client.WatcherSkip{Path: sk.Path, Line: sk.Line, Reason: sk.Reason, Since: sk.Since})
		}
		if f := ws.FirstScan; f != nil {
			out.Watcher.FirstScan = &client.FirstScan{Files: f.Files, FilesDone: f.FilesDone, Bytes: f.Bytes, BytesDone: f.BytesDone,
				Entries: f.Entries, Done: f.Done, Seconds: f.Took.Seconds()}
		}
	}
	return writeJSON(w, out)
}

func (s *Server) indexStatus() client.IndexStatus {
	// Read the mark before the last seq: a lag is never negative.
	through := s.svc.Index.IndexedThrough()
	last := s.svc.Store.LastSeq()
	return client.IndexStatus{LastSeq: last, IndexedThrough: through, Lag: index.Lag(through, last)}
}

func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) error {
	var req client.ImportRequest
	if err := decodeJSON(w, r, &req, s.o.MaxBodyBytes); err != nil {
		return err
	}
	paths := req.Paths
	if len(paths) == 0 {
		paths = s.svc.SessionsDirs
	}
	for i, p := range req.Paths {
		param := fmt.Sprintf("paths[%d]", i)
		if !filepath.IsAbs(p) {
			return badParam(param, "path %q must be absolute (the server does not know the client's working directory)", p)
		}
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return notFound(param, "%s does not exist", p)
			}
			return badParam(param, "cannot read %s: %v", p, err)
		}
	}
	// An import of a large corpus can run for minutes: lift the write
	// deadline for this response (the client's cancel still stops it).
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if strings.Contains(r.Header.Get("Accept"), client.ImportStreamType) {
		s.importStream(w, r, paths)
		return nil
	}
	sum, err := s.svc.Import(r.Context(), paths, nil)
	if err != nil {
		return err
	}
	return writeJSON(w, sum)
}

// importStream runs an import whose client asked for its progress: one
// JSON object a line (client.ImportEvent), at most five a second, while the
// files are read and then while the index catches up, and last the summary
// or the error as a problem document.
func (s *Server) importStream(w http.ResponseWriter, r *http.Request, paths []string) {
	w.Header().Set("Content-Type", client.ImportStreamType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(ev client.ImportEvent) { // one at a time: ImportWatched calls watch so
		if enc.Encode(ev) == nil {
			rc.Flush()
		}
	}
	sum, err := s.svc.ImportWatched(r.Context(), paths, func(st service.ImportStatus) { send(client.ImportEventOf(st)) })
	if err != nil {
		p, internal := problemFor(err)
		if internal {
			s.log.Error("api: import failed", "err", err)
		}
		send(client.ImportEvent{Error: p})
		return
	}
	send(client.ImportEvent{Summary: &sum})
}

// handleCompact shrinks the store and the index on disk once the index
// has caught up (service.Compact), and says by how much. One maintenance
// task runs at a time; searches and ingest go on.
func (s *Server) handleCompact(w http.ResponseWriter, r *http.Request) error {
	if !s.maint.TryLock() {
		return busyMaintenance()
	}
	defer s.maint.Unlock()
	http.NewResponseController(w).SetWriteDeadline(time.Time{}) // minutes for a large store
	if err := s.svc.WaitIndexed(r.Context()); err != nil {
		return err
	}
	before, err := s.svc.Stats()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := s.svc.Compact(r.Context()); err != nil {
		return err
	}
	after, err := s.svc.Stats()
	if err != nil {
		return err
	}
	return writeJSON(w, client.CompactResponse{StoreBefore: before.StoreBytes, StoreAfter: after.StoreBytes,
		IndexBefore: before.IndexBytes, IndexAfter: after.IndexBytes, Seconds: time.Since(start).Seconds()})
}

// handleReindex builds the index's files again from the store, one at a
// time (service.Service.Reindex). One maintenance task runs at a time.
func (s *Server) handleReindex(w http.ResponseWriter, r *http.Request) error {
	if !s.maint.TryLock() {
		return busyMaintenance()
	}
	defer s.maint.Unlock()
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	start := time.Now()
	if err := s.svc.Reindex(r.Context(), nil); err != nil {
		return err
	}
	return writeJSON(w, client.ReindexResponse{Entries: s.svc.Store.LastSeq(), Seconds: time.Since(start).Seconds()})
}

func busyMaintenance() error {
	return newProblem(http.StatusConflict, ProblemConflict, "Another maintenance task is running", "",
		"a compact or reindex is already running on this server; wait for it to finish and try again")
}

// journalPath checks a journal path given to sync: absolute, no "..", a
// .jsonl regular file whose real location (symlinks resolved) lies inside
// one of the sessions directories. It returns the path spelled under that
// sessions directory, as the watcher names it, so both read into the same
// file record.
func (s *Server) journalPath(p string) (string, error) {
	const param = "path"
	if p == "" {
		return "", badParam(param, "path is required: the session's journal file")
	}
	if !filepath.IsAbs(p) {
		return "", badParam(param, "path %q must be absolute", p)
	}
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		if el == ".." {
			return "", forbidden(ProblemForbiddenPath, param, "path %q contains '..'; only journals inside Pi's sessions directories can be synced", p)
		}
	}
	if !strings.HasSuffix(p, ".jsonl") {
		return "", badParam(param, "path %q is not a journal (*.jsonl)", p)
	}
	p = filepath.Clean(p)
	inside := false
	for _, d := range s.svc.SessionsDirs {
		if within(filepath.Clean(d), p) {
			inside = true
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if !inside {
			return "", forbidden(ProblemForbiddenPath, param, "%s is not inside the sessions directories (%s)", p, strings.Join(s.svc.SessionsDirs, ", "))
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", notFound(param, "journal %s does not exist (yet: Pi writes it after the first assistant reply)", p)
		}
		return "", badParam(param, "cannot resolve %s: %v", p, err)
	}
	for _, d := range s.svc.SessionsDirs {
		d = filepath.Clean(d)
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if within(rd, real) {
			rel, _ := filepath.Rel(rd, real)
			info, err := os.Stat(real)
			if err != nil || !info.Mode().IsRegular() {
				return "", badParam(param, "%s is not a regular file", p)
			}
			return filepath.Join(d, rel), nil
		}
	}
	return "", forbidden(ProblemForbiddenPath, param, "%s resolves to %s, outside the sessions directories (%s)", p, real, strings.Join(s.svc.SessionsDirs, ", "))
}

// within reports whether p lies strictly inside dir (both clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// journalSession reads the session id from a journal's header line ("" for
// an empty file).
func journalSession(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, 1<<20), 64<<10)
	line, err := br.ReadBytes('\n')
	if len(line) == 0 && errors.Is(err, io.EOF) {
		return "", nil
	}
	if !bytes.HasSuffix(line, []byte{'\n'}) {
		return "", nil // the header is still being written
	}
	var p journal.Parser
	h, _, perr := p.Line(bytes.TrimRight(line, "\r\n"))
	if perr != nil || h == nil {
		return "", badParam("path", "%s is not a Pi journal: its first line is not a session header", path)
	}
	return h.ID, nil
}

func (s *Server) handleSync(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "id")
	var req client.SyncRequest
	if err := decodeJSON(w, r, &req, s.o.MaxBodyBytes); err != nil {
		return err
	}
	path, err := s.journalPath(req.Path)
	if err != nil {
		return err
	}
	hid, err := journalSession(path)
	if err != nil {
		return err
	}
	if hid != "" && hid != id {
		return badParam("path", "journal %s belongs to session %q, not %q", path, hid, id)
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(5 * time.Minute))
	rep, err := s.serial.File(path, nil)
	if err != nil {
		return err
	}
	resp := client.SyncResponse{Session: rep.Session, Report: rep, LastSeq: s.svc.Store.LastSeq()}
	if resp.Session == "" {
		if fst, err := s.svc.Store.FileState(path); err == nil {
			resp.Session = fst.Session
		}
	}
	if resp.Session != "" {
		if si, err := s.svc.Store.Session(resp.Session); err == nil {
			resp.Leaf, resp.Entries = si.Leaf, si.Entries
		}
	} else {
		resp.Session = id
	}
	return writeJSON(w, resp)
}

// pushLines reads the lines of a push: a JSON PushRequest, or NDJSON.
func (s *Server) pushLines(w http.ResponseWriter, r *http.Request) ([][]byte, error) {
	switch mt := mediaType(r); mt {
	case "application/json":
		var req client.PushRequest
		if err := decodeJSON(w, r, &req, s.o.MaxPushBytes); err != nil {
			return nil, err
		}
		out := make([][]byte, len(req.Lines))
		for i, l := range req.Lines {
			if strings.ContainsAny(l, "\n\r") {
				return nil, badParam(fmt.Sprintf("lines[%d]", i), "a journal line cannot contain a newline")
			}
			out[i] = []byte(l)
		}
		return out, nil
	case "application/x-ndjson", "application/jsonl", "application/jsonlines", "application/x-jsonlines":
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxPushBytes))
		if err != nil {
			return nil, err
		}
		var out [][]byte
		for _, l := range bytes.Split(body, []byte{'\n'}) {
			l = bytes.TrimSuffix(l, []byte{'\r'})
			if len(bytes.TrimSpace(l)) > 0 {
				out = append(out, l)
			}
		}
		return out, nil
	default:
		return nil, unsupportedMedia(mt, "application/json", "application/x-ndjson")
	}
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "id")
	lines, err := s.pushLines(w, r)
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return badParam("lines", "no lines to store")
	}
	var p journal.Parser
	var header *journal.Header
	start := 0
	if isHeaderLine(lines[0]) {
		h, _, err := p.Line(lines[0])
		if err != nil || h == nil {
			return badParam("lines[0]", "the session header is malformed: %v", err)
		}
		if h.ID != id {
			return badParam("lines[0]", "the header names session %q, not %q", h.ID, id)
		}
		header, start = h, 1
	} else {
		si, err := s.svc.Store.Session(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("id", "session %q is not stored yet; push its header line first, or sync its journal", id)
		}
		if err != nil {
			return err
		}
		p.State = journal.State{SessionID: id, Version: max(si.Version, 1), Line: 1}
	}
	if p.Version < 2 {
		return badParam("id", "session %q uses journal format v1, whose entry ids come from line numbers; sync its journal instead", id)
	}
	entries := make([]*journal.Entry, 0, len(lines)-start)
	byID := map[string]int{}   // entry id → index in entries
	lineOf := map[string]int{} // entry id → index in lines
	for i := start; i < len(lines); i++ {
		param := fmt.Sprintf("lines[%d]", i)
		_, e, err := p.Line(lines[i])
		if err != nil {
			var le *journal.LineError
			if errors.As(err, &le) {
				return badParam(param, "%s", le.Reason)
			}
			return badParam(param, "%v", err)
		}
		if j, ok := byID[e.ID]; ok {
			if bytes.Equal(entries[j].Raw, e.Raw) {
				continue
			}
			return &apiError{client.Error{Type: ProblemConflict, Title: "Entry pushed twice with different content", Status: http.StatusConflict,
				Detail: fmt.Sprintf("entry %q appears twice in this push with different content", e.ID), Param: param, Entry: e.ID}}
		}
		byID[e.ID], lineOf[e.ID] = len(entries), i
		entries = append(entries, e)
	}
	res, err := s.svc.Store.Push(id, header, entries)
	if err != nil {
		var ce *store.ConflictError
		if errors.As(err, &ce) {
			p, _ := problemFor(err)
			p.Param = fmt.Sprintf("lines[%d]", lineOf[ce.ID])
			return &apiError{*p}
		}
		if errors.Is(err, store.ErrNotFound) {
			return notFound("id", "%v", err)
		}
		return err
	}
	return writeJSON(w, res)
}

// isHeaderLine reports whether a line is a session header ({"type":"session",…}).
func isHeaderLine(b []byte) bool {
	var t struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(b, &t) == nil && t.Type == "session"
}

// handleExport streams one session's export (package export): Pi's journal
// lines byte for byte, Markdown or HTML, optionally zstd-compressed. Bad
// parameters and unknown sessions, leaves and windows are refused with a
// problem document before anything is sent; a failure mid-stream aborts the
// connection, so a client never mistakes a truncated export for a whole one.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	// A large session over a slow link can take longer than the default
	// write timeout; allow a generous but bounded time for the stream.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportWriteTimeout))
	// The export reads the id as a path value: give it decoded.
	r.SetPathValue("id", pathParam(r, "id"))
	s.export(w, r)
}

// handleArchive streams an archive of the sessions the query selects (a
// zstd-compressed tar of their journals, package export), with what it
// holds in a trailer; 'pi-history export --all|--project|--since' uses it
// while the server owns the data directory.
func (s *Server) handleArchive(w http.ResponseWriter, r *http.Request) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportWriteTimeout))
	s.archive(w, r)
}

// exportWriteTimeout bounds one export response.
const exportWriteTimeout = 30 * time.Minute

// pathParam is the named path parameter, decoded. chi routes on the raw
// path when the URL has escapes Go would not write itself (an id escaped by
// encodeURIComponent: m%31, a%3Ab; an escaped slash), and its parameters
// are then still escaped; otherwise they come from the decoded path and
// are decoded already (an id holding a literal %41 stays as it is).
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
