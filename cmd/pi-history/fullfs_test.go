package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/service"
)

// TestServeOutlivesARealFullDiskAndResumesByItself runs the real binary
// with its data directory on a small file system of its own (named by
// $PI_HISTORY_TEST_SMALL_FS, a 200 MB tmpfs say; skipped without it) and
// a reserve of 32 MiB, and fills that file system while Pi appends (the
// server used to exit with "pebble: fatal commit error: ... no space left
// on device"): the server stays up, /healthz is degraded with the cause,
// searches answer; once space is freed the health is ok again, without a
// restart, and every line appended meanwhile is stored.
func TestServeOutlivesARealFullDiskAndResumesByItself(t *testing.T) {
	small := os.Getenv("PI_HISTORY_TEST_SMALL_FS")
	if small == "" || testing.Short() {
		t.Skip("set PI_HISTORY_TEST_SMALL_FS to a directory on a small file system of its own to run this")
	}
	bin := testutil.BuildBinary(t)
	dir, err := os.MkdirTemp(small, "serve-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data, sessions := filepath.Join(dir, "data"), t.TempDir()
	journal := filepath.Join(sessions, "--w--", "s1.jsonl")
	srvWriteLines(t, journal, `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"}`, srvLine("e0", "", "marker-0 first"))

	srv := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--sessions", sessions, "--log-format", "json")
	srv.Env = append(os.Environ(), "PI_HISTORY_RESERVE_MB=32")
	var serverLog strings.Builder
	srv.Stderr = &serverLog
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	server := func() *client.ServerInfo {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			si, err := client.ReadServerInfo(data)
			if err == nil {
				if resp, err := http.Get(si.URL + "/healthz"); err == nil {
					resp.Body.Close()
					return si
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no server answering: %v\n%s", err, serverLog.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	health := func() client.Health {
		t.Helper()
		var h client.Health
		resp, err := http.Get(server().URL + "/healthz")
		if err != nil {
			t.Fatalf("healthz: %v", err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&h)
		return h
	}
	pid := server().PID

	// Fill the file system but ~24 MiB, under the reserve, then append.
	du, err := vfs.Default.GetDiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for n := int64(du.AvailBytes) - 24<<20; n >= 1<<20; n -= 1 << 20 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	lines := 20
	for i := 1; i <= lines; i++ {
		noise := make([]byte, 16<<10)
		rand.Read(noise)
		srvAppendLines(t, journal, srvLine(fmt.Sprintf("e%d", i), fmt.Sprintf("e%d", i-1), fmt.Sprintf("marker-%d %s", i, hex.EncodeToString(noise))))
	}
	var h client.Health
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if h = health(); h.Status == "degraded" || time.Now().After(deadline) {
			break
		}
	}
	if h.Status != "degraded" || len(h.Faults) == 0 || h.Faults[0].Part != "writes" || !strings.Contains(h.Faults[0].Cause, "free") {
		t.Fatalf("health on the full disk: %+v; want degraded, naming the free space", h)
	}
	select {
	case err := <-exited:
		t.Fatalf("the server exited on the full disk: %v\n%s", err, serverLog.String())
	default:
	}
	tok, err := os.ReadFile(filepath.Join(data, client.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", server().URL+"/v1/search?needle=marker-0", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("search on the full disk: %v %v", resp, err)
	}
	resp.Body.Close()

	// Space comes back: the server reads the rest by itself.
	os.Remove(filler)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if h := health(); h.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %+v a minute after space came back\n%s", health(), serverLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if si := server(); si.PID != pid {
		t.Errorf("the server's pid changed from %d to %d", pid, si.PID)
	}
	want := lines + 1
	for {
		out, err := exec.Command(bin, "stats", "--json", "--data", data, "--sessions", sessions).Output()
		var st service.Stats
		if err == nil && json.Unmarshal(out, &st) == nil && st.Entries == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %s (%v); want %d entries a minute after space came back\n%s", out, err, want, serverLog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
	if _, err := client.ReadServerInfo(data); err == nil {
		t.Error("server.json left behind after SIGTERM")
	}
}
