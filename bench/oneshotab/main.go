// Command oneshotab times one-shot `pi-history search` runs of two or more
// builds over the same data directory and needles, the builds alternating
// within each round, and samples each run's memory from /proc
// (benchkit.RunSampled): per needle the median wall time of each build, and
// per build the median of those medians, the largest anonymous memory and
// the largest peak RSS any of its runs reached.
//
//	go run ./bench/oneshotab -bins A,B -data DIR [-rounds 7] [-all] NEEDLE...
//
// Without -all each run asks a first page (50 hits); with it, every hit.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pi-history/pi-history/bench/internal/benchkit"
)

func main() {
	bins := flag.String("bins", "", "comma-separated pi-history binaries to compare (required)")
	data := flag.String("data", "", "data directory (required)")
	rounds := flag.Int("rounds", 7, "rounds; each runs every build once per needle, alternating")
	all := flag.Bool("all", false, "ask every hit (--all) instead of a first page of 50")
	flag.Parse()
	builds := strings.Split(*bins, ",")
	needles := flag.Args()
	if *bins == "" || *data == "" || len(needles) == 0 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: oneshotab -bins A,B -data DIR [-rounds N] [-all] NEEDLE...")
		os.Exit(2)
	}
	args := []string{"--limit", "50"}
	if *all {
		args = []string{"--all"}
	}
	type cell struct {
		ms   []float64
		anon int64
		peak int64
	}
	cells := make([][]cell, len(needles))
	for i := range cells {
		cells[i] = make([]cell, len(builds))
	}
	for range *rounds {
		for i, nd := range needles {
			for b, bin := range builds {
				cmd := exec.Command(bin, append(append([]string{"search", "--data", *data, "--color", "never"}, args...), "--", nd)...)
				cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
				t0 := time.Now()
				m, err := benchkit.RunSampled(cmd, 2*time.Millisecond)
				el := float64(time.Since(t0).Microseconds()) / 1000
				if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) { // 1: nothing matched
					fmt.Fprintf(os.Stderr, "oneshotab: %s %q: %v\n", bin, nd, err)
					os.Exit(1)
				}
				c := &cells[i][b]
				c.ms = append(c.ms, el)
				c.anon, c.peak = max(c.anon, m.Anon), max(c.peak, m.Peak)
			}
		}
	}
	fmt.Printf("%d rounds, %s, medians in ms (each run's /proc sampled every 2 ms):\n", *rounds, strings.Join(args, " "))
	meds := make([][]float64, len(builds))
	for i, nd := range needles {
		line := fmt.Sprintf("  %-40q", nd)
		for b := range builds {
			med := benchkit.Pct(cells[i][b].ms, 0.5)
			meds[b] = append(meds[b], med)
			line += fmt.Sprintf(" %9.1f", med)
		}
		fmt.Println(line)
	}
	for b, bin := range builds {
		var anon, peak int64
		for i := range needles {
			anon, peak = max(anon, cells[i][b].anon), max(peak, cells[i][b].peak)
		}
		fmt.Printf("  %s: median of the needles' medians %.1f ms, sum %.1f ms; anonymous at most %.0f MB, peak RSS at most %.0f MB\n",
			bin, benchkit.Pct(meds[b], 0.5), sum(meds[b]), float64(anon)/(1<<20), float64(peak)/(1<<20))
	}
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
