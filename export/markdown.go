package export

import (
	"bufio"
	"fmt"
	"strings"
)

// mdRenderer writes a Markdown transcript: the session as a title and a
// short list of facts, each context window as a "##" section, each entry as
// a "###" heading with its time and id. Prose (user and assistant text,
// summaries, notebook sections) is written as is, but for what it leaves
// open (see prose); tool arguments, tool
// output and shell output go in fenced code blocks whose fences are longer
// than any backtick run inside them.
type mdRenderer struct {
	w         *bufio.Writer
	seenOther bool
	err       error
}

func (r *mdRenderer) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

func (r *mdRenderer) begin(h *docHead) error {
	r.printf("# %s\n\n", mdEscapeInline(oneLine(h.Title)))
	r.printf("- **Session:** %s\n", mdCode(h.SessionID))
	if h.Cwd != "" {
		r.printf("- **Project:** %s\n", mdCode(h.Cwd))
	}
	if h.Created != "" {
		r.printf("- **Started:** %s\n", h.Created)
	}
	if h.Parent != "" {
		r.printf("- **Forked from:** %s\n", mdCode(h.Parent))
	}
	r.printf("- **Exported:** %s", oneLine(h.Scope))
	if h.Entries > 0 {
		r.printf("; %d entries in %d window(s)", h.Entries, h.Windows)
	}
	r.printf("\n")
	return r.err
}

func (r *mdRenderer) window(w *windowHead) error {
	if w.Branch != "" && w.First {
		if !r.seenOther {
			r.printf("\n---\n\n*The sections below hold the entries of the other branches, which are not on the branch above.*\n")
			r.seenOther = true
		}
		if w.BranchAt != "" {
			r.printf("\n## Branch ending at %s (branches off after %s)\n", mdCode(w.Branch), mdCode(w.BranchAt))
		} else {
			r.printf("\n## Branch ending at %s (a separate root)\n", mdCode(w.Branch))
		}
	}
	title := fmt.Sprintf("Window %d", w.N)
	if w.Branch != "" {
		title += " of this branch"
	}
	r.printf("\n## %s · %s", title, w.Label())
	if w.Started != "" {
		r.printf(" · %s", w.Started)
	}
	r.printf("\n")
	return r.err
}

func (r *mdRenderer) item(it *item) error {
	if it.Meta {
		r.printf("\n*%s*", mdEscapeInline(oneLine(it.Title)))
		if it.Sub != "" {
			r.printf(" %s", mdCode(it.Sub))
		}
		r.printf(" · %s · %s\n", it.Time, mdCode(it.ID))
		return r.err
	}
	r.printf("\n### %s", mdEscapeInline(it.Title))
	if it.Sub != "" {
		r.printf(" · %s", mdCode(it.Sub))
	}
	r.printf(" · %s · %s\n", it.Time, mdCode(it.ID))
	for _, p := range it.Parts {
		r.part(p, "")
	}
	return r.err
}

func (r *mdRenderer) part(p part, indent string) {
	switch p.Kind {
	case "text":
		r.printf("\n%s\n", prose(p.Text))
	case "thinking":
		r.printf("\n%s\n", quote("*Thinking:* "+strings.TrimRight(p.Text, "\n")))
	case "summary":
		r.printf("\n%s\n", quote(strings.TrimRight(p.Text, "\n")))
	case "note":
		r.printf("\n*%s*\n", mdEscapeInline(oneLine(p.Text)))
	case "image":
		r.printf("\n*[image: %s]*\n", mdEscapeInline(oneLine(p.Text)))
	case "section":
		r.printf("\n#### %s\n\n%s\n", oneLine(p.Label), prose(p.Text))
	case "code":
		label := ""
		switch {
		case p.Error:
			label = "Error"
		case p.Label != "":
			label = strings.ToUpper(p.Label[:1]) + p.Label[1:]
		}
		if label != "" {
			r.printf("\n%s:\n", label)
		}
		r.printf("\n%s\n", fence(p.Text, ""))
	case "call":
		r.printf("\n**Tool call** %s", mdCode(p.Label))
		if p.CallID != "" {
			r.printf(" (%s)", mdCode(p.CallID))
		}
		r.printf("\n\n%s\n", fence(p.Args, "json"))
		switch {
		case !p.Answered:
			r.printf("\n*No result on this branch.*\n")
		case p.Error:
			r.printf("\n**Result (error):**\n")
		default:
			r.printf("\n**Result:**\n")
		}
		for _, rp := range p.Result {
			if rp.Kind == "code" {
				rp.Label, rp.Error = "", false
			}
			r.part(rp, indent)
		}
	}
}

func (r *mdRenderer) end() error {
	if r.err == nil {
		r.printf("\n")
	}
	return r.err
}

// fence wraps text in a code fence longer than any backtick run in it.
func fence(text, lang string) string {
	f := backticks(text, 3)
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f
}

// mdCode writes s as inline code, with a delimiter longer than any backtick
// run inside and spaces where s starts or ends with a backtick.
func mdCode(s string) string {
	s = oneLine(s)
	d := backticks(s, 1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		return d + " " + s + " " + d
	}
	return d + s + d
}

// backticks is a delimiter of at least least backticks, longer than any
// backtick run in s.
func backticks(s string, least int) string {
	n, run := least, 0
	for _, c := range s {
		if c == '`' {
			run++
			if run >= n {
				n = run + 1
			}
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", n)
}

// mdEscapeInline escapes the characters that would start emphasis, code,
// links or HTML in a short line of text.
func mdEscapeInline(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '#', '|':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// prose returns text, written as Markdown, so that nothing it opens runs
// on into the rest of the transcript: an answer cut off inside a code block
// ("```go\nfunc main() {", as aborted replies end) would turn every later
// entry into code, and an unclosed "<!--" would hide them. A fence left open
// is closed after the text; a line that would open an HTML block that the
// text never closes gets its "<" escaped (shown as is). Trailing newlines
// go.
func prose(text string) string {
	text = strings.TrimRight(text, "\n")
	lines := strings.Split(text, "\n")
	var open string // the fence of an open code block, with its indent
	at := 0         // where line i starts in text
	lower := asciiLower(text)
	last := map[string]int{} // where each block's end last occurs in text
	for i, l := range lines {
		start := at
		at += len(l) + 1
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) > 3 {
			continue // indented code, or inside a block
		}
		if open != "" {
			if f := strings.TrimLeft(open, " "); strings.HasPrefix(t, f) && strings.Trim(t, f[:1]+" \t") == "" {
				open = ""
			}
			continue
		}
		if f := fenceOf(t); f != "" {
			// Closed with the same indent: a fence inside a list item
			// ("1. Run:\n   ```sh") closed at column 0 would end the
			// item and open a new block instead.
			open = l[:len(l)-len(t)] + f
			continue
		}
		if end, ok := htmlBlockEnd(t); ok {
			if _, ok := last[end]; !ok {
				last[end] = strings.LastIndex(lower, end)
			}
			if last[end] < start {
				lines[i] = l[:len(l)-len(t)] + "\\" + t
			}
		}
	}
	out := strings.Join(lines, "\n")
	if open != "" {
		out += "\n" + open
	}
	return out
}

// fenceOf is the fence a line opens a code block with (three or more
// backticks or tildes), or "".
func fenceOf(t string) string {
	for _, c := range "`~" {
		n := len(t) - len(strings.TrimLeft(t, string(c)))
		if n >= 3 {
			if c == '`' && strings.Contains(t[n:], "`") {
				return "" // a backtick fence's info string holds none
			}
			return t[:n]
		}
	}
	return ""
}

// htmlBlockEnd reports whether a line opens one of CommonMark's HTML blocks
// that run until a given text (a comment until "-->", a <script> until
// "</script>", ...), and that text, in lower case.
func htmlBlockEnd(t string) (string, bool) {
	lower := asciiLower(t)
	for _, tag := range []string{"script", "pre", "style", "textarea"} {
		if strings.HasPrefix(lower, "<"+tag) && (len(lower) == len(tag)+1 || strings.ContainsRune(" \t>", rune(lower[len(tag)+1]))) {
			return "</" + tag + ">", true
		}
	}
	switch {
	case strings.HasPrefix(t, "<!--"):
		return "-->", true
	case strings.HasPrefix(t, "<?"):
		return "?>", true
	case strings.HasPrefix(t, "<![CDATA["):
		return "]]>", true
	case len(t) > 2 && strings.HasPrefix(t, "<!") && t[2] >= 'A' && t[2] <= 'Z', len(t) > 2 && strings.HasPrefix(t, "<!") && t[2] >= 'a' && t[2] <= 'z':
		return ">", true
	}
	return "", false
}

// asciiLower lowers A-Z only, so that offsets stay those of s (HTML's tag
// names are ASCII; strings.ToLower may change a string's length).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func quote(s string) string {
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}

// oneLine folds newlines so a value fits a heading or list item.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
