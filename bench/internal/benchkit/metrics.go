package benchkit

import (
	"bufio"
	"strconv"
	"strings"
)

// PromValue returns the value of the sample named name (with no labels) in
// a Prometheus text exposition, and whether it was there.
func PromValue(text, name string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || !strings.HasPrefix(rest, " ") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		return v, true
	}
	return 0, false
}
