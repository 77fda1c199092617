// Command soak runs a pi-history server through crashes under load and
// checks that nothing acknowledged is lost or stored twice. For a bounded
// time (10 minutes by default) it
//   - appends entries to journals in the watched sessions directory, each
//     line synced before it counts as acknowledged;
//   - pushes entries through the API (POST /v1/sessions/{id}/entries), each
//     acknowledged by a 2xx answer, and sent again until one comes;
//   - runs 16 searchers asking for markers already acknowledged;
//   - kills the server (SIGKILL) at random moments and starts it again.
//
// Then it starts the server once more, waits for it to catch up, and
// searches for every acknowledged marker: each must be found exactly once.
// It prints what it did, the searches' latency while the server was up,
// the server's peak RSS, and the verdict; it exits 1 when a marker is
// missing or found twice. Traffic goes to 127.0.0.1 only.
//
//	go run ./bench/soak -duration 10m
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pihistory "github.com/pi-history/pi-history"
	"github.com/pi-history/pi-history/api/client"
)

type config struct {
	duration   time.Duration
	searchers  int
	appendGap  time.Duration
	pushGap    time.Duration
	minUp      time.Duration
	maxUp      time.Duration
	bin        string
	keep       bool
	seed       uint64
	files      int
	catchUpMax time.Duration
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 10*time.Minute, "how long to append, push, search and kill")
	flag.IntVar(&c.searchers, "c", 16, "concurrent searchers")
	flag.DurationVar(&c.appendGap, "append-every", 20*time.Millisecond, "pause between journal appends (per file)")
	flag.DurationVar(&c.pushGap, "push-every", 50*time.Millisecond, "pause between API pushes")
	flag.DurationVar(&c.minUp, "min-up", 2*time.Second, "shortest time the server runs before a kill")
	flag.DurationVar(&c.maxUp, "max-up", 25*time.Second, "longest time the server runs before a kill")
	flag.StringVar(&c.bin, "bin", "", "pi-history binary (default: build ./cmd/pi-history)")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary data and sessions directories")
	flag.Uint64Var(&c.seed, "seed", uint64(time.Now().UnixNano()), "random seed (printed, to repeat a run)")
	flag.IntVar(&c.files, "files", 2, "journals appended to")
	flag.DurationVar(&c.catchUpMax, "catch-up", 2*time.Minute, "how long the final server may take to find every marker")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// soak is one run's state.
type soak struct {
	c        config
	tmp      string
	data     string
	sessions string
	addr     string
	rng      *rand.Rand

	mu     sync.Mutex
	srv    *exec.Cmd
	exited chan struct{} // closed when srv has exited
	cli    *client.Client
	acked  []string // markers acknowledged, in order
	peakKB int64

	appended, pushed, pushRetries     atomic.Int64
	kills, starts                     atomic.Int64
	searches, searchErrs, searchFound atomic.Int64
	latMu                             sync.Mutex
	lat                               []float64 // ms, searches answered
}

func run(c config) error {
	tmp, err := os.MkdirTemp("", "pihist-soak-")
	if err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(tmp)
	}
	s := &soak{c: c, tmp: tmp, data: filepath.Join(tmp, "data"), sessions: filepath.Join(tmp, "sessions"), rng: rand.New(rand.NewPCG(c.seed, 1))}
	if c.bin == "" {
		s.c.bin = filepath.Join(tmp, "pi-history")
		fmt.Println("building ./cmd/pi-history …")
		if out, err := exec.Command("go", "build", "-o", s.c.bin, "./cmd/pi-history").CombinedOutput(); err != nil {
			return fmt.Errorf("build: %v\n%s", err, out)
		}
	}
	if s.addr, err = freeAddr(); err != nil {
		return err
	}
	fmt.Printf("soak: seed %d, %s, %d searchers, server on %s, data in %s\n", c.seed, c.duration, c.searchers, s.addr, tmp)
	if err := s.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range c.files {
		wg.Go(func() { s.appender(ctx, i) })
	}
	wg.Go(func() { s.pusher(ctx) })
	for range c.searchers {
		wg.Go(func() { s.searcher(ctx) })
	}
	wg.Go(func() { s.killer(ctx) })
	wg.Go(func() { s.watchRSS(ctx) })
	t0 := time.Now()
	wg.Wait()
	fmt.Printf("load ended after %s; starting the server once more to check\n", time.Since(t0).Round(time.Second))
	s.stop(syscall.SIGKILL)
	if err := s.start(); err != nil {
		return err
	}
	defer s.stop(syscall.SIGINT)
	return s.verify()
}

// start runs the server and waits until it answers.
func (s *soak) start() error {
	cmd := exec.Command(s.c.bin, "serve", "--data", s.data, "--sessions", s.sessions, "--addr", s.addr, "--log-level", "warn")
	log, err := os.OpenFile(filepath.Join(s.tmp, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start serve: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	s.starts.Add(1)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		cl, _, err := client.Discover(s.data)
		if err != nil {
			continue
		}
		hc, cancel := context.WithTimeout(context.Background(), time.Second)
		err = cl.Health(hc)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.srv, s.cli, s.exited = cmd, cl, exited
			s.mu.Unlock()
			return nil
		}
	}
	cmd.Process.Kill()
	return fmt.Errorf("the server did not answer within 30 s; see %s", filepath.Join(s.tmp, "serve.log"))
}

func (s *soak) stop(sig syscall.Signal) {
	s.mu.Lock()
	srv, exited := s.srv, s.exited
	s.srv, s.cli = nil, nil
	s.mu.Unlock()
	if srv == nil || srv.Process == nil {
		return
	}
	srv.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		srv.Process.Kill()
		<-exited
	}
}

func (s *soak) client() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cli
}

func (s *soak) ack(marker string) {
	s.mu.Lock()
	s.acked = append(s.acked, marker)
	s.mu.Unlock()
}

func (s *soak) pick() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.acked) == 0 {
		return ""
	}
	return s.acked[rand.IntN(len(s.acked))]
}

func marker(kind string, n int) string { return fmt.Sprintf("<soak-%s-%07d>", kind, n) }

func entryLine(id, parent, text string) []byte {
	var p any
	if parent != "" {
		p = parent
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": p, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "user", "content": "soak entry " + text}})
	return b
}

func header(id string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "cwd": "/soak"})
	return b
}

// appender appends to journal i, syncing each line: a line synced is
// acknowledged (Pi's journal holds it; pi-history must store it).
func (s *soak) appender(ctx context.Context, i int) {
	sid := fmt.Sprintf("soak-file-%d", i)
	dir := filepath.Join(s.sessions, "--soak--")
	os.MkdirAll(dir, 0o755)
	f, err := os.OpenFile(filepath.Join(dir, sid+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: journal:", err)
		return
	}
	defer f.Close()
	f.Write(append(header(sid), '\n'))
	parent := ""
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("f%d-%07d", i, n)
		m := marker(fmt.Sprintf("f%d", i), n)
		if _, err := f.Write(append(entryLine(id, parent, m), '\n')); err != nil {
			fmt.Fprintln(os.Stderr, "soak: append:", err)
			return
		}
		if err := f.Sync(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: sync:", err)
			return
		}
		parent = id
		s.ack(m)
		s.appended.Add(1)
		sleep(ctx, s.c.appendGap)
	}
}

// pusher pushes one entry at a time through the API, sending each again
// until the server acknowledges it (a push that got no answer may or may
// not have been stored: the retry must not store it twice).
func (s *soak) pusher(ctx context.Context) {
	const sid = "soak-push"
	first := true
	parent := ""
	for n := 0; ctx.Err() == nil; n++ {
		id := fmt.Sprintf("p-%07d", n)
		m := marker("p", n)
		lines := []string{string(entryLine(id, parent, m))}
		if first {
			lines = append([]string{string(header(sid))}, lines...)
		}
		for tries := 0; ctx.Err() == nil; tries++ {
			if tries > 0 {
				s.pushRetries.Add(1)
				sleep(ctx, 50*time.Millisecond)
			}
			cl := s.client()
			if cl == nil {
				continue
			}
			pc, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := cl.Push(pc, sid, lines)
			cancel()
			if err == nil {
				first = false
				parent = id
				s.ack(m)
				s.pushed.Add(1)
				break
			}
		}
		sleep(ctx, s.c.pushGap)
	}
}

func (s *soak) searcher(ctx context.Context) {
	for ctx.Err() == nil {
		m, cl := s.pick(), s.client()
		if m == "" || cl == nil {
			sleep(ctx, 10*time.Millisecond)
			continue
		}
		qc, cancel := context.WithTimeout(ctx, 5*time.Second)
		t0 := time.Now()
		resp, err := cl.Search(qc, &pihistory.SearchRequest{Needle: m, Scope: pihistory.ScopeAll, Limit: 5})
		d := time.Since(t0)
		cancel()
		s.searches.Add(1)
		if err != nil {
			s.searchErrs.Add(1) // the server was killed under it, mostly
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		if len(resp.Hits) > 0 {
			s.searchFound.Add(1)
		}
		s.latMu.Lock()
		s.lat = append(s.lat, float64(d.Microseconds())/1000)
		s.latMu.Unlock()
	}
}

func (s *soak) killer(ctx context.Context) {
	for {
		up := s.c.minUp + time.Duration(s.rng.Int64N(int64(s.c.maxUp-s.c.minUp)+1))
		if !sleep(ctx, up) {
			return
		}
		s.stop(syscall.SIGKILL)
		s.kills.Add(1)
		sleep(context.Background(), time.Duration(s.rng.Int64N(int64(time.Second))))
		if err := s.start(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: restart:", err)
			return
		}
	}
}

func (s *soak) watchRSS(ctx context.Context) {
	for sleep(ctx, 500*time.Millisecond) {
		s.mu.Lock()
		srv := s.srv
		s.mu.Unlock()
		if srv == nil || srv.Process == nil {
			continue
		}
		if kb := rssKB(srv.Process.Pid); kb > 0 {
			s.mu.Lock()
			s.peakKB = max(s.peakKB, kb)
			s.mu.Unlock()
		}
	}
}

// verify searches for every acknowledged marker until each is found (or
// the catch-up time runs out), then counts each one's hits.
func (s *soak) verify() error {
	cl := s.client()
	t0 := time.Now()
	pending := slices.Clone(s.acked)
	counts := map[string]int{}
	for len(pending) > 0 && time.Since(t0) < s.c.catchUpMax {
		var next []string
		for _, m := range pending {
			n, err := count(cl, m)
			if err != nil {
				return fmt.Errorf("search %s: %w", m, err)
			}
			if n == 0 {
				next = append(next, m)
				continue
			}
			counts[m] = n
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	caught := time.Since(t0)
	var twice []string
	for m, n := range counts {
		if n != 1 {
			twice = append(twice, m+"×"+strconv.Itoa(n))
		}
	}
	slices.Sort(twice)
	s.report(caught)
	fmt.Printf("verdict: %d acknowledged markers: %d found exactly once, %d missing, %d found more than once\n",
		len(s.acked), len(s.acked)-len(pending)-len(twice), len(pending), len(twice))
	if len(pending) > 0 || len(twice) > 0 {
		return fmt.Errorf("lost %s; stored twice %s (data kept in %s)", firstFew(pending), firstFew(twice), s.tmp)
	}
	return nil
}

func count(cl *client.Client, m string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Search(ctx, &pihistory.SearchRequest{Needle: m, Scope: pihistory.ScopeAll, Limit: 10})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range resp.Hits {
		n += h.Matches
	}
	return n, nil
}

func (s *soak) report(caught time.Duration) {
	s.latMu.Lock()
	lat := slices.Clone(s.lat)
	s.latMu.Unlock()
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(int(p*float64(len(lat))), len(lat)-1)]
	}
	fmt.Printf("appended %d lines (synced) to %d journals, pushed %d entries (%d retries after no answer)\n",
		s.appended.Load(), s.c.files, s.pushed.Load(), s.pushRetries.Load())
	fmt.Printf("server killed %d times, started %d times; peak RSS %.1f MB\n", s.kills.Load(), s.starts.Load(), float64(s.peakKB)/1024)
	fmt.Printf("searches: %d sent, %d answered (%d found their marker), %d failed (server down); answered p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		s.searches.Load(), len(lat), s.searchFound.Load(), s.searchErrs.Load(), q(0.5), q(0.99), q(1))
	fmt.Printf("final catch-up: every marker searched within %s of the last start\n", caught.Round(time.Millisecond))
}

func firstFew(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	if len(xs) > 10 {
		return strings.Join(xs[:10], ", ") + fmt.Sprintf(" and %d more", len(xs)-10)
	}
	return strings.Join(xs, ", ")
}

// rssKB is the peak resident set of process pid so far (VmHWM, in kB):
// the peak between two polls counts too, not only the size at each.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb
			}
		}
	}
	return 0
}

// sleep waits d or until ctx ends; it says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errors.New("no free loopback port: " + err.Error())
	}
	defer l.Close()
	return l.Addr().String(), nil
}
