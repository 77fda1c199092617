package benchkit

import (
	"fmt"
	"io"
	"strings"
)

// Verdict says whether a goal was met.
type Verdict int

const (
	NotMeasured Verdict = iota // this run could not measure it
	Met
	Missed
)

func (v Verdict) String() string {
	switch v {
	case Met:
		return "yes"
	case Missed:
		return "NO"
	}
	return "-"
}

// Goal is one line of a "goal / measured / met?" table.
type Goal struct {
	Goal     string
	Measured string
	Met      Verdict
}

// AtMost returns a goal met when got is at most limit; got < 0 means not
// measured (why says why, as the measured column).
func AtMost(goal string, got, limit float64, format, why string) Goal {
	if got < 0 {
		return Goal{goal, why, NotMeasured}
	}
	g := Goal{goal, fmt.Sprintf(format, got), Missed}
	if got <= limit {
		g.Met = Met
	}
	return g
}

// AtLeast is AtMost for a floor.
func AtLeast(goal string, got, floor float64, format, why string) Goal {
	if got < 0 {
		return Goal{goal, why, NotMeasured}
	}
	g := Goal{goal, fmt.Sprintf(format, got), Missed}
	if got >= floor {
		g.Met = Met
	}
	return g
}

// WriteGoals prints goals as a table with aligned columns, and a last line
// counting those met, missed and not measured.
func WriteGoals(w io.Writer, goals []Goal) {
	gw, mw := len("goal"), len("measured")
	for _, g := range goals {
		gw, mw = max(gw, len([]rune(g.Goal))), max(mw, len([]rune(g.Measured)))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", max(n-len([]rune(s)), 0)) }
	fmt.Fprintf(w, "%s | %s | met?\n", pad("goal", gw), pad("measured", mw))
	fmt.Fprintf(w, "%s-|-%s-|-----\n", strings.Repeat("-", gw), strings.Repeat("-", mw))
	var n [3]int
	for _, g := range goals {
		fmt.Fprintf(w, "%s | %s | %s\n", pad(g.Goal, gw), pad(g.Measured, mw), g.Met)
		n[g.Met]++
	}
	fmt.Fprintf(w, "%d goals met, %d missed, %d not measured\n", n[Met], n[Missed], n[NotMeasured])
}
