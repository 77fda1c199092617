// Command firstscan compares the two ways a history is first read: a
// `pi-history import` into a fresh data directory, and a `pi-history
// serve` whose watcher reads the same sessions directory into another
// fresh one (its first scan, until the log says "read every journal"). It
// runs both with the same binary, alternately, and prints their rates side
// by side, each with its process's peak RSS, with the server's time until every entry was also indexed (an
// import's summary comes after its indexing and compaction, a server's
// scan ends when the store holds every entry) and how long its warm-up took
// after the scan (the warm-up waits for it, see
// ingest.Watcher.FirstScanDone).
//
//	go run ./bench/firstscan -corpus /tmp/bg-corpus [-runs 2] [-bin pi-history]
//
// The corpus is any directory of Pi journals, e.g. one made by
// ../shared/tools/picorpus (go run . -out DIR -entries 100000 -seed 1).
// Not part of the test suite: a run takes minutes.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	corpus := flag.String("corpus", "", "directory of Pi journals to read (required)")
	bin := flag.String("bin", "", "pi-history binary (default: build ./cmd/pi-history)")
	runs := flag.Int("runs", 1, "pairs of runs (import then serve, alternating)")
	keep := flag.Bool("keep", false, "keep the data directories (printed) instead of removing them")
	flag.Parse()
	if *corpus == "" {
		fail("-corpus DIR is required: a directory of Pi journals (see ../shared/tools/picorpus)")
	}
	tmp, err := os.MkdirTemp("", "pihist-firstscan-")
	if err != nil {
		fail("make a temporary directory: %v", err)
	}
	if !*keep {
		defer os.RemoveAll(tmp)
	}
	if *bin == "" {
		*bin = filepath.Join(tmp, "pi-history")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/pi-history").CombinedOutput(); err != nil {
			fail("build ./cmd/pi-history (run from the repository's root): %v\n%s", err, out)
		}
	}
	fmt.Printf("%-4s %-8s %9s %9s %12s %12s %s\n", "run", "how", "entries", "seconds", "entries/s", "peak RSS MB", "then")
	for r := 1; r <= *runs; r++ {
		imp, err := runImport(*bin, filepath.Join(tmp, fmt.Sprintf("import%d", r)), *corpus)
		if err != nil {
			fail("import: %v", err)
		}
		fmt.Printf("%-4d %-8s %9d %9.1f %12.0f %12.0f\n", r, "import", imp.entries, imp.seconds, float64(imp.entries)/imp.seconds, imp.peakRSSMB)
		srv, err := runServe(*bin, filepath.Join(tmp, fmt.Sprintf("serve%d", r)), *corpus)
		if err != nil {
			fail("serve: %v", err)
		}
		then := fmt.Sprintf("warm-up done %.1f s after the scan", srv.warmAfter)
		if srv.warmAfter < 0 {
			then = fmt.Sprintf("warm-up done before the scan (%.1f s after the start)", -srv.warmAfter)
		}
		fmt.Printf("%-4d %-8s %9d %9.1f %12.0f %12.0f %s\n", r, "serve", srv.entries, srv.seconds, float64(srv.entries)/srv.seconds, srv.peakRSSMB, then)
		fmt.Printf("%-4d %-8s %9d %9.1f %12.0f %12s %s\n", r, "+index", srv.entries, srv.indexed, float64(srv.entries)/srv.indexed, "", "serve until every entry was indexed")
	}
	if *keep {
		fmt.Println("data directories kept in", tmp)
	}
}

// result is one first reading: entries stored in seconds.
type result struct {
	entries int
	seconds float64
	// serve: seconds from the scan's end to the warm-up's; negative:
	// the warm-up ended first, that many seconds after the start
	warmAfter float64
	indexed   float64 // serve: seconds from the start until every entry was indexed
	// the process's peak resident set over its whole run (a server's
	// includes its indexing and warm-up, until it was stopped)
	peakRSSMB float64
}

// peakRSSMB is the peak resident set of the process that ran in ps, in
// MB (0 where the system does not say).
func peakRSSMB(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	return 0
}

// runImport times `pi-history import --json` of corpus into data.
func runImport(bin, data, corpus string) (result, error) {
	cmd := exec.Command(bin, "import", "--json", "--data", data, corpus)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(data))
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	out, err := cmd.Output()
	secs := time.Since(t0).Seconds()
	if err != nil {
		return result{}, fmt.Errorf("%v", err)
	}
	var sum struct{ Entries int }
	if err := json.Unmarshal(out, &sum); err != nil {
		return result{}, fmt.Errorf("read its summary %q: %v", out, err)
	}
	return result{entries: sum.Entries, seconds: secs, peakRSSMB: peakRSSMB(cmd.ProcessState)}, nil
}

// runServe starts `pi-history serve` on a fresh data directory watching
// corpus, and times it from its start to the log line that says every
// journal was read, to the index covering every entry (polled with
// `pi-history stats`), and to the warm-up's end; then it stops the server.
func runServe(bin, data, corpus string) (res result, err error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--sessions", corpus, "--log-format", "json")
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(data))
	cmd.Stdout = io.Discard
	logs, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		res.peakRSSMB = peakRSSMB(cmd.ProcessState)
	}()
	indexed, scanDone := make(chan float64, 1), make(chan struct{})
	go func() { <-scanDone; indexed <- waitIndexed(bin, data, cmd.Env, t0) }()
	var scanned time.Time
	warmed := false
	sc := bufio.NewScanner(logs)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for (scanned.IsZero() || !warmed) && sc.Scan() {
		line := sc.Text()
		var rec struct {
			Msg     string
			Entries int
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(rec.Msg, "read every journal"):
			scanned = time.Now()
			res.entries, res.seconds = rec.Entries, scanned.Sub(t0).Seconds()
			close(scanDone)
		case rec.Msg == "preloaded for search" && scanned.IsZero():
			// A binary whose warm-up does not wait for the scan.
			warmed, res.warmAfter = true, -time.Since(t0).Seconds()
		case rec.Msg == "preloaded for search":
			warmed, res.warmAfter = true, time.Since(scanned).Seconds()
		case rec.Msg == "searches will load from disk what was not preloaded":
			return res, fmt.Errorf("the warm-up failed: %s", line)
		}
	}
	go io.Copy(io.Discard, logs)
	if scanned.IsZero() || !warmed {
		return res, fmt.Errorf("the server ended before its first scan and warm-up did (read: %v)", sc.Err())
	}
	res.indexed = <-indexed
	return res, nil
}

// waitIndexed polls `pi-history stats --json` of the server owning data,
// once every journal was read, until it has indexed every entry, and
// returns the seconds since t0 (0 if it gave up after ten minutes).
func waitIndexed(bin, data string, env []string, t0 time.Time) float64 {
	for time.Since(t0) < 10*time.Minute {
		time.Sleep(250 * time.Millisecond)
		cmd := exec.Command(bin, "stats", "--json", "--data", data)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			continue
		}
		var st struct {
			Entries  int
			IndexLag uint64
		}
		if json.Unmarshal(out, &st) == nil && st.Entries > 0 && st.IndexLag == 0 {
			return time.Since(t0).Seconds()
		}
	}
	return 0
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "firstscan: "+format+"\n", args...)
	os.Exit(1)
}
