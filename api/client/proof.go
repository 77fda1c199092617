package client

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// A client sends its token only to a server that has shown it holds the
// same one. server.json outlives a server killed without warning (kill -9,
// a crash, a power cut), and another local user may then listen on the
// port it names: a client that trusted the file would hand that program the
// token (which never changes) and, in the Pi extension, every session entry
// it pushes. So a client first asks GET /healthz?challenge=C, without the
// token, and the server answers with Proof(token, H, C), which only a holder
// of the token can compute. H is the Host the request named: a program on
// the recorded port that relays the challenge to the real server (or
// redirects the client there) must name the real server's own address,
// which its Host check demands, and the proof it gets back covers that
// address, not its own. Clients follow no redirects either.

// ChallengeBytes is the size of a health challenge before hex encoding.
const ChallengeBytes = 16

// Proof is the server's answer to a health challenge sent to host (the
// request's Host, host:port): HMAC-SHA256 of both, keyed with the API
// token, in hex.
func Proof(token, host, challenge string) string {
	m := hmac.New(sha256.New, []byte(token))
	io.WriteString(m, "pi-history healthz "+host+" "+challenge)
	return hex.EncodeToString(m.Sum(nil))
}

// ValidChallenge reports whether c has the form of a health challenge:
// 16 to 64 bytes in lower-case hex.
func ValidChallenge(c string) bool {
	if len(c) < 2*ChallengeBytes || len(c) > 128 || len(c)%2 != 0 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !('0' <= c[i] && c[i] <= '9' || 'a' <= c[i] && c[i] <= 'f') {
			return false
		}
	}
	return true
}

// proven remembers, for a client and its copies, when the server last
// passed the challenge, and the challenge under way, if any.
type proven struct {
	mu      sync.Mutex
	at      time.Time     // zero: not proven, or a request since failed to reach it
	running chan struct{} // closed when the challenge under way ends
}

// proofTTL is how long a proof is trusted. The server may die and another
// program take its port at any time; a proof at most this old before each
// request bounds that window (at the cost of one /healthz per burst of
// requests: a quarter of a second covers a burst, not the pause between
// two), and a request that fails to reach the server drops the proof at
// once.
const proofTTL = 250 * time.Millisecond

// authorize gives req the token, once the server has shown it holds it.
func (c *Client) authorize(req *http.Request) error {
	if c.token == "" {
		return nil
	}
	if err := c.prove(req.Context(), false); err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return nil
}

// do1 sends req; a failure to reach the server drops the proof, so that the
// next request proves the server again (a new program may now answer).
func (c *Client) do1(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		c.proven.mu.Lock()
		c.proven.at = time.Time{}
		c.proven.mu.Unlock()
		return nil, fmt.Errorf("pi-history server at %s: %w", c.base, err)
	}
	return resp, nil
}

// prove makes sure that the server at c.base holds c.token, asking without
// sending it: again when force is set or the last proof is older than
// proofTTL. One challenge runs at a time; other callers wait for it, or for
// their own context to end, without holding the lock.
func (c *Client) prove(ctx context.Context, force bool) error {
	for {
		c.proven.mu.Lock()
		if !force && !c.proven.at.IsZero() && time.Since(c.proven.at) < proofTTL {
			c.proven.mu.Unlock()
			return nil
		}
		if ch := c.proven.running; ch != nil {
			c.proven.mu.Unlock()
			select {
			case <-ch:
				force = false // that challenge counts; if it failed, try again
				continue
			case <-ctx.Done():
				return fmt.Errorf("pi-history server at %s: %w", c.base, ctx.Err())
			}
		}
		ch := make(chan struct{})
		c.proven.running = ch
		c.proven.mu.Unlock()
		err := c.challenge(ctx)
		c.proven.mu.Lock()
		c.proven.at = time.Time{}
		if err == nil {
			c.proven.at = time.Now()
		}
		c.proven.running = nil
		close(ch)
		c.proven.mu.Unlock()
		return err
	}
}

// challenge asks the server for a proof that it holds c.token.
func (c *Client) challenge(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b := make([]byte, ChallengeBytes)
	rand.Read(b)
	challenge := hex.EncodeToString(b)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz?challenge="+challenge, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("pi-history server at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	// What the request's Host header held (net/http sends the URL's).
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		// Busy or stopping: not a sign of another program.
		return problemOf(resp)
	}
	var h Health
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h) != nil ||
		!hmac.Equal([]byte(h.Proof), []byte(Proof(c.token, host, challenge))) {
		return fmt.Errorf("%w: the program answering at %s did not prove that it holds this data directory's API token, so the token was not sent to it; "+
			"if the server stopped without cleaning up, another program may now listen on its port: start 'pi-history serve' again "+
			"(a server of an older pi-history answers no challenge: restart it with this version)", ErrNotOurServer, c.base)
	}
	return nil
}
