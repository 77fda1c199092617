package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// errUnknownFlag is a server that refused its flags as undefined (an older
// binary without --memory-mb, say).
var errUnknownFlag = errors.New("serve does not know a flag it was given")

// server is a 'pi-history serve' subprocess.
type server struct {
	cmd      *exec.Cmd
	pid      int
	base     string // http://127.0.0.1:PORT
	token    string
	started  time.Time
	up       time.Duration // when /healthz first answered
	http     *http.Client
	exited   chan struct{}
	warmed   chan struct{} // closed when the log says the warm-up is over
	warmedAt atomic.Int64  // ns after start
	peakAnon atomic.Int64  // the highest RssAnon read (every 200 ms, and after each group)
	peakRSS  atomic.Int64  // the highest VmRSS or VmHWM read
	slowN    int           // the slowest queries each group prints with their stats

	mu   sync.Mutex
	tail []string // the log's last lines, for errors
}

// startServer starts bin serve over data on a free loopback port with
// flags added, writing its log to logPath, and waits until it answers
// /healthz (at most a minute). warmRe matches the log line that ends the
// warm-up.
func startServer(bin, data string, flags []string, warmRe *regexp.Regexp, logPath string, slowN int) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data", data, "--addr", addr, "--no-watch", "--log-format", "json"}, flags...)
	s := &server{base: "http://" + addr, slowN: slowN, exited: make(chan struct{}), warmed: make(chan struct{}),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 5 * time.Minute}}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout = logf
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	s.pid = s.cmd.Process.Pid
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		defer logf.Close()
		s.readLog(stderr, logf, warmRe)
	}()
	go func() { <-logged; s.cmd.Wait(); close(s.exited) }()
	go s.sampleMemory()
	for time.Since(s.started) < time.Minute {
		select {
		case <-s.exited:
			t := s.logTail()
			if strings.Contains(t, "flag provided but not defined") {
				return nil, fmt.Errorf("%w: %s", errUnknownFlag, t)
			}
			return nil, fmt.Errorf("serve %s exited before answering: %s", strings.Join(args, " "), t)
		case <-time.After(10 * time.Millisecond):
		}
		if resp, err := s.http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.up = time.Since(s.started)
				if s.token, err = client.ReadToken(data); err != nil {
					s.stop()
					return nil, fmt.Errorf("read the server's token: %w", err)
				}
				return s, nil
			}
		}
	}
	s.stop()
	return nil, fmt.Errorf("serve did not answer /healthz within a minute: %s", s.logTail())
}

// readLog copies the server's log to w, keeps its last lines, and closes
// s.warmed at the first line warmRe matches.
func (s *server) readLog(r io.Reader, w io.Writer, warmRe *regexp.Regexp) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	warm := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		s.mu.Lock()
		s.tail = append(s.tail, line)
		if len(s.tail) > 8 {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
		if !warm && warmRe != nil && warmRe.MatchString(line) {
			warm = true
			s.warmedAt.Store(int64(time.Since(s.started)))
			close(s.warmed)
		}
	}
	io.Copy(w, r)
}

func (s *server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, " | ")
}

// sampleMemory keeps the highest RssAnon and VmRSS, sampled every 200 ms
// until the server exits.
func (s *server) sampleMemory() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if m, err := benchkit.ReadMemory(s.pid); err == nil {
			s.notePeaks(m)
		}
		select {
		case <-s.exited:
			return
		case <-t.C:
		}
	}
}

// notePeaks keeps the highest anonymous memory seen and the kernel's
// high-water mark of the RSS.
func (s *server) notePeaks(m benchkit.Memory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakAnon.Store(max(s.peakAnon.Load(), m.Anon))
	s.peakRSS.Store(max(s.peakRSS.Load(), m.RSS, m.Peak))
}

// waitSteady waits until the warm-up is over: the log says so (warmRe),
// or the server's CPU stayed under 3% of a core for 3 s, or at most
// limit after start. It says which, and when.
func (s *server) waitSteady(limit time.Duration) string {
	const window = 3 * time.Second
	type tick struct {
		at    time.Time
		ticks int64
	}
	var hist []tick
	for {
		select {
		case <-s.warmed:
			return fmt.Sprintf("the log said the warm-up was over at %.1f s", time.Duration(s.warmedAt.Load()).Seconds())
		case <-s.exited:
			return "the server exited"
		case <-time.After(250 * time.Millisecond):
		}
		now := time.Now()
		if now.Sub(s.started) > limit {
			return fmt.Sprintf("no end of the warm-up seen in %.0f s: measured anyway", limit.Seconds())
		}
		c, err := benchkit.CPUTicks(s.pid)
		if err != nil {
			continue
		}
		hist = append(hist, tick{now, c})
		for len(hist) > 1 && now.Sub(hist[1].at) >= window {
			hist = hist[1:]
		}
		if d := now.Sub(hist[0].at); d >= window && float64(c-hist[0].ticks) < 0.03*100*d.Seconds() {
			return fmt.Sprintf("the server's CPU went idle (under 3%% of a core for %.0f s) at %.1f s", window.Seconds(), now.Sub(s.started).Seconds())
		}
	}
}

// memory reads the server's memory now: /proc/PID/status, and the Go heap
// in use from /metrics (-1 when it does not say).
func (s *server) memory() (benchkit.Memory, float64) {
	m, err := benchkit.ReadMemory(s.pid)
	if err == nil {
		s.notePeaks(m)
	}
	heap := -1.0
	req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if resp, err := s.http.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if v, ok := benchkit.PromValue(string(b), "go_memstats_heap_inuse_bytes"); ok {
			heap = v
		}
	}
	return m, heap
}

// stop ends the server as Ctrl-C would, killing it after 30 s.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}
