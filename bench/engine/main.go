// Command engine prints, in one run, every goal of issue 46's item 1 for a
// running 'pi-history serve' and for the one-shot CLI, beside ripgrep over
// the same JSONL: first pages (3+ and 1-2 characters, all scope), branch
// scope and exact counts of 20-character needles, sent 1 s after the
// server starts and again once its warm-up is over, with the server's
// memory (Go heap, anonymous and file-backed pages) beside each group, for
// several memory budgets; after dropping the page cache where the kernel
// allows it; then the CLI with no server, and a table "goal / measured /
// met?".
//
//	go run ./bench/engine -bin BIN -data DATA -corpus CORPUS_DIR
//
// bench/run-engine.sh generates the corpus, builds and runs it. DATA is
// imported from CORPUS_DIR first when it holds no store. Nothing here is a
// test: figures vary with the machine and what else runs on it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

// config is the command line.
type config struct {
	bin, data, corpus, out    string
	budgets                   []int // MB; 0: serve's default flags
	serveFlags, fallbackFlags string
	n, countN, rgN, cliN      int
	slowN                     int
	needles                   string
	early, steadyMax          time.Duration
	warmLog                   string
	liveBin, apiloadBin       string
	apiloadDuration           time.Duration
	seed                      uint64
	skipCold, skipCLI         bool
}

func parseFlags() config {
	var c config
	var budgets string
	flag.StringVar(&c.bin, "bin", "", "the pi-history binary to measure (required)")
	flag.StringVar(&c.data, "data", "", "data directory; imported from -corpus first when it holds no store (required)")
	flag.StringVar(&c.corpus, "corpus", "", "the corpus's directory of JSONL journals, for import and ripgrep (required)")
	flag.StringVar(&c.out, "out", "", "directory for the servers' logs (default: beside -data)")
	flag.StringVar(&budgets, "budgets", "default,128,256,512,2048", "memory budgets in MB, comma-separated; 'default' runs serve with no budget flag (the goals are judged there)")
	flag.StringVar(&c.serveFlags, "serve-flags", "", "serve's flags for a budget: {MB} is the budget, {HALF} half of it (default: '--memory-mb {MB}' when serve knows it, else -fallback-flags)")
	flag.StringVar(&c.fallbackFlags, "fallback-flags", "--cache-mb {HALF} --sketch-mb {HALF}", "the flags used when serve refuses -serve-flags as unknown")
	flag.IntVar(&c.n, "n", 200, "needles per first-page and branch group")
	flag.IntVar(&c.countN, "count-n", 50, "20-character needles counted")
	flag.IntVar(&c.rgN, "rg", 200, "needles per group also run through ripgrep, spread evenly through the group (the ratio is the median over them: fewer is quicker and rougher)")
	flag.StringVar(&c.needles, "needles", "", "JSON file of the needle sets: written when missing, else read instead of the sampled ones (to run two builds or data directories on the same needles)")
	flag.IntVar(&c.slowN, "slow", 0, "print each group's N slowest queries with the server's stats (candidates, entries read, bytes compared, plan)")
	flag.IntVar(&c.cliN, "cli-n", 20, "needles for the one-shot CLI (and ripgrep beside it)")
	flag.DurationVar(&c.early, "early", time.Second, "when after serve starts the first searches are sent")
	flag.DurationVar(&c.steadyMax, "steady-max", 5*time.Minute, "longest wait for the warm-up to end")
	flag.StringVar(&c.warmLog, "warm-log", "preloaded for search|searches will load from disk", "regexp of the log line that ends the warm-up (the server's CPU going idle ends it too)")
	flag.StringVar(&c.liveBin, "live", "", "bench/live binary: append → searchable latency (skipped when empty)")
	flag.StringVar(&c.apiloadBin, "apiload", "", "bench/apiload binary: searches/s at concurrency 16 with a writer (skipped when empty)")
	flag.DurationVar(&c.apiloadDuration, "apiload-duration", 10*time.Second, "how long bench/apiload searches")
	flag.Uint64Var(&c.seed, "seed", 1, "sampling seed")
	flag.BoolVar(&c.skipCold, "no-cold", false, "do not try to drop the page cache")
	flag.BoolVar(&c.skipCLI, "no-cli", false, "do not time the one-shot CLI")
	flag.Parse()
	if c.bin == "" || c.data == "" || c.corpus == "" {
		fmt.Fprintln(os.Stderr, "usage: engine -bin PI_HISTORY -data DATA -corpus CORPUS_DIR [flags] (see -h)")
		os.Exit(2)
	}
	for _, b := range strings.Split(budgets, ",") {
		b = strings.TrimSpace(b)
		if b == "default" {
			c.budgets = append(c.budgets, 0)
			continue
		}
		mb, err := strconv.Atoi(b)
		if err != nil || mb < 16 {
			fmt.Fprintf(os.Stderr, "engine: -budgets: %q is neither 'default' nor a number of MB (16 or more)\n", b)
			os.Exit(2)
		}
		c.budgets = append(c.budgets, mb)
	}
	if c.out == "" {
		c.out = filepath.Dir(filepath.Clean(c.data))
	}
	return c
}

func main() {
	c := parseFlags()
	r, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
	fmt.Printf("\ngoals of issue 46, item 1 (%s):\n", r.judgedAt())
	benchkit.WriteGoals(os.Stdout, goals(c, r))
}

// report is everything a run measured.
type report struct {
	jsonl     int64
	dataBytes int64
	imp       *imported // nil: the data directory existed
	knob      bool      // serve knows --memory-mb
	flagsUsed map[int]string
	early     map[int]phase
	steady    map[int]phase
	peakAnon  map[int]int64
	peakRSS   map[int]int64
	steadyHow map[int]string
	cold      phase // nil: not measured
	coldWhy   string
	cli       *oneShot
	live      []float64 // p50, p99 ms
	apiload   []float64 // searches/s, p99 ms
	base      *baseline
}

// judged is the budget whose figures the goals are judged on: serve's
// defaults when they ran, else the first budget.
func (r *report) judged() int {
	if _, ok := r.steady[0]; ok {
		return 0
	}
	for b := range r.steady {
		return b
	}
	return 0
}

func (r *report) judgedAt() string {
	if b := r.judged(); b != 0 {
		return fmt.Sprintf("judged at a budget of %d MB", b)
	}
	return "judged with serve's default flags"
}

// One piece (61 lines): the run in the order it measures (import when
// needed, sizes, sampling, ripgrep, each budget's server, the cold page
// cache, the CLI, the other benches); each step prints as it goes.
func run(c config) (*report, error) {
	r := &report{flagsUsed: map[int]string{}, early: map[int]phase{}, steady: map[int]phase{},
		peakAnon: map[int]int64{}, peakRSS: map[int]int64{}, steadyHow: map[int]string{}}
	r.jsonl = treeBytes(c.corpus, ".jsonl")
	if r.jsonl == 0 {
		return nil, fmt.Errorf("no .jsonl files under %s", c.corpus)
	}
	if _, err := os.Stat(filepath.Join(c.data, "store")); errors.Is(err, os.ErrNotExist) {
		im, err := importCorpus(c.bin, c.corpus, c.data)
		if err != nil {
			return nil, err
		}
		r.imp = &im
		fmt.Printf("import: %d entries, %.0f MB of JSONL in %.1f s: %.1f MB/s; peak RSS %s MB (anonymous, sampled: %s MB)\n",
			im.entries, float64(r.jsonl)/1e6, im.seconds, float64(r.jsonl)/1e6/im.seconds, benchkit.MB(im.peakRSS), benchkit.MB(im.peakAnon))
	} else {
		fmt.Printf("import: not measured (%s already holds a store)\n", c.data)
	}
	r.dataBytes = treeBytes(c.data, "")
	fmt.Printf("size: the data directory holds %.0f MB (store %.0f MB, index %.0f MB, the rest %.0f MB) = %.2fx the %.0f MB of JSONL\n",
		float64(r.dataBytes)/1e6, float64(treeBytes(filepath.Join(c.data, "store"), ""))/1e6, float64(treeBytes(filepath.Join(c.data, "index"), ""))/1e6,
		float64(r.dataBytes-treeBytes(filepath.Join(c.data, "store"), "")-treeBytes(filepath.Join(c.data, "index"), ""))/1e6,
		float64(r.dataBytes)/float64(r.jsonl), float64(r.jsonl)/1e6)
	sets, facts, err := sampleNeedles(c.data, 2, c.n, c.countN, c.seed)
	if err != nil {
		return nil, err
	}
	if sets, err = keepNeedles(c.needles, sets); err != nil {
		return nil, err
	}
	fmt.Printf("corpus: %d sessions, %d entries; needles: two sets (one sent early, one at steady state) of %d first pages of 3+ characters\n"+
		"(a quarter each 3-5, 6-12, 13-40 and near-misses), %d of 1-2 characters, %d in branch scope, %d counts of 20 characters\n",
		facts.sessions, facts.entries, len(sets[0][firstPage.name]), len(sets[0][shortPage.name]), len(sets[0][branch.name]), len(sets[0][counts.name]))
	r.base = measureBaseline(c.corpus, sets[1], c.rgN)
	r.base.print()
	r.knob = knowsFlag(c.bin, "memory-mb")
	tmpl := c.serveFlags
	if tmpl == "" {
		tmpl = c.fallbackFlags
		if r.knob {
			tmpl = "--memory-mb {MB}"
		}
	}
	for _, mb := range c.budgets {
		var err error
		if tmpl, err = r.budget(c, mb, tmpl, sets); err != nil {
			return nil, err
		}
	}
	r.measureCold(c, tmpl, sets[1])
	if !c.skipCLI {
		nds := benchkit.Choose(sets[1][firstPage.name], benchkit.Spread(len(sets[1][firstPage.name]), c.cliN))
		var ns []string
		for _, q := range nds {
			ns = append(ns, q.needle)
		}
		o := measureOneShot(c.bin, c.data, c.corpus, ns)
		r.cli = &o
		o.print(c.slowN)
	}
	r.others(c)
	printCurve(c, r)
	return r, nil
}
