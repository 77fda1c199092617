package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// treeBytes sums the sizes of the regular files under dir whose names end
// with suffix ("" for every file).
func treeBytes(dir, suffix string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, suffix) {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// imported is an import's figures.
type imported struct {
	seconds  float64
	peakRSS  int64 // bytes, the kernel's high-water mark (VmHWM), as last sampled
	peakAnon int64 // sampled every 100 ms (benchkit.RunSampled)
	entries  int
}

// importCorpus imports corpus into a new data directory with bin import,
// timing it and sampling its memory.
func importCorpus(bin, corpus, data string) (imported, error) {
	var im imported
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "import", "--json", "--data", data, corpus)
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	m, err := benchkit.RunSampled(cmd, 100*time.Millisecond)
	im.seconds = time.Since(t0).Seconds()
	if err != nil {
		return im, fmt.Errorf("pi-history import %s: %v: %s", corpus, err, strings.TrimSpace(errb.String()))
	}
	im.peakAnon, im.peakRSS = m.Anon, m.Peak
	var sum struct {
		Entries int `json:"entries"`
	}
	json.Unmarshal(out.Bytes(), &sum)
	im.entries = sum.Entries
	return im, nil
}

// dropPageCache asks the kernel to drop clean cached pages; the error says
// why it could not (a container usually may not).
func dropPageCache() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}

// knowsFlag reports whether 'bin serve --help' mentions flag.
func knowsFlag(bin, flag string) bool {
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("-"+flag+" "))
}

// expand fills a budget into a flag template: {MB} is the budget, {HALF}
// half of it.
func expand(tmpl string, mb int) []string {
	r := strings.NewReplacer("{MB}", strconv.Itoa(mb), "{HALF}", strconv.Itoa(mb/2))
	return strings.Fields(r.Replace(tmpl))
}

// subBench runs another benchmark binary and returns the first number
// each pattern captures from its output (-1 where none does), and its
// output.
func subBench(bin string, args []string, patterns ...string) ([]float64, string) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	vals := make([]float64, len(patterns))
	for i, p := range patterns {
		vals[i] = -1
		if m := regexp.MustCompile(p).FindSubmatch(out); m != nil {
			if v, err := parseNumber(string(m[1])); err == nil {
				vals[i] = v
			}
		}
	}
	s := strings.TrimSpace(string(out))
	if err != nil {
		s += fmt.Sprintf("\n(%s: %v)", filepath.Base(bin), err)
	}
	return vals, s
}

// parseNumber reads a plain number, or a Go duration as milliseconds.
func parseNumber(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v, nil
	}
	d, err := time.ParseDuration(s)
	return float64(d.Microseconds()) / 1000, err
}
