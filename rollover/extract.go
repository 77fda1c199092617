package rollover

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// This file turns one earlier user message into one bounded index line
// (docs/spec-notes.md, "The rollover summary", step 3). The rules are mechanical and run in time linear in the message:
// every pass is a single scan, and the regular expressions are RE2.
//
//   - <t3_context>…</t3_context> blocks and [Attachment saved at …] are removed.
//   - [File: name; ref=…] becomes [file: name]; several become
//     [file: first +N files], the name clipped.
//   - [Assistant quote](…) becomes [quote].
//   - Image blocks become [image], repeats counted: [image ×3].
//   - Fenced code (backtick or tilde fences, closed by a fence of the same
//     character at least as long; a backtick line whose info string holds a
//     backtick is inline code, not a fence) becomes [code N lines].
//   - Pasted log lines become [log N lines], but only when at least two lines
//     of the message are log-like, so one prose line that looks like a
//     record keeps its words.
//   - Host-sent messages (a context handoff, a delegated task's terminal
//     report) become a kind tag alone.
//
// The line is the tags that precede the first remaining prose line, that
// line, then the tags after it, cut to IndexLineMaxChars: so a log paste
// with the question on its last line still yields the question.

// IndexLineMaxChars bounds the text of one index line; IndexLineCutChars is
// what every line is cut to when the index is over its budget.
const (
	IndexLineMaxChars = 80
	IndexLineCutChars = 40
	fileNameMaxChars  = 40
)

// Host-message kind tags.
const (
	TagHandoff   = "[context handoff]"
	TagDelegated = "[delegated task]"
)

// ExtractIndexLine returns the index text of a user message whose text
// blocks (joined by newlines) are text and which carried images image
// blocks.
func ExtractIndexLine(text string, images int) string {
	if tag := hostKind(text); tag != "" {
		return tag
	}
	text = removeBlocks(text, "<t3_context>", "</t3_context>", false)
	text = removeBlocks(text, "[Attachment saved at ", "]", true)
	text, fileTag := replaceFiles(text)
	text = strings.ReplaceAll(text, "\r\n", "\n")

	var items []item
	if images > 0 {
		items = append(items, item{tag: true, text: imageTag(images)})
	}
	lines := markLogs(replaceFences(strings.Split(text, "\n")))
	for _, l := range lines {
		if l.tag != "" {
			items = append(items, item{tag: true, text: l.tag})
			continue
		}
		t := collapseSpace(quoteRE.ReplaceAllLiteralString(l.text, TagQuote))
		if t == "" {
			continue
		}
		// A line holding nothing but tags is a tag, not the prose line.
		rest := strings.ReplaceAll(t, TagQuote, "")
		if fileTag != "" {
			rest = strings.ReplaceAll(rest, fileTag, "")
		}
		items = append(items, item{tag: strings.TrimSpace(rest) == "", text: t})
	}
	var parts []string
	prose := false
	for _, it := range items {
		if !it.tag {
			if prose {
				continue
			}
			prose = true
		}
		parts = append(parts, it.text)
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return clip(strings.Join(parts, " "), IndexLineMaxChars)
}

type item struct {
	tag  bool
	text string
}

// line is one line of a message after fence and log detection: either text
// or, for a run of code or log lines, the tag that replaces the run.
type line struct {
	text string
	tag  string
}

var (
	handoffRE   = regexp.MustCompile(`^Context handoff \(`)
	delegatedRE = regexp.MustCompile(`^Delegated task [^\n]*reached a terminal state`)
	quoteRE     = regexp.MustCompile(`\[Assistant quote\]\([^)\n]*\)`)
	fileRE      = regexp.MustCompile(`\[File: ([^;\]\n]*)(?:;[^\]\n]*)?\]`)
)

// TagQuote replaces an [Assistant quote](…) link.
const TagQuote = "[quote]"

func hostKind(text string) string {
	t := strings.TrimLeft(text, " \t\r\n")
	switch {
	case handoffRE.MatchString(t):
		return TagHandoff
	case delegatedRE.MatchString(t):
		return TagDelegated
	}
	return ""
}

// removeBlocks deletes every span from open to the next close. An unclosed
// span runs to the end of the text, or (lineBound) to the end of its line.
func removeBlocks(text, open, close string, lineBound bool) string {
	if !strings.Contains(text, open) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, open)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		rest := text[i+len(open):]
		j := strings.Index(rest, close)
		if lineBound {
			if nl := strings.IndexByte(rest, '\n'); nl >= 0 && (j < 0 || nl < j) {
				text = rest[nl:]
				continue
			}
		}
		if j < 0 {
			return b.String()
		}
		text = rest[j+len(close):]
	}
}

// replaceFiles replaces the first [File: …] reference with its tag and
// removes the others, whose count the tag carries. It returns the tag too.
func replaceFiles(text string) (string, string) {
	ms := fileRE.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return text, ""
	}
	name := clip(strings.TrimSpace(ms[0][1]), fileNameMaxChars)
	tag := "[file: " + name + "]"
	if len(ms) > 1 {
		tag = fmt.Sprintf("[file: %s +%d files]", name, len(ms)-1)
	}
	first := true
	return fileRE.ReplaceAllStringFunc(text, func(string) string {
		if first {
			first = false
			return tag
		}
		return ""
	}), tag
}

func imageTag(n int) string {
	if n == 1 {
		return "[image]"
	}
	return fmt.Sprintf("[image ×%d]", n)
}

func countTag(kind string, n int) string {
	if n == 1 {
		return "[" + kind + " 1 line]"
	}
	return fmt.Sprintf("[%s %d lines]", kind, n)
}

// fence reports whether l opens (or closes) a fence: up to three spaces of
// indent, then three or more backticks or tildes. It returns the fence
// character, its length and the info string.
func fence(l string) (byte, int, string) {
	i := 0
	for i < len(l) && i < 3 && l[i] == ' ' {
		i++
	}
	if i >= len(l) || (l[i] != '`' && l[i] != '~') {
		return 0, 0, ""
	}
	c := l[i]
	j := i
	for j < len(l) && l[j] == c {
		j++
	}
	if j-i < 3 {
		return 0, 0, ""
	}
	return c, j - i, l[j:]
}

// replaceFences replaces each fenced block with a [code N lines] line, N
// being the lines between the fences. An unclosed fence runs to the end.
func replaceFences(raw []string) []line {
	out := make([]line, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c, n, info := fence(raw[i])
		if c == 0 || (c == '`' && strings.IndexByte(info, '`') >= 0) {
			out = append(out, line{text: raw[i]})
			continue
		}
		j := i + 1
		for ; j < len(raw); j++ {
			c2, n2, rest := fence(raw[j])
			if c2 == c && n2 >= n && strings.TrimSpace(rest) == "" {
				break
			}
		}
		out = append(out, line{tag: countTag("code", j-i-1)})
		i = j // the closing fence (or len(raw) when unclosed)
	}
	return out
}

var (
	isoStartRE   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}`)
	isoAnyRE     = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`)
	subSecondRE  = regexp.MustCompile(`^\d{1,2}:\d{2}:\d{2}[.,]\d+`)
	bracketRE    = regexp.MustCompile(`^\[(?:\d{4}-\d{2}-\d{2}[^\]]{0,40}|\d{1,2}:\d{2}:\d{2}[^\]]{0,40}|(?i:trace|debug|info|notice|warn|warning|error|err|fatal|critical|crit|panic))\]`)
	stackFrameRE = regexp.MustCompile(`[\w.\-/\\]+\.\w+:\d+(?::\d+)?\)?(?: \+0x[0-9a-fA-F]+)?$`)
	scalarRE     = regexp.MustCompile(`^"(?:[^"\\]|\\.)*"(?:\s*:.*)?,?$`)
)

// logLike reports whether one line looks like pasted log output: a JSON
// record, a structural JSON line or quoted scalar, a bracketed timestamp or
// level, an ISO or sub-second timestamp, or an indented stack frame ending
// in a file:line position.
func logLike(l string) bool {
	t := strings.TrimSpace(l)
	if t == "" {
		return false
	}
	switch {
	case t[0] == '{' && (strings.HasSuffix(t, "}") || strings.HasSuffix(t, "},")):
		return true
	case strings.Trim(t, "{}[],: ") == "":
		return true
	case t[0] == '"' && scalarRE.MatchString(t):
		return true
	case t[0] == '[' && bracketRE.MatchString(t):
		return true
	case isoStartRE.MatchString(t) || subSecondRE.MatchString(t) || isoAnyRE.MatchString(t):
		return true
	case (l[0] == ' ' || l[0] == '\t') && stackFrameRE.MatchString(t):
		return true
	}
	return false
}

// markLogs replaces runs of log-like lines with [log N lines] when at least
// two lines of the message are log-like.
func markLogs(ls []line) []line {
	like := make([]bool, len(ls))
	count := 0
	for i, l := range ls {
		if l.tag == "" && logLike(l.text) {
			like[i] = true
			count++
		}
	}
	if count < 2 {
		return ls
	}
	out := ls[:0:0]
	for i := 0; i < len(ls); i++ {
		if !like[i] {
			out = append(out, ls[i])
			continue
		}
		j := i
		for j < len(ls) && like[j] {
			j++
		}
		out = append(out, line{tag: countTag("log", j-i)})
		i = j - 1
	}
	return out
}

// collapseSpace trims s and folds each run of white space to one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip cuts s to at most n characters (code points), ending with "…" when
// something was cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}
