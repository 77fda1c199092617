package journal

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// TitleRunes is the most characters TitleLine keeps by default.
const TitleRunes = 72

// TitleLine makes a title of a message: its first line holding more than
// spaces, runs of white space (and control characters) made one space, cut
// to at most max characters (the last an ellipsis when cut). Sessions
// without a name are called by their first user message's TitleLine.
func TitleLine(text string, max int) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.Join(strings.FieldsFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) <= max {
			return line
		}
		n := 0
		for i := range line {
			if n == max-1 {
				return strings.TrimRight(line[:i], " ") + "…"
			}
			n++
		}
	}
	return ""
}
