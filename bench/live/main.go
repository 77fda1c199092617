// Command live measures live-ingest latency: the time from appending a line
// to a Pi journal until a search through a running `pi-history serve` finds
// it. It starts the server itself (on loopback, with a temporary data and
// sessions directory unless given), appends entries at a steady rate, polls
// the API for each one, and prints p50, p99 and max.
//
//	go run ./bench/live -n 300
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/api/client"
)

func main() {
	n := flag.Int("n", 300, "entries to append (one at a time)")
	every := flag.Duration("every", 20*time.Millisecond, "pause between appends")
	bin := flag.String("bin", "", "pi-history binary (default: build ./cmd/pi-history)")
	data := flag.String("data", "", "data directory (default: a temporary one); may hold an imported corpus")
	flag.Parse()
	tmp, _ := os.MkdirTemp("", "pihist-live-")
	defer os.RemoveAll(tmp)
	if *bin == "" {
		*bin = filepath.Join(tmp, "pi-history")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/pi-history").CombinedOutput(); err != nil {
			fail("build: %v\n%s", err, out)
		}
	}
	if *data == "" {
		*data = filepath.Join(tmp, "data")
	}
	sessions := filepath.Join(tmp, "sessions", "--bench--")
	os.MkdirAll(sessions, 0o755)
	addr := freeAddr()
	srv := exec.Command(*bin, "serve", "--data", *data, "--sessions", filepath.Dir(sessions), "--addr", addr, "--log-level", "warn")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		fail("serve: %v", err)
	}
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	var c *client.Client
	for i := 0; i < 200; i++ {
		time.Sleep(50 * time.Millisecond)
		if cc, _, err := client.Discover(*data); err == nil && cc.Health(context.Background()) == nil {
			c = cc
			break
		}
	}
	if c == nil {
		fail("server did not come up on %s", addr)
	}
	journal := filepath.Join(sessions, "2026-11-29T00-00-00-000Z_live-bench.jsonl")
	f, err := os.OpenFile(journal, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	hdr, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": "live-bench", "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "cwd": "/bench"})
	f.Write(append(hdr, '\n'))
	var lat []float64
	parent := any(nil)
	for i := 0; i < *n; i++ {
		id := fmt.Sprintf("%08x", i+1)
		token := fmt.Sprintf("livetoken%06dx", i)
		line, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
			"message": map[string]any{"role": "user", "content": "appended " + token}})
		parent = id
		t0 := time.Now()
		if _, err := f.Write(append(line, '\n')); err != nil {
			fail("append: %v", err)
		}
		for {
			resp, err := c.Search(context.Background(), &pihistory.SearchRequest{Needle: token, Scope: pihistory.ScopeAll, Limit: 1})
			if err == nil && len(resp.Hits) == 1 {
				break
			}
			if time.Since(t0) > 10*time.Second {
				fail("entry %d not searchable after 10s", i)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
		time.Sleep(*every)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[min(int(p*float64(len(lat))), len(lat)-1)] }
	fmt.Printf("live ingest, append → searchable over the API (%d entries): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", len(lat), q(0.5), q(0.99), lat[len(lat)-1])
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("%v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "live: "+format+"\n", args...)
	os.Exit(1)
}
