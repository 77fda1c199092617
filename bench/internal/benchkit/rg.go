package benchkit

import (
	"bufio"
	"io"
	"os/exec"
	"time"
)

// HaveRg reports whether ripgrep is on PATH.
func HaveRg() bool {
	_, err := exec.LookPath("rg")
	return err == nil
}

// ms is the time since t0 in milliseconds.
func ms(t0 time.Time) float64 { return float64(time.Since(t0).Microseconds()) / 1000 }

// RgTimes runs ripgrep over dir for each needle and returns its times in
// ms (nil without ripgrep): with first > 0, until it has printed that many
// matching lines, in whatever order its parallel walk finds them (the
// cheapest "first page" it can give); with 0, counting every match
// (rg -F -c, which reads every byte).
func RgTimes(dir string, needles []string, first int) []float64 {
	if !HaveRg() {
		return nil
	}
	var ts []float64
	for _, nd := range needles {
		t0 := time.Now()
		if first > 0 {
			firstLines(exec.Command("rg", "-F", "--no-filename", "--", nd, dir), first)
		} else {
			exec.Command("rg", "-F", "-c", "--", nd, dir).Run()
		}
		ts = append(ts, ms(t0))
	}
	return ts
}

// RgAll runs ripgrep over dir for each needle printing every matching
// line (into nothing) and returns its times in ms: what a one-shot search
// printing every hit is measured against.
func RgAll(dir string, needles []string) []float64 {
	if !HaveRg() {
		return nil
	}
	var ts []float64
	for _, nd := range needles {
		t0 := time.Now()
		cmd := exec.Command("rg", "-F", "--no-filename", "--", nd, dir)
		cmd.Stdout = io.Discard
		cmd.Run()
		ts = append(ts, ms(t0))
	}
	return ts
}

// RgInOrder runs ripgrep so that it reaches the answer of a first page,
// oldest first: the first matching lines in the order the store holds the
// entries, not the first its parallel walk happens to print. For needle
// i it searches files(i) (in the store's order) one at a time (-j1) and
// stops after first lines. ripgrep matches the raw JSON line, so a needle
// such as "type" matches lines that search does not; that only lets it
// stop sooner.
func RgInOrder(files func(i int) []string, needles []string, first int) []float64 {
	if !HaveRg() {
		return nil
	}
	var ts []float64
	for i, nd := range needles {
		fs := files(i)
		if len(fs) == 0 {
			return nil
		}
		t0 := time.Now()
		firstLines(exec.Command("rg", append([]string{"-j1", "-F", "--no-filename", "--", nd}, fs...)...), first)
		ts = append(ts, ms(t0))
	}
	return ts
}

// firstLines runs cmd until it has printed n lines (or ended), then kills it.
func firstLines(cmd *exec.Cmd, n int) {
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 256<<20)
	for i := 0; i < n && sc.Scan(); i++ {
	}
	cmd.Process.Kill()
	cmd.Wait()
}
