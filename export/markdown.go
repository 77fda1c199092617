package export

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// mdRenderer writes a Markdown transcript: the session as a title and a
// short list of facts, each context window as a "##" section, each entry as
// a "###" heading with its time and id. Prose (user and assistant text,
// summaries, notebook sections) is written as is when it keeps to itself,
// else repaired or shown verbatim (see prose); tool arguments, tool output
// and shell output go in fenced code blocks whose fences are longer than
// any backtick run inside them.
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
		r.printf("\n%s\n", quote("*Thinking:*", p.Text))
	case "summary":
		r.printf("\n%s\n", quote("", p.Text))
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
		took := ""
		if p.Took != "" {
			took = ", " + p.Took
		}
		switch {
		case !p.Answered:
			r.printf("\n*No result on this branch.*\n")
		case p.Error:
			r.printf("\n**Result (error%s):**\n", took)
		case took != "":
			r.printf("\n**Result (%s):**\n", took[2:])
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

// prose returns text, written as Markdown, so that nothing in it reaches
// past it: an answer cut off inside a code block ("```go\nfunc main() {",
// as aborted replies end) would turn every later entry into code, an
// unclosed "<!--" would hide them, and a link reference definition
// ("[foo]: http://...") would change the links of every other entry.
// Line endings become "\n" (see lf) and trailing newlines go. Then the
// first of these that a CommonMark parser finds safe (see mdSafe) is
// written: the text as it is; the text repaired (see repairProse); the text
// verbatim in a code block, which is always safe.
func prose(text string) string {
	text = strings.TrimRight(lf(text), "\n")
	if mdSafe(text) {
		return text
	}
	if fixed := repairProse(text); fixed != text && mdSafe(fixed) {
		return fixed
	}
	return fence(text, "")
}

// repairProse closes what text leaves open, as far as a line by line look
// can tell: a fence left open is closed after the text, and a line that
// would open an HTML block that the text never closes gets its "<"
// escaped (shown as is). Its result may still be unsafe; prose checks.
func repairProse(text string) string {
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

// quote writes text (line endings made "\n", trailing newlines gone) as a
// blockquote, after label (Markdown, such as "*Thinking:*") when there is
// one. Should the quote be unsafe (see mdSafe: a link reference definition
// in it would apply to the whole transcript), the label is written alone
// and the text verbatim in a code block after it.
func quote(label, text string) string {
	text = strings.TrimRight(lf(text), "\n")
	s := text
	if label != "" {
		s = label + " " + text
	}
	if q := "> " + strings.ReplaceAll(s, "\n", "\n> "); mdSafe(q) {
		return q
	}
	if label != "" {
		return label + "\n\n" + fence(text, "")
	}
	return fence(text, "")
}

// lf makes every line ending "\n": CommonMark ends lines at "\r\n" and at
// a lone "\r" (progress bars, old Mac text) too, where prose and quote
// would not see them.
func lf(s string) string {
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return crlf.Replace(s)
}

var crlf = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// mdSentinel is the heading mdSafe writes after the Markdown it checks.
const mdSentinel = "pihistory-sentinel-5d1c9a"

// mdBlocks parses Markdown's block structure as CommonMark does: its block
// parsers and link reference definitions, no extensions. It parses no
// inlines (links, emphasis, code spans): CommonMark reads those only inside
// blocks already found, so they cannot change what mdSafe looks at.
var mdBlocks = parser.NewParser(
	parser.WithBlockParsers(mdBlockParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// mdBlockParsers are goldmark's CommonMark block parsers, with its HTML
// block parser mended where it differs from CommonMark (see htmlBlocks).
func mdBlockParsers() []util.PrioritizedValue {
	ps := parser.DefaultBlockParsers()
	html := parser.NewHTMLBlockParser()
	for i, p := range ps {
		if p.Value == html {
			ps[i].Value = htmlBlocks{html}
		}
	}
	return ps
}

// htmlBlocks is goldmark's HTML block parser mended where it parts from
// CommonMark 0.31 and commonmark.js (and cmark) in ways that matter here:
//   - a declaration in lower case ("<!doctype html") opens a block that
//     runs to the first ">", as one in upper case does;
//   - a line that holds only a </script>, </pre> or </style> closing tag,
//     or a <script/>, <pre/>, <style/> or <textarea/> tag, opens a block
//     that runs to the next blank line, as any other such tag's line does
//     (goldmark reads the first as a paragraph that the next lines
//     continue, where CommonMark ends the list or quote around it);
//   - "<pre/>" and the like, with more on the line, open no block
//     (goldmark runs one to the next </pre>, </script>, ...).
type htmlBlocks struct{ parser.BlockParser }

var (
	declarationLine = regexp.MustCompile(`^ {0,3}<![a-z]`)
	rawSelfClosing  = regexp.MustCompile(`(?i)^ {0,3}<(?:script|pre|style|textarea)/>`)
	rawTagLine      = regexp.MustCompile(`(?i)^ {0,3}<(?:/(?:script|pre|style)[ \t\n]*|(?:script|pre|style|textarea)/)>[ \t]*\n?$`)
)

func (h htmlBlocks) Open(parent ast.Node, reader gmtext.Reader, pc parser.Context) (ast.Node, parser.State) {
	line, segment := reader.PeekLine()
	if !rawSelfClosing.Match(line) {
		if node, state := h.BlockParser.Open(parent, reader, pc); node != nil {
			return node, state
		}
	}
	var node *ast.HTMLBlock
	switch {
	case declarationLine.Match(line):
		node = ast.NewHTMLBlock(ast.HTMLBlockType4)
	case rawTagLine.Match(line) && !ast.IsParagraph(pc.LastOpenedBlock().Node): // kind 7 cannot interrupt a paragraph
		node = ast.NewHTMLBlock(ast.HTMLBlockType7)
	default:
		return nil, parser.NoChildren
	}
	node.Lines().Append(segment)
	reader.AdvanceToEOL()
	return node, parser.NoChildren
}

// mdSafe reports whether md, written as the transcript writes prose (a
// blank line after it, then the next part or entry), keeps to itself: a
// heading after that blank line is still a heading of the document's own
// (no code block, HTML block or other block of md runs on into it), and md
// defines no link references (they would apply to the whole transcript).
//
// Only fenced code and HTML blocks run past a blank line and a heading at
// column 0 (every other block ends there), and they and link reference
// definitions start a line, past its block quote and list item markers
// and indentation, with '`', '~', '<' or '['; text with no such line
// passes unparsed (see mdLine). Text that would take the parser long is
// taken as unsafe: a line with more than mdMaxDepth markers, or more than
// mdMaxRefs "]:" (goldmark reads the rest of a line again for each
// container opened on it, and a paragraph's link reference definitions
// again for each one before them). Tabs are parsed as spaces to the next
// multiple of four columns (see expandTabs).
func mdSafe(md string) bool {
	if !strings.ContainsAny(md, "`~<[") {
		return true
	}
	plain, costly := true, strings.Count(md, "]:") > mdMaxRefs
	for rest := md; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		depth, c := mdLine(line)
		costly = costly || depth > mdMaxDepth
		plain = plain && !strings.ContainsRune("`~<[", rune(c))
	}
	if plain {
		return true
	}
	if costly {
		return false
	}
	src := []byte(expandTabs(md) + "\n\n### " + mdSentinel + "\n")
	ctx := parser.NewContext()
	doc := mdBlocks.Parse(gmtext.NewReader(src), parser.WithContext(ctx))
	if len(ctx.References()) > 0 {
		return false
	}
	h, ok := doc.LastChild().(*ast.Heading)
	if !ok || h.Level != 3 || h.Lines().Len() != 1 {
		return false
	}
	line := h.Lines().At(0)
	return string(line.Value(src)) == mdSentinel
}

// Limits of what mdSafe parses.
const (
	mdMaxDepth = 32   // markers on one line
	mdMaxRefs  = 1000 // "]:", as each link reference definition holds
)

// mdLine counts the block quote and list item markers that line starts
// with, in any order and with any spaces and tabs among them, and returns
// the first byte after those (0 at the end of the line). It takes as a
// marker all that CommonMark does and more (a list item's number may be
// of any length), so a fenced code block, HTML block or link reference
// definition that starts on the line starts at that byte.
func mdLine(line string) (depth int, first byte) {
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			return depth, 0
		}
		j := i + 1
		switch c := line[i]; {
		case c == '>':
			depth, i = depth+1, j
			continue
		case c == '-' || c == '+' || c == '*':
		case '0' <= c && c <= '9':
			for j < len(line) && '0' <= line[j] && line[j] <= '9' {
				j++
			}
			if j == len(line) || (line[j] != '.' && line[j] != ')') {
				return depth, c
			}
			j++
		default:
			return depth, c
		}
		if j < len(line) && line[j] != ' ' && line[j] != '\t' {
			return depth, line[i]
		}
		depth, i = depth+1, j
	}
}

// expandTabs replaces each tab with spaces to the next multiple of four
// columns. CommonMark reads tabs that way wherever they shape blocks, so
// the blocks stay the same; goldmark does not always (a tab after "> "
// that starts a list is not read as one), and mdSafe would miss what such
// a list holds.
func expandTabs(s string) string {
	if strings.IndexByte(s, '\t') < 0 {
		return s
	}
	var b strings.Builder
	col := 0
	for _, c := range s {
		switch c {
		case '\t':
			n := 4 - col%4
			b.WriteString("    "[:n])
			col += n
		case '\n':
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteRune(c)
			col++
		}
	}
	return b.String()
}

// oneLine folds newlines so a value fits a heading or list item.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
