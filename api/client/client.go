// Package client is the Go client of pi-history's HTTP API (package api).
//
// The CLI uses it when 'pi-history serve' owns the data directory: Discover
// reads <data>/server.json and <data>/api-token and returns a Client for the
// running server. Every method returns the same types the in-process
// packages return (pihistory.SearchResponse, pihistory.StoreStats, …), so a command prints
// the same output either way. An HTTP error status comes back as *Error, the
// server's RFC 9457 problem document.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	pihistory "github.com/pi-history/pi-history"
)

// File names inside the data directory.
const (
	ServerFile = "server.json"
	TokenFile  = "api-token"
)

// ErrNoServer says no server is recorded in the data directory.
var ErrNoServer = errors.New("no running server recorded")

// ErrNotOurServer says the program at the recorded address did not prove
// that it holds the data directory's token (see Proof).
var ErrNotOurServer = errors.New("not this data directory's server")

// Client talks to one server. It is safe for concurrent use. Before it
// first sends its token, it checks that the server holds the same one (see
// Proof).
type Client struct {
	base   string // without trailing slash
	token  string
	hc     *http.Client
	proven *proven
}

// New returns a client for the server at baseURL (http://host:port) that
// authenticates with token.
func New(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, proven: &proven{}, hc: &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // never send the token through a proxy
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: noRedirects,
	}}
}

// noRedirects stops the client at a redirect: the server never sends one,
// and following it would take a proven request (and its token) elsewhere.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// WithHTTPClient returns a copy of c that uses (a copy of) hc, which
// follows no redirects either.
func (c *Client) WithHTTPClient(hc *http.Client) *Client {
	d := *c
	h := *hc
	h.CheckRedirect = noRedirects
	d.hc = &h
	return &d
}

// BaseURL is the server's base URL.
func (c *Client) BaseURL() string { return c.base }

// ReadServerInfo reads <dataDir>/server.json; ErrNoServer when it is absent.
func ReadServerInfo(dataDir string) (*ServerInfo, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, ServerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dataDir, ServerFile), ErrNoServer)
	}
	if err != nil {
		return nil, err
	}
	var si ServerInfo
	if err := json.Unmarshal(b, &si); err != nil || si.URL == "" {
		return nil, fmt.Errorf("%s is damaged (%v); stop the server and delete it", filepath.Join(dataDir, ServerFile), err)
	}
	return &si, nil
}

// ReadToken reads <dataDir>/api-token.
func ReadToken(dataDir string) (string, error) {
	p := filepath.Join(dataDir, TokenFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read API token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("API token file %s is empty", p)
	}
	return tok, nil
}

// Discover returns a client for the server recorded in dataDir. The
// directory, its server.json and its token must be the user's own: a
// directory another user made first (a shared PI_HISTORY_DATA) could name
// their server and hold their token, and the client would prove that
// server and send it what it sends.
func Discover(dataDir string) (*Client, *ServerInfo, error) {
	for _, p := range []string{dataDir, filepath.Join(dataDir, ServerFile), filepath.Join(dataDir, TokenFile)} {
		if err := ownedByMe(p); err != nil {
			return nil, nil, err
		}
	}
	si, err := ReadServerInfo(dataDir)
	if err != nil {
		return nil, nil, err
	}
	tok, err := ReadToken(dataDir)
	if err != nil {
		return nil, nil, err
	}
	return New(si.URL, tok), si, nil
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when non-nil). An error status is returned as *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	resp, err := c.send(ctx, method, path, q, in, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("pi-history server at %s: bad response to %s %s: %w", c.base, method, path, err)
	}
	// Read to the end (the newline after the JSON, the chunked stream's
	// terminator): a body closed before its end may cost the kept-alive
	// connection, and the next call a new one.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// send makes a request of the server (in, when not nil, as its JSON body;
// accept as its Accept header) and returns the response of one that
// succeeded, for the caller to read and close. A refused request is an
// *Error read from the server's problem document.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, in any, accept string) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if path != "/healthz" {
		if err := c.authorize(req); err != nil {
			return nil, err
		}
	}
	resp, err := c.do1(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, problemOf(resp)
	}
	return resp, nil
}

// problemOf reads an error response as *Error.
func problemOf(resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	pe := &Error{Status: resp.StatusCode}
	if json.Unmarshal(b, pe) != nil || pe.Status == 0 {
		pe = &Error{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(b))}
	}
	return pe
}

func seg(s string) string { return url.PathEscape(s) }

// Health checks that the server answers and, for a client with a token,
// that it holds the same token (the token itself is not sent).
func (c *Client) Health(ctx context.Context) error {
	if c.token != "" {
		return c.prove(ctx, true)
	}
	var h Health
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, &h)
}

// Search runs a search: literal, ignoring case (IgnoreCase) or by
// regular expression (Regex), as r says.
func (c *Client) Search(ctx context.Context, r *pihistory.SearchRequest) (*pihistory.SearchResponse, error) {
	var out pihistory.SearchResponse
	if err := c.do(ctx, http.MethodPost, "/v1/search", nil, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List lists the entries of a branch, a window of it, or a whole session.
func (c *Client) List(ctx context.Context, r *pihistory.ListRequest) (*pihistory.ListResponse, error) {
	q := url.Values{}
	setStr(q, "leaf", r.Leaf)
	setInt(q, "window", r.Window)
	setList(q, "types", r.Types)
	setList(q, "roles", r.Roles)
	setBool(q, "newestFirst", r.NewestFirst)
	setBool(q, "allBranches", r.AllBranches)
	setInt(q, "limit", r.Limit)
	setStr(q, "cursor", r.Cursor)
	setInt(q, "offset", r.Offset)
	setBool(q, "allowlisted", r.Allowlisted)
	var out pihistory.ListResponse
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(r.Session)+"/entries", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Read reads one entry: its decoded text, or with Raw its original JSON line,
// a piece at a time.
func (c *Client) Read(ctx context.Context, r *pihistory.ReadRequest) (*pihistory.ReadResponse, error) {
	q := url.Values{}
	setInt(q, "context", r.Context)
	setInt(q, "offset", r.Offset)
	setInt(q, "length", r.Length)
	setBool(q, "raw", r.Raw)
	setBool(q, "allowlisted", r.Allowlisted)
	var out pihistory.ReadResponse
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(r.Session)+"/entries/"+seg(r.Entry), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Windows lists the context windows of a branch (leaf "" = the current one).
func (c *Client) Windows(ctx context.Context, session, leaf string) (*WindowsResponse, error) {
	q := url.Values{}
	setStr(q, "leaf", leaf)
	var out WindowsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(session)+"/windows", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Sessions lists every session.
func (c *Client) Sessions(ctx context.Context) ([]pihistory.SessionSummary, error) {
	var out SessionsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/sessions", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// MatchSessions lists the sessions whose words match words, best first,
// at most limit (the server's default when 0), each with its score and
// the stretch that matched: GET /v1/sessions?match=.
func (c *Client) MatchSessions(ctx context.Context, words string, limit int) ([]pihistory.SessionSummary, error) {
	q := url.Values{}
	q.Set("match", words)
	setInt(q, "limit", limit)
	var out SessionsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/sessions", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// SessionOptions select what Session returns.
type SessionOptions struct {
	Leaf   string // windows of this branch instead of the current one
	NoTree bool   // leave out the tree (for very large sessions)
}

// Session describes one session with its tree, leaves and windows.
func (c *Client) Session(ctx context.Context, id string, o SessionOptions) (*SessionDetail, error) {
	q := url.Values{}
	setStr(q, "leaf", o.Leaf)
	if o.NoTree {
		q.Set("tree", "false")
	}
	var out SessionDetail
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(id), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Stats returns what 'pi-history stats' prints.
func (c *Client) Stats(ctx context.Context) (pihistory.StoreStats, error) {
	var out pihistory.StoreStats
	err := c.do(ctx, http.MethodGet, "/v1/stats", nil, nil, &out)
	return out, err
}

// Import reads journal files or directories (absolute paths, as the server
// sees them) into the store and waits until they are indexed.
func (c *Client) Import(ctx context.Context, paths []string) (pihistory.ImportSummary, error) {
	var out pihistory.ImportSummary
	err := c.do(ctx, http.MethodPost, "/v1/import", nil, &ImportRequest{Paths: paths}, &out)
	return out, err
}

// Compact makes the server shrink its store and index on disk (after the
// index has caught up) and waits for it; it can take minutes.
func (c *Client) Compact(ctx context.Context) (*CompactResponse, error) {
	var out CompactResponse
	if err := c.do(ctx, http.MethodPost, "/v1/maintenance/compact", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Reindex makes the server rebuild its search index from the store beside
// the one it serves from, and swap it in; it waits for it (minutes for a
// large store). Searches go on meanwhile.
func (c *Client) Reindex(ctx context.Context) (*ReindexResponse, error) {
	var out ReindexResponse
	if err := c.do(ctx, http.MethodPost, "/v1/maintenance/reindex", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ImportWithProgress is Import with progress: fn is called (on this
// goroutine) with each progress, indexing and compacting event the server
// streams, as the server's import reports them, and the summary comes
// back at the end. An error the server meets after it began streaming
// arrives as an *Error too.
func (c *Client) ImportWithProgress(ctx context.Context, paths []string, fn func(pihistory.ImportStatus)) (pihistory.ImportSummary, error) {
	var sum pihistory.ImportSummary
	resp, err := c.send(ctx, http.MethodPost, "/v1/import", nil, &ImportRequest{Paths: paths}, ImportStreamType)
	if err != nil {
		return sum, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev ImportEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return sum, ctx.Err()
			}
			return sum, fmt.Errorf("pi-history server at %s: the import's progress stream broke off before its summary (see the server's log; what was read is stored, and importing again resumes): %w", c.base, err)
		}
		switch {
		case ev.Summary != nil:
			return *ev.Summary, nil
		case ev.Error != nil:
			return sum, ev.Error
		case fn != nil:
			fn(ev.Status())
		}
	}
}

// Sync makes the server read a session's journal to its current end before
// answering (read-your-writes for a live Pi).
func (c *Client) Sync(ctx context.Context, session, path string) (*SyncResponse, error) {
	var out SyncResponse
	if err := c.do(ctx, http.MethodPost, "/v1/sessions/"+seg(session)+"/sync", nil, &SyncRequest{Path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Push stores journal lines (the header line first if the server may not
// know the session). Pushing the same bytes again is harmless; the same id
// with other bytes is an *Error with Status 409 naming the id in Entry.
func (c *Client) Push(ctx context.Context, session string, lines []string) (*pihistory.PushResult, error) {
	var out pihistory.PushResult
	if err := c.do(ctx, http.MethodPost, "/v1/sessions/"+seg(session)+"/entries", nil, &PushRequest{Lines: lines}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// IngestStatus reports files, offsets, skipped lines and index lag.
func (c *Client) IngestStatus(ctx context.Context) (*IngestStatus, error) {
	var out IngestStatus
	if err := c.do(ctx, http.MethodGet, "/v1/ingest/status", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExportOptions choose what Export streams (see package export).
type ExportOptions struct {
	Format string // jsonl (default), md or html
	Leaf   string // the branch ending at this entry
	Window int    // one context window of the branch (1-based); 0: all
	Zstd   bool   // compressed
}

// ExportStream is an export being received. Read it to the end and close
// it; a read error (io.ErrUnexpectedEOF, say) means the server failed in the
// middle and what was read is incomplete.
type ExportStream struct {
	io.ReadCloser
	ContentType string
	FileName    string // from Content-Disposition
}

// Export streams one session's export: GET /v1/sessions/{id}/export. A bad
// option or an unknown session, leaf or window is an *Error before
// anything is read.
func (c *Client) Export(ctx context.Context, session string, o ExportOptions) (*ExportStream, error) {
	q := url.Values{}
	setStr(q, "format", o.Format)
	setStr(q, "leaf", o.Leaf)
	setInt(q, "window", o.Window)
	if o.Zstd {
		q.Set("zstd", "1")
	}
	u := c.base + "/v1/sessions/" + seg(session) + "/export"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if err := c.authorize(req); err != nil {
		return nil, err
	}
	resp, err := c.do1(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, problemOf(resp)
	}
	xs := &ExportStream{ReadCloser: resp.Body, ContentType: resp.Header.Get("Content-Type")}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		xs.FileName = params["filename"]
	}
	return xs, nil
}

// ArchiveOptions select the sessions of an archive; they combine, and at
// least one must be set (as the server's export.Selection reads them).
type ArchiveOptions struct {
	All     bool
	Project string    // sessions run in this directory (an absolute path)
	Since   time.Time // sessions with activity at or after this time
	Until   time.Time // sessions started before this time
}

// ExportArchive streams an archive of the sessions o selects (a
// zstd-compressed tar of their journals) into w: GET /v1/export/archive.
// progress, if not nil, is called as bytes arrive. A bad selection, or one
// no session matches, is an *Error before anything is written; a stream
// that breaks off, or ends without the server's account of what it sent,
// is an error after part of it was written.
func (c *Client) ExportArchive(ctx context.Context, o ArchiveOptions, w io.Writer, progress func(received int64)) (pihistory.ArchiveStats, error) {
	var stats pihistory.ArchiveStats
	q := url.Values{}
	if o.All {
		q.Set("all", "1")
	}
	setStr(q, "project", o.Project)
	for name, t := range map[string]time.Time{"since": o.Since, "until": o.Until} {
		if !t.IsZero() {
			q.Set(name, t.Format(time.RFC3339Nano))
		}
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/export/archive", q, nil, "*/*")
	if err != nil {
		return stats, err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if progress != nil {
		body = &progressReader{r: resp.Body, fn: progress}
	}
	n, err := io.Copy(w, body)
	if err != nil {
		if ctx.Err() != nil {
			return stats, ctx.Err()
		}
		return stats, fmt.Errorf("the server's archive stopped after %d bytes (see its log): %w", n, err)
	}
	tr := resp.Trailer.Get(ArchiveTrailer)
	if tr == "" {
		return stats, fmt.Errorf("the server's archive ended after %d bytes without saying what it holds: it is incomplete (see the server's log)", n)
	}
	if err := json.Unmarshal([]byte(tr), &stats); err != nil {
		return stats, fmt.Errorf("the server's account of the archive (%s trailer) is unreadable: %w", ArchiveTrailer, err)
	}
	if stats.Written != n {
		return stats, fmt.Errorf("the server wrote %d bytes of archive but %d arrived: it is incomplete", stats.Written, n)
	}
	return stats, nil
}

// progressReader reports the bytes read so far.
type progressReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if n > 0 {
		p.fn(p.n)
	}
	return n, err
}

// Ledger reads the rows of the rollover ledger that match f, oldest first.
func (c *Client) Ledger(ctx context.Context, f pihistory.LedgerFilter) (*LedgerResponse, error) {
	q := url.Values{}
	setStr(q, "kind", f.Kind)
	setStr(q, "session", f.Session)
	setInt(q, "limit", f.Limit)
	var out LedgerResponse
	if err := c.do(ctx, http.MethodGet, "/v1/ledger", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LoginCode asks for a one-time web UI login code (bearer token only); open
// BaseURL()+Path in a browser to log in.
func (c *Client) LoginCode(ctx context.Context) (*LoginCode, error) {
	var out LoginCode
	if err := c.do(ctx, http.MethodPost, "/v1/ui/login-code", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func setStr(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setInt(q url.Values, k string, v int) {
	if v != 0 {
		q.Set(k, strconv.Itoa(v))
	}
}

func setBool(q url.Values, k string, v bool) {
	if v {
		q.Set(k, "true")
	}
}

func setList(q url.Values, k string, v []string) {
	if len(v) > 0 {
		q.Set(k, strings.Join(v, ","))
	}
}

// ownedByMe refuses a file or directory that belongs to another user or
// that others may write. A missing one is left to the reader to report.
func ownedByMe(p string) error {
	info, err := os.Stat(p)
	if err != nil {
		return nil
	}
	if err := pihistory.Mine(info, p); err != nil {
		return err
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s can be written by other users (mode %v), so the server it names could be theirs and nothing is sent to it; make it private (chmod go-w %s) or start 'pi-history serve', which does", p, info.Mode().Perm(), p)
	}
	return nil
}
