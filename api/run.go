package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/pi-history/pi-history/api/client"
)

// Timeouts bound what one connection may cost.
type Timeouts struct {
	ReadHeader time.Duration // default 5s: a client slower than this at sending headers is dropped
	Read       time.Duration // default 60s: the whole request, body included
	Write      time.Duration // default 60s: the response (import and sync extend their own)
	Idle       time.Duration // default 120s: a kept-alive connection without requests
	Shutdown   time.Duration // default 30s: how long in-flight requests may finish on shutdown
}

func (t *Timeouts) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, 5*time.Second)
	def(&t.Read, 60*time.Second)
	def(&t.Write, 60*time.Second)
	def(&t.Idle, 120*time.Second)
	def(&t.Shutdown, 30*time.Second)
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully:
// it stops accepting, lets in-flight requests finish (every write the
// server acknowledged is already synced to disk), cancels the ones still
// running after t.Shutdown, and returns once all handlers have returned.
// The caller then closes the service.
func (s *Server) Serve(ctx context.Context, ln net.Listener, t Timeouts) error {
	t.defaults()
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("api: shutting down; finishing requests in progress")
	sctx, cancel := context.WithTimeout(context.Background(), t.Shutdown)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		s.log.Warn("api: requests still running after the grace period; canceling them", "grace", t.Shutdown)
		cancelBase()
		srv.Close()
	}
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(t.Shutdown):
		return fmt.Errorf("api: handlers did not return %v after cancellation", t.Shutdown)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WriteServerInfo records where the server listens in <dataDir>/server.json
// (mode 0600, replaced atomically), for the CLI and the Pi extension.
func WriteServerInfo(dataDir string, si client.ServerInfo) error {
	b, err := json.MarshalIndent(si, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dataDir, client.ServerFile)
	tmp, err := os.CreateTemp(dataDir, ".server-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// RemoveServerInfo deletes <dataDir>/server.json if it still names pid.
func RemoveServerInfo(dataDir string, pid int) error {
	si, err := client.ReadServerInfo(dataDir)
	if err != nil {
		if errors.Is(err, client.ErrNoServer) {
			return nil
		}
		return err
	}
	if si.PID != pid {
		return nil
	}
	return os.Remove(filepath.Join(dataDir, client.ServerFile))
}

// URLFor is the base URL of a server listening on addr.
func URLFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Bound to every interface: clients on this machine use loopback.
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
