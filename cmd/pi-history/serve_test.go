package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-history/pi-history/api/client"
	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/service"
)

// TestServeSharesTheStoreWithTheCLI runs the real binary: while 'serve'
// owns the data directory, stats and import answer through its API with the
// same output; a line Pi appends is stored within moments; SIGTERM stops the
// server cleanly and forgets server.json.
func TestServeSharesTheStoreWithTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testutil.BuildBinary(t)
	root := t.TempDir()
	data, sessions, old := filepath.Join(root, "data"), filepath.Join(root, "sessions"), filepath.Join(root, "old")
	journal := filepath.Join(sessions, "--home-dev-shop--", "s1.jsonl")
	srvWriteLines(t, journal, `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/home/dev/shop"}`,
		srvLine("a1", "", "first words"))
	srvWriteLines(t, filepath.Join(old, "--p--", "s2.jsonl"), `{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/p"}`,
		srvLine("b1", "", "from an old machine"), srvLine("b2", "b1", "more"))
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--data", data, "--sessions", sessions)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("%v: %s", err, stderr.String())
		}
		return string(out), nil
	}

	srv := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--sessions", sessions, "--log-format", "json")
	var serverLog strings.Builder
	srv.Stderr = &serverLog
	serverOut, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var si *client.ServerInfo
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := client.ReadServerInfo(data)
		if err == nil {
			si = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server.json did not appear: %v\n%s", err, serverLog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if si.PID != srv.Process.Pid || !strings.HasPrefix(si.URL, "http://127.0.0.1:") {
		t.Fatalf("server.json: %+v", si)
	}
	// Like Jupyter, serve prints a URL that logs a browser in once.
	sc := bufio.NewScanner(serverOut)
	var login string
	for login == "" && sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, si.URL+"/ui/login?code=") {
			login = line
		}
	}
	go io.Copy(io.Discard, serverOut)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	lresp, err := noRedirect.Get(login)
	if err != nil || lresp.StatusCode != http.StatusSeeOther || len(lresp.Cookies()) == 0 {
		t.Fatalf("the login URL printed by serve (%q) does not log in: %v %v", login, lresp, err)
	}
	lresp.Body.Close()
	tok, err := cli("token")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", si.URL+"/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("token printed by 'pi-history token' is refused: %v %v", resp, err)
	}
	resp.Body.Close()

	// The watcher reads what Pi appends; stats (through the API) sees it.
	waitEntries := func(want int) service.Stats {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := cli("stats", "--json")
			if err != nil {
				t.Fatalf("stats while serving: %v", err)
			}
			var st service.Stats
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("stats --json: %v: %s", err, out)
			}
			if st.Entries == want {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("stats shows %d entries, want %d", st.Entries, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitEntries(1)
	srvAppendLines(t, journal, srvLine("a2", "a1", "appended while serving"))
	waitEntries(2)

	out, err := cli("import", "--json", old)
	if err != nil {
		t.Fatalf("import while serving: %v", err)
	}
	var sum service.ImportSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Entries != 2 || sum.Files != 1 {
		t.Fatalf("import through the server: %s %v", out, err)
	}
	text, err := cli("stats")
	if err != nil || !strings.Contains(text, "entries:     4 (4 searchable)") {
		t.Fatalf("stats text through the server: %v\n%s", err, text)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, serverLog.String())
	}
	if _, err := os.Stat(filepath.Join(data, client.ServerFile)); !os.IsNotExist(err) {
		t.Errorf("server.json left behind: %v", err)
	}
	// The same figures without the server.
	local, err := cli("stats")
	if err != nil {
		t.Fatal(err)
	}
	firstLines := func(s string) string { return strings.Join(strings.Split(s, "\n")[:4], "\n") }
	if firstLines(local) != firstLines(text) {
		t.Errorf("stats differ with and without the server:\n%s\n---\n%s", text, local)
	}
	if strings.Contains(serverLog.String(), strings.TrimSpace(tok)) {
		t.Error("the server log contains the token")
	}
	// Without --memory-mb the server takes the default budget for this
	// machine and says how it divides it; a budget too small to be of use,
	// the two flags it replaced, and --small-pages (huge pages are gone),
	// are refused with what to do.
	mem := service.SplitMemory(service.ServeMemoryBytes())
	for _, want := range []string{fmt.Sprintf(`"memoryMB":%d`, mem.Total>>20), fmt.Sprintf(`"cacheMB":%d`, mem.Cache>>20), fmt.Sprintf(`"goLimitMB":%d`, mem.GoLimit>>20)} {
		if !strings.Contains(serverLog.String(), want) {
			t.Errorf("the serving line of the log does not say %s:\n%s", want, serverLog.String())
		}
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--memory-mb", "3"}, "--memory-mb 3: want at least 64"},
		{[]string{"--cache-mb", "3"}, "use --memory-mb N"},
		{[]string{"--sketch-mb", "3"}, "use --memory-mb N"},
		{[]string{"--small-pages"}, "--small-pages was removed: the server no longer moves its memory into huge pages"},
	} {
		// A flag the server does not refuse would serve: the timeout ends it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		bad := exec.CommandContext(ctx, bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--sessions", sessions}, tc.flags...)...)
		if out, err := bad.CombinedOutput(); bad.ProcessState == nil || bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("serve %s: %v\n%s", strings.Join(tc.flags, " "), err, out)
		}
		cancel()
	}
}

func srvLine(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":%q}}`, id, p, text)
}

func srvWriteLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func srvAppendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(strings.Join(lines, "\n") + "\n")
}
