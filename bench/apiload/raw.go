package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/pi-history/pi-history/search"
)

// rawSearcher is a lean load-generating client: one kept-alive HTTP/1.1
// connection, requests written from bytes prepared before the timed phase,
// responses parsed by net/http's own reader into a reused buffer. It does
// the work a client must do (send the whole request, read and check the
// whole response) without net/http.Transport's per-request goroutine
// hand-offs and allocations, so that on a small machine the load generator
// takes less of the CPU the server is measured on.
//
// Every response is checked: status 200, Content-Type application/json, a
// body of exactly Content-Length bytes that is a JSON object beginning with
// its hits. Every checkEvery-th response is also decoded in full (see
// checkResponse).
type rawSearcher struct {
	addr       string
	reqs       [][]byte // one prepared request per needle
	needles    []string
	checkEvery int

	conn  net.Conn
	br    *bufio.Reader
	body  []byte
	n     int
	bytes int64 // response bodies read
}

// prepareRequests builds, for each needle, the bytes of a POST /v1/search
// request that asks what the std client asks (all scope, limit 20).
func prepareRequests(addr, token string, needles []string) ([][]byte, error) {
	out := make([][]byte, len(needles))
	for i, n := range needles {
		body, err := json.Marshal(&search.Request{Needle: n, Scope: search.ScopeAll, Limit: 20})
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "POST /v1/search HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n", addr, token, len(body))
		b.Write(body)
		out[i] = b.Bytes()
	}
	return out, nil
}

func (s *rawSearcher) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// search sends the request for needle i and checks the answer.
func (s *rawSearcher) search(i int) error {
	if s.conn == nil {
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			return err
		}
		s.conn = c
		if s.br == nil {
			s.br = bufio.NewReaderSize(c, 32<<10)
		} else {
			s.br.Reset(c)
		}
	}
	if err := s.roundTrip(i); err != nil {
		s.close() // never reuse a connection in an unknown state
		return err
	}
	return nil
}

func (s *rawSearcher) roundTrip(i int) error {
	s.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.conn.Write(s.reqs[i]); err != nil {
		return err
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return err
	}
	n := resp.ContentLength
	if n < 0 || n > 64<<20 {
		// Not expected of this server; read what there is, bounded.
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		s.body = append(s.body[:0], b...)
	} else {
		if int64(cap(s.body)) < n {
			s.body = make([]byte, n)
		}
		s.body = s.body[:n]
		if _, err := io.ReadFull(resp.Body, s.body); err != nil {
			return err
		}
		resp.Body.Close()
	}
	s.bytes += int64(len(s.body))
	if resp.Close {
		s.close()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(s.body[:min(len(s.body), 300)]))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("content type %q", ct)
	}
	if !bytes.HasPrefix(s.body, []byte(`{"hits":[`)) || !bytes.HasSuffix(s.body, []byte("}\n")) {
		return fmt.Errorf("not a search response: %.200s", s.body)
	}
	if s.n++; s.checkEvery > 0 && s.n%s.checkEvery == 0 {
		return checkResponse(s.body, s.needles[i])
	}
	return nil
}

// checkResponse decodes a search response in full and checks that every
// snippet's match is the needle (a hit may lack snippets only when the
// response says the snippet budget ran out).
func checkResponse(body []byte, needle string) error {
	var r search.Response
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("bad response: %w", err)
	}
	for _, h := range r.Hits {
		if len(h.Snippets) == 0 && !r.Truncated {
			return fmt.Errorf("hit %s/%s has no snippet", h.Session, h.Entry)
		}
		for _, sn := range h.Snippets {
			if sn.MatchStart < 0 || sn.MatchStart > sn.MatchEnd || sn.MatchEnd > len(sn.Text) || sn.Text[sn.MatchStart:sn.MatchEnd] != needle {
				return fmt.Errorf("hit %s/%s: a snippet's match is not the needle %q", h.Session, h.Entry, needle)
			}
		}
	}
	return nil
}

// avgBytes formats a mean response size.
func avgBytes(total, n int64) string {
	if n == 0 {
		return "0"
	}
	return strconv.FormatInt(total/n, 10)
}
