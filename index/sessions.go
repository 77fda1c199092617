package index

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/store"
)

// SessionsFormat names what a session word index holds and how its fields
// are analysed. An index on disk that says another (or nothing) is deleted
// and rebuilt from the store: it is derived data, with no reader of old
// formats.
const SessionsFormat = "pihist-sessions-v1"

// The session word index's limits.
const (
	// SessionTextBytes is how much of a session's user messages its
	// document holds, from the start: what a person asked first says what
	// the session is about, and the index stays small however long the
	// session runs.
	SessionTextBytes = 64 << 10
	// MaxMatchBytes bounds a query of Match.
	MaxMatchBytes = 1000
	// MaxMatchLimit bounds how many sessions one Match returns.
	MaxMatchLimit = 1000
	// DefaultMatchLimit is how many sessions the API and the CLI ask
	// Match for unless told.
	DefaultMatchLimit = 50
	// sessionBatchBytes bounds the text of one Bleve batch.
	sessionBatchBytes = 1 << 20
	// sessionsQuiet is how long Run waits after a change to the store
	// before it reindexes, so that a burst of writes costs one pass.
	sessionsQuiet = time.Second
	// fragmentBytes is about how long a match's fragment of user text is.
	fragmentBytes = 200
)

// The fields of a session's document.
const (
	sfTitle   = "title"   // SessionTitle: its name, else its first user message's first line
	sfName    = "name"    // its name (Pi's /name), when it has one
	sfCwd     = "cwd"     // the project directory
	sfID      = "id"      // the session id, whole (keyword)
	sfFirst   = "first"   // when it began (datetime)
	sfLast    = "last"    // its last activity (datetime)
	sfEntries = "entries" // how many entries it holds
	sfText    = "text"    // its name, project and user messages (SessionTextBytes of these at most)
	sfFP      = "fp"      // what the store said of it when indexed (stored only)
	formatKey = "sessions_format"
)

// Sessions is a Bleve index on disk with one document per session, for
// ranked word search over sessions: which sessions were about "flaky
// checkout test". It follows the store (Run, CatchUp) and is derived data:
// deleted, corrupt or of another format, it is rebuilt. A document is
// rewritten whenever its session changes: within a process by the store's
// session generation, across restarts by a fingerprint of the session's
// record (entries, bytes, leaf, last activity, name, project) kept in the
// document, so a restart after a crash catches up on what the store holds
// and the index lost.
type Sessions struct {
	st  *store.Store
	dir string // "" for an index in memory
	log *slog.Logger
	bi  bleve.Index

	mu     sync.Mutex // one pass at a time; guards known and closed
	known  map[string]sessionMark
	closed bool
}

// sessionMark is what the index holds of a session: the fingerprint of the
// record it was built from, and the store's generation then (gen is 0
// until a pass of this process has seen the session: generations are
// comparable only within a process).
type sessionMark struct {
	fp  string
	gen uint64
}

// SessionMatch is a session that a word query found.
type SessionMatch struct {
	Session string  `json:"session"`
	Score   float64 `json:"score"`
	// Field is where Fragment comes from: "title", "name", "text" (the
	// user messages) or "cwd"; "" when no field could be quoted.
	Field    string `json:"field,omitempty"`
	Fragment string `json:"fragment,omitempty"`
}

// SessionsPass says what one pass of CatchUp did.
type SessionsPass struct {
	Indexed   int   // documents written
	Removed   int   // documents of sessions the store no longer holds
	TextBytes int64 // user text put in the written documents
}

// OpenSessions opens the session word index in dir for store st, creating
// it when missing and rebuilding it (deleting dir first) when it cannot be
// opened or holds another format. dir "" keeps the index in memory (for a
// data directory opened read-only). It does not read the store: call Run
// or CatchUp.
func OpenSessions(dir string, st *store.Store, log *slog.Logger) (*Sessions, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sessions{st: st, dir: dir, log: log}
	bi, err := s.open()
	if err != nil {
		return nil, err
	}
	s.bi = bi
	if s.known, err = s.loadMarks(); err != nil {
		bi.Close()
		return nil, fmt.Errorf("session word index %s: read what it holds: %w", dir, err)
	}
	return s, nil
}

// open opens dir's index, or makes a new one when it is missing, of another
// format, or cannot be opened.
func (s *Sessions) open() (bleve.Index, error) {
	if s.dir == "" {
		return s.create()
	}
	if _, err := os.Stat(s.dir); err == nil {
		bi, err := bleve.Open(s.dir)
		if err == nil {
			v, verr := bi.GetInternal([]byte(formatKey))
			if verr == nil && string(v) == SessionsFormat {
				return bi, nil
			}
			bi.Close()
			s.log.Info("session word index: another format; rebuilding it", "dir", s.dir, "format", string(v), "want", SessionsFormat)
		} else {
			s.log.Warn("session word index: cannot open it; rebuilding it", "dir", s.dir, "err", err)
		}
		if err := os.RemoveAll(s.dir); err != nil {
			return nil, fmt.Errorf("session word index %s: remove it to rebuild it: %w", s.dir, err)
		}
	}
	return s.create()
}

func (s *Sessions) create() (bleve.Index, error) {
	var bi bleve.Index
	var err error
	if s.dir == "" {
		bi, err = bleve.NewMemOnly(sessionMapping())
	} else {
		bi, err = bleve.New(s.dir, sessionMapping())
	}
	if err != nil {
		return nil, fmt.Errorf("session word index %s: create it: %w", s.dir, err)
	}
	if err := bi.SetInternal([]byte(formatKey), []byte(SessionsFormat)); err != nil {
		bi.Close()
		return nil, fmt.Errorf("session word index %s: write its format: %w", s.dir, err)
	}
	return bi, nil
}

// sessionMapping analyses words in English (stems, stop words) and keeps
// the id whole. A query's words without a field search the text field,
// which holds the name and project too (Bleve's _all field would keep a
// second copy of every position). No field keeps doc values: nothing
// sorts or facets by them.
func sessionMapping() mapping.IndexMapping {
	field := func(f *mapping.FieldMapping, analyzer string, vectors bool) *mapping.FieldMapping {
		f.Analyzer, f.IncludeTermVectors, f.IncludeInAll, f.DocValues = analyzer, vectors, false, false
		return f
	}
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(sfTitle, field(bleve.NewTextFieldMapping(), en.AnalyzerName, true))
	doc.AddFieldMappingsAt(sfName, field(bleve.NewTextFieldMapping(), en.AnalyzerName, true))
	doc.AddFieldMappingsAt(sfText, field(bleve.NewTextFieldMapping(), en.AnalyzerName, true))
	doc.AddFieldMappingsAt(sfCwd, field(bleve.NewTextFieldMapping(), en.AnalyzerName, true))
	id := field(bleve.NewTextFieldMapping(), keyword.Name, false)
	id.Store = false
	doc.AddFieldMappingsAt(sfID, id)
	doc.AddFieldMappingsAt(sfFirst, field(bleve.NewDateTimeFieldMapping(), "", false))
	doc.AddFieldMappingsAt(sfLast, field(bleve.NewDateTimeFieldMapping(), "", false))
	doc.AddFieldMappingsAt(sfEntries, field(bleve.NewNumericFieldMapping(), "", false))
	fp := field(bleve.NewTextFieldMapping(), keyword.Name, false)
	fp.Index = false
	doc.AddFieldMappingsAt(sfFP, fp)
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = en.AnalyzerName
	m.DefaultField = sfText
	m.ScoringModel = bleveindex.BM25Scoring
	return m
}

// loadMarks reads the fingerprint of every document.
func (s *Sessions) loadMarks() (map[string]sessionMark, error) {
	n, err := s.bi.DocCount()
	if err != nil {
		return nil, err
	}
	known := make(map[string]sessionMark, n)
	if n == 0 {
		return known, nil
	}
	req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), int(n), 0, false)
	req.Fields = []string{sfFP}
	req.Score = "none"
	res, err := s.bi.Search(req)
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		fp, _ := h.Fields[sfFP].(string)
		known[h.ID] = sessionMark{fp: fp}
	}
	return known, nil
}

// fingerprint is what a session's record says of its content: a document
// whose fingerprint differs from the record's was built from an older
// session.
func fingerprint(si *store.SessionInfo) string {
	return strings.Join([]string{strconv.Itoa(si.Entries), strconv.FormatInt(si.Bytes, 10), strconv.FormatUint(si.LeafSeq, 10),
		si.LastActivity, si.Name, si.Cwd}, "\x00")
}

// Run keeps the index up to date with the store until ctx ends: a pass at
// once (the catch-up after a restart or a crash), then one a second after
// each change, so that a burst of writes costs one pass. A failed pass is
// logged and tried again at the next change.
func (s *Sessions) Run(ctx context.Context) {
	for {
		changed := s.st.Changed() // before the pass: a commit during it wakes the next
		if p, err := s.CatchUp(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("session word index: pass failed; trying again at the next change", "err", err)
		} else if p.Indexed+p.Removed > 0 {
			s.log.Debug("session word index: pass", "indexed", p.Indexed, "removed", p.Removed, "text_bytes", p.TextBytes)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(sessionsQuiet):
		}
	}
}

// CatchUp rewrites the document of every session that changed since it was
// indexed, adds those never indexed and removes those the store no longer
// holds. Each batch is applied whole or not at all.
func (s *Sessions) CatchUp(ctx context.Context) (SessionsPass, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p SessionsPass
	if s.closed {
		return p, fmt.Errorf("session word index %s: closed", s.dir)
	}
	infos, err := s.st.Sessions()
	if err != nil {
		return p, fmt.Errorf("session word index: list the sessions: %w", err)
	}
	b := s.bi.NewBatch()
	pending := map[string]sessionMark{}
	var batchText int
	flush := func() error {
		if b.Size() == 0 {
			return nil
		}
		if err := s.bi.Batch(b); err != nil {
			return fmt.Errorf("session word index %s: write a batch: %w", s.dir, err)
		}
		for id, m := range pending {
			if m.fp == "" {
				delete(s.known, id)
			} else {
				s.known[id] = m
			}
		}
		clear(pending)
		// A new batch, not b.Reset(): scorch's analysis goroutine may
		// still read the old one's map after Batch returns.
		b = s.bi.NewBatch()
		batchText = 0
		return nil
	}
	present := make(map[string]bool, len(infos))
	for _, si := range infos {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		present[si.ID] = true
		gen := s.st.SessionGeneration(si.ID) // first: a write meanwhile leaves the mark stale, not wrong
		fp := fingerprint(si)
		if k, ok := s.known[si.ID]; ok && k.fp == fp && (k.gen == 0 || k.gen == gen) {
			s.known[si.ID] = sessionMark{fp: fp, gen: gen}
			continue
		}
		doc, n, err := s.document(si, fp)
		if err != nil {
			return p, err
		}
		if err := b.Index(si.ID, doc); err != nil {
			return p, fmt.Errorf("session word index: session %s: %w", si.ID, err)
		}
		pending[si.ID] = sessionMark{fp: fp, gen: gen}
		p.Indexed++
		p.TextBytes += int64(n)
		if batchText += n; batchText >= sessionBatchBytes {
			if err := flush(); err != nil {
				return p, err
			}
		}
	}
	for id := range s.known {
		if !present[id] {
			b.Delete(id)
			pending[id] = sessionMark{}
			p.Removed++
		}
	}
	return p, flush()
}

// document is a session's Bleve document and how many bytes of user text
// it holds.
func (s *Sessions) document(si *store.SessionInfo, fp string) (map[string]any, int, error) {
	var text strings.Builder
	var terr error
	err := s.st.WalkSessionMetas(si.ID, func(m *store.Meta) bool {
		if m.Type != "message" || m.Role != "user" || m.TextLen == 0 {
			return true
		}
		t, err := s.st.Text(m.Seq)
		if err != nil {
			terr = err
			return false
		}
		if text.Len() > 0 {
			text.WriteString("\n\n")
		}
		text.WriteString(t[:min(len(t), SessionTextBytes-text.Len())])
		return text.Len() < SessionTextBytes
	})
	if err == nil {
		err = terr
	}
	if err != nil {
		return nil, 0, fmt.Errorf("session word index: read session %s's user messages: %w", si.ID, err)
	}
	doc := map[string]any{
		sfTitle: SessionTitle(s.st, si), sfName: si.Name, sfCwd: si.Cwd, sfID: si.ID,
		sfEntries: float64(si.Entries), sfText: si.Name + "\n" + si.Cwd + "\n\n" + text.String(), sfFP: fp,
	}
	if si.Created != "" {
		doc[sfFirst] = si.Created
	}
	if si.LastActivity != "" {
		doc[sfLast] = si.LastActivity
	}
	return doc, text.Len(), nil
}

// Match finds the sessions whose words match q, best first, at most limit.
// q is in Bleve's query-string syntax: words (a session matching more of
// them ranks higher), "a phrase", +required, -excluded, and field:word
// for the fields title, name, text, cwd, id, and ranges over first, last
// and entries (last:>"2026-11-01"); words are matched by their English
// stems. A match in the title or name weighs more than one in the user
// text. An empty q, one longer than MaxMatchBytes, a limit outside 1 to
// MaxMatchLimit, or a query Bleve cannot parse is refused as invalid
// (param "match" or "limit"). Sessions written since the last pass are
// found as they were then.
func (s *Sessions) Match(ctx context.Context, q string, limit int) ([]SessionMatch, error) {
	qq, err := matchQuery(q, limit)
	if err != nil {
		return nil, err
	}
	req := bleve.NewSearchRequestOptions(qq, limit, 0, false)
	req.Fields = []string{sfTitle, sfName, sfText, sfCwd}
	req.IncludeLocations = true
	res, err := s.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("session word index: search %q: %w", q, err)
	}
	out := make([]SessionMatch, 0, len(res.Hits))
	for _, h := range res.Hits {
		m := SessionMatch{Session: h.ID, Score: h.Score}
		m.Field, m.Fragment = fragment(h.Fields, h.Locations)
		out = append(out, m)
	}
	return out, nil
}

// CheckMatch refuses what Match would refuse without running it.
func CheckMatch(q string, limit int) error {
	_, err := matchQuery(q, limit)
	return err
}

// matchQuery checks a query and makes it Bleve's: q must match (in the
// text field unless it names another), and the same words in the title or
// the name raise the score.
func matchQuery(q string, limit int) (query.Query, error) {
	switch {
	case strings.TrimSpace(q) == "":
		return nil, pihistory.Errorf("", pihistory.Invalid, "match", "give one or more words to look for")
	case len(q) > MaxMatchBytes:
		return nil, pihistory.Errorf("", pihistory.Invalid, "match", "the query is %d bytes; at most %d are taken", len(q), MaxMatchBytes)
	case limit < 1 || limit > MaxMatchLimit:
		return nil, pihistory.Errorf("", pihistory.Invalid, "limit", "%d sessions asked for; give 1 to %d", limit, MaxMatchLimit)
	}
	must := bleve.NewQueryStringQuery(q)
	if _, err := must.Parse(); err != nil {
		return nil, pihistory.Errorf("", pihistory.Invalid, "match", "%q is not a query: %v (words, \"a phrase\", +required, -excluded, field:word)", q, err)
	}
	var should []query.Query
	for _, f := range []string{sfTitle, sfName} {
		mq := bleve.NewMatchQuery(q)
		mq.SetField(f)
		mq.SetBoost(3)
		should = append(should, mq)
	}
	return query.NewBooleanQuery([]query.Query{must}, should, nil), nil
}

// Settle merges the index into one segment and waits for it: a pass over
// many sessions (an import's) writes a segment a batch, which Bleve merges
// in the background, and a process that closes the index at once leaves
// the segments, up to twice the index's size on disk, to the next process
// that opens it.
func (s *Sessions) Settle(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("session word index %s: closed", s.dir)
	}
	adv, err := s.bi.Advanced()
	if err != nil {
		return fmt.Errorf("session word index %s: %w", s.dir, err)
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil // kept in memory: nothing on disk to settle
	}
	// A merge takes the segments already on disk: wait for those still in
	// memory to be written, then merge, until one is left and the others'
	// files are gone. Leftovers cost only disk, so a merge that takes too
	// long is left to the next open.
	mctx, cancel := context.WithTimeout(ctx, settleMax)
	defer cancel()
	var merged time.Time // when the root first held one segment
	for mctx.Err() == nil {
		m := sc.StatsMap()
		inMemory, _ := m["TotMemorySegmentsAtRoot"].(uint64)
		onDisk, _ := m["TotFileSegmentsAtRoot"].(uint64)
		switch {
		case inMemory == 0 && onDisk <= 1:
			// The merged-away files go once no snapshot holds them (a
			// file nothing holds, say after a crash, goes at the next
			// open: not waited for long).
			if merged.IsZero() {
				merged = time.Now()
			}
			if files, _ := filepath.Glob(filepath.Join(s.dir, "store", "*.zap")); len(files) <= 1 || time.Since(merged) > settleFiles {
				return nil
			}
		case inMemory == 0:
			// A merge stopped by mctx returns nil too: the loop looks
			// at mctx next.
			if err := sc.ForceMerge(mctx, nil); err != nil {
				return fmt.Errorf("session word index %s: merge its segments: %w", s.dir, err)
			}
		}
		select {
		case <-mctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.log.Info("session word index: still merging; the next open goes on", "dir", s.dir)
	return nil
}

// settleMax bounds Settle's wait, settleFiles its wait for merged-away
// files to go.
const settleMax, settleFiles = 2 * time.Minute, 5 * time.Second

// Close closes the index: what it wrote is on disk when it returns. Run must
// have returned.
func (s *Sessions) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.bi.Close()
}

// DocCount is the number of sessions the index holds.
func (s *Sessions) DocCount() (uint64, error) { return s.bi.DocCount() }

// fragment quotes where a match lies: the field holding most of the
// query's distinct terms (title, name, text, cwd first on a tie), whole when
// short, else the stretch of about fragmentBytes of user text holding the
// most of them, on one line.
func fragment(fields map[string]any, locs search.FieldTermLocationMap) (string, string) {
	best, most := "", 0
	for _, f := range []string{sfTitle, sfName, sfText, sfCwd} {
		if n := len(locs[f]); n > most {
			best, most = f, n
		}
	}
	v, _ := fields[best].(string)
	if best == "" || v == "" {
		return "", ""
	}
	if best != sfText {
		return best, oneLine(v[:cut(v, 0, fragmentBytes)])
	}
	type hit struct {
		start, end int
		term       string
	}
	var hits []hit
	for term, ls := range locs[sfText] {
		for _, l := range ls {
			if int(l.End) <= len(v) && l.Start < l.End {
				hits = append(hits, hit{int(l.Start), int(l.End), term})
			}
		}
	}
	if len(hits) == 0 {
		return "", ""
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.start - b.start })
	// The window of hits spanning at most fragmentBytes with the most
	// distinct terms (two pointers over the hits in text order).
	in := map[string]int{}
	lo, bestLo, bestHi, bestN := 0, 0, 0, 0
	for hi, h := range hits {
		in[h.term]++
		for h.end-hits[lo].start > fragmentBytes && lo < hi {
			if in[hits[lo].term]--; in[hits[lo].term] == 0 {
				delete(in, hits[lo].term)
			}
			lo++
		}
		if len(in) > bestN {
			bestLo, bestHi, bestN = lo, hi, len(in)
		}
	}
	span := hits[bestHi].end - hits[bestLo].start
	from := max(hits[bestLo].start-max(fragmentBytes-span, 0)/3, 0)
	for from > 0 && !utf8.RuneStart(v[from]) {
		from--
	}
	if i := strings.IndexAny(v[from:hits[bestLo].start], " \n\t"); from > 0 && i >= 0 {
		from += i + 1 // start at a word
	}
	to := cut(v, from, fragmentBytes)
	out := oneLine(v[from:to])
	if from > 0 {
		out = "…" + out
	}
	if to < len(v) {
		out += "…"
	}
	return sfText, out
}

// cut is where a quote of v from from, at most n bytes, ends: on a rune
// boundary, at a word's end when one is near.
func cut(v string, from, n int) int {
	to := from + n
	if to >= len(v) {
		return len(v)
	}
	for to > from && !utf8.RuneStart(v[to]) {
		to--
	}
	if i := strings.LastIndexAny(v[from:to], " \n\t"); i > n/2 {
		to = from + i
	}
	return to
}

// oneLine makes runs of white space and control characters one space.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}
