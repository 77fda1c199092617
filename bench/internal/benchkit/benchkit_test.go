package benchkit

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for a measured command: with
// BENCHKIT_CHILD_MB set it holds that many MB of touched memory for a
// moment and exits.
func TestMain(m *testing.M) {
	if v := os.Getenv("BENCHKIT_CHILD_MB"); v != "" {
		mb, _ := strconv.Atoi(v)
		b := make([]byte, mb<<20)
		for i := range b {
			b[i] = byte(i)
		}
		time.Sleep(300 * time.Millisecond)
		os.Stdout.Write(b[:1])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunSampledSeesTheChildsOwnMemory: a child holding 96 MB is seen
// holding at least that (anonymous, and its own peak RSS), and a small
// child's peak is its own, well under its large parent's (which the peak
// wait4 reports would carry over).
func TestRunSampledSeesTheChildsOwnMemory(t *testing.T) {
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	parent, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	run := func(mb int) Memory {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "BENCHKIT_CHILD_MB="+strconv.Itoa(mb))
		m, err := RunSampled(cmd, 2*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := run(96); m.Anon < 96<<20 || m.Peak < m.Anon {
		t.Errorf("a child holding 96 MB: anonymous %d MB, peak RSS %d MB; want at least 96 MB, the peak at least the anonymous", m.Anon>>20, m.Peak>>20)
	}
	if m := run(1); m.Peak == 0 || m.Peak > parent.RSS/2 {
		t.Errorf("a child holding 1 MB: peak RSS %d MB beside its parent's %d MB; want its own, well under the parent's", m.Peak>>20, parent.RSS>>20)
	}
	_ = ballast[len(ballast)-1]
}

func TestPctPicksTheElementAtRank(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted on purpose
	}
	for _, c := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []float64{7}, 0.99, 7},
		{"median of odd", []float64{3, 1, 2}, 0.5, 2},
		{"median of even takes the upper", []float64{4, 1, 3, 2}, 0.5, 3},
		{"p99 of 100", hundred, 0.99, 100},
		{"p50 of 100", hundred, 0.5, 51},
		{"worst", []float64{5, 9, 1}, 1, 9},
		{"lowest", []float64{5, 9, 1}, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := append([]float64(nil), c.xs...)
			if got := Pct(c.xs, c.p); got != c.want {
				t.Errorf("Pct(%v, %v) = %v, want %v", c.xs, c.p, got, c.want)
			}
			for i := range before {
				if before[i] != c.xs[i] {
					t.Fatalf("Pct reordered its input: %v", c.xs)
				}
			}
		})
	}
}

func TestSpreadAndRatios(t *testing.T) {
	if got := Spread(10, 3); !equal(got, []int{0, 3, 6}) {
		t.Errorf("Spread(10, 3) = %v", got)
	}
	if got := Spread(2, 5); !equal(got, []int{0, 1}) {
		t.Errorf("Spread(2, 5) = %v, want every index", got)
	}
	got := Ratios([]float64{2, 0, 4}, []float64{200, 3, 40})
	if len(got) != 3 || got[0] != 100 || got[1] != 3000 || got[2] != 10 {
		t.Errorf("Ratios = %v, want [100 3000 10] (ours of 0 counts as a microsecond)", got)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

const status = `Name:	pi-history
Umask:	0022
State:	S (sleeping)
VmPeak:	 5812345 kB
VmHWM:	  412000 kB
VmRSS:	  398100 kB
RssAnon:	  250000 kB
RssFile:	  148000 kB
RssShmem:	     100 kB
Threads:	12
`

func TestParseStatusReadsMemoryByKind(t *testing.T) {
	m, err := ParseStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	want := Memory{RSS: 398100 << 10, Anon: 250000 << 10, File: 148000 << 10, Shmem: 100 << 10, Peak: 412000 << 10}
	if m != want {
		t.Errorf("ParseStatus = %+v, want %+v", m, want)
	}
}

func TestParseStatusRefusesWhatIsNotAProcessStatus(t *testing.T) {
	for name, text := range map[string]string{
		"kernel thread, no VmRSS":   "Name:\tkthreadd\nState:\tS (sleeping)\n",
		"a value that is no number": "VmRSS:\t  lots kB\n",
		"a unit other than kB":      "VmRSS:\t  12 MB\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseStatus(strings.NewReader(text)); err == nil {
				t.Errorf("ParseStatus(%q) gave no error", text)
			}
		})
	}
}

func TestParseCPUTicksCountsUserAndSystem(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (pi (history) x) S 1 4242 4242 0 -1 4194304 500 0 0 0 1234 56 0 0 20 0 12 0 100 0 0"
	got, err := ParseCPUTicks(stat)
	if err != nil || got != 1290 {
		t.Errorf("ParseCPUTicks = %d, %v; want 1290", got, err)
	}
	if _, err := ParseCPUTicks("4242 (x) S 1 2"); err == nil {
		t.Error("a short stat line gave no error")
	}
}

func TestPromValueFindsAnUnlabelledSample(t *testing.T) {
	text := `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes_total{x="1"} 5
go_memstats_heap_inuse_bytes 1.2345678e+08
process_resident_memory_bytes 9.9e+08
`
	if v, ok := PromValue(text, "go_memstats_heap_inuse_bytes"); !ok || v != 123456780 {
		t.Errorf("PromValue = %v, %v; want 123456780", v, ok)
	}
	if _, ok := PromValue(text, "go_memstats_heap_idle_bytes"); ok {
		t.Error("PromValue found a sample that is not there")
	}
}

func TestWriteGoalsJudgesAndCounts(t *testing.T) {
	goals := []Goal{
		AtMost("p50 ≤ 2 ms", 1.5, 2, "%.1f ms", ""),
		AtMost("p99 ≤ 30 ms", 31, 30, "%.0f ms", ""),
		AtLeast("≥ 100x rg", 120, 100, "%.0fx", ""),
		AtLeast("import ≥ 15 MB/s", -1, 15, "%.1f", "not imported here"),
	}
	wantMet := []Verdict{Met, Missed, Met, NotMeasured}
	for i, g := range goals {
		if g.Met != wantMet[i] {
			t.Errorf("goal %q: met %v, want %v", g.Goal, g.Met, wantMet[i])
		}
	}
	var b bytes.Buffer
	WriteGoals(&b, goals)
	out := b.String()
	for _, want := range []string{"p99 ≤ 30 ms      | 31 ms             | NO\n", "not imported here", "2 goals met, 1 missed, 1 not measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	bar := strings.IndexRune(lines[0], '|')
	for _, l := range lines[:len(lines)-1] {
		if i := strings.IndexRune(l, '|'); len([]rune(l[:i])) != len([]rune(lines[0][:bar])) {
			t.Errorf("columns not aligned:\n%s", out)
			break
		}
	}
}
