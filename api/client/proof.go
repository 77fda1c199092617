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
)

// A client sends its token only to a server that has shown it holds the
// same one. server.json outlives a server killed without warning (kill -9,
// a crash, a power cut), and another local user may then listen on the
// port it names: a client that trusted the file would hand that program the
// token (which never changes) and, in the Pi extension, every session entry
// it pushes. So a client first asks GET /healthz?challenge=C, without the
// token, and the server answers with Proof(token, C), which only a holder of
// the token can compute.

// ChallengeBytes is the size of a health challenge before hex encoding.
const ChallengeBytes = 16

// Proof is the server's answer to a health challenge: HMAC-SHA256 of the
// challenge, keyed with the API token, in hex.
func Proof(token, challenge string) string {
	m := hmac.New(sha256.New, []byte(token))
	io.WriteString(m, "pi-history healthz "+challenge)
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

// proven remembers, for a client and its copies, that the server passed
// the challenge.
type proven struct {
	mu sync.Mutex
	ok bool
}

// prove makes sure, once per client, that the server at c.base holds
// c.token, asking without sending it.
func (c *Client) prove(ctx context.Context) error {
	c.proven.mu.Lock()
	defer c.proven.mu.Unlock()
	if c.proven.ok {
		return nil
	}
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
	var h Health
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h) != nil ||
		!hmac.Equal([]byte(h.Proof), []byte(Proof(c.token, challenge))) {
		return fmt.Errorf("%w: the program answering at %s did not prove that it holds this data directory's API token, so the token was not sent to it; "+
			"if the server stopped without cleaning up, another program may now listen on its port: start 'pi-history serve' again", ErrNotOurServer, c.base)
	}
	c.proven.ok = true
	return nil
}
