package export

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	gmtext "github.com/yuin/goldmark/text"
)

// commonMarkParser is goldmark's full CommonMark parser (inlines too,
// unlike mdBlocks), with the block parsers that mdBlocks uses.
var commonMarkParser = parser.NewParser(
	parser.WithBlockParsers(mdBlockParsers()...),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// commonMark parses md with commonMarkParser in a fresh context. It
// returns the document, the link references md defines, and the source the
// document's segments point into: md with its line endings made "\n" (a
// lone "\r" ends a line in CommonMark but not in goldmark) and its tabs
// expanded (goldmark does not always read a tab after "> " as CommonMark
// does).
func commonMark(md string) (ast.Node, []parser.Reference, []byte) {
	src := []byte(expandTabs(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(md)))
	ctx := parser.NewContext()
	doc := commonMarkParser.Parse(gmtext.NewReader(src), parser.WithContext(ctx))
	return doc, ctx.References(), src
}

// keepsToItself checks, without mdSafe's shortcut and limits, that md
// followed by a blank line and a heading leaves that heading the
// document's last top-level block, and that md defines no link references.
func keepsToItself(md string) error {
	doc, refs, src := commonMark(md + "\n\n### after it\n")
	if len(refs) > 0 {
		return fmt.Errorf("it defines %d link reference(s)", len(refs))
	}
	h, ok := doc.LastChild().(*ast.Heading)
	if !ok || h.Level != 3 || h.Lines().Len() != 1 {
		return fmt.Errorf("the heading after it is inside a %s", doc.LastChild().Kind())
	}
	if line := h.Lines().At(0); string(line.Value(src)) != "after it" {
		return fmt.Errorf("the heading after it reads %q", line.Value(src))
	}
	return nil
}

// runOnInputs are texts that a line by line model of CommonMark got wrong:
// each ran on into the entries after it, or defined links for them.
var runOnInputs = []struct{ name, in string }{
	{"crlf line endings", "Here:\r\n```go\r\nfunc main() {}\r\n```\r\nDone."},
	{"a fence inside a closed comment", "<!--\n```\n-->\ntext"},
	{"a fence inside a closed script", "<script>\nconst md = `\n```\n`;\n</script>"},
	{"a fence inside an html block that a blank line ends", "<details>\n```js\n\nfoo"},
	{"a fence in a list item that the item's end closes", "- a\n  ```\n  code\nb"},
	{"a closing fence with an info string does not close", "```\ncode\n``` ``\nafter"},
	{"a tilde fence with text after does not close", "~~~\ncode\n~~~ ~~"},
	{"a list item's fence closed at column 0", "1. Install:\n   ```sh\n   npm i\n```\nDone."},
	{"a comment's end inside a later code block", "<!-- TODO\n\n```\na --> b\n```"},
	{"lone carriage returns around a fence", "progress\r```\rcode"},
	{"a comment after a lone carriage return", "50%\r<!-- x"},
	{"a link reference definition", "[foo]: http://evil.example\nsee"},
	{"a link reference definition after a paragraph", "see\n\n[foo]: http://evil.example"},
	{"an answer cut off in a block", "Sure:\n```go\nfunc main() {"},
	{"an unclosed comment", "note:\n<!-- hidden\nrest"},
	{"an unclosed script", "<script>\nalert(1)"},
	{"a thinking label and a fence after a lone carriage return", "*Thinking:* progress\r```\rcode"},
	{"a link reference definition in a list after a tab", "\t- > [foo]: /url"},
	{"a link reference definition in a quoted list after a tab", "> \t- [foo]: /url"},
	{"a link reference definition after a closing tag in a list", "- </pre>\n[a]: <b>"},
	{"a link reference definition after a closing tag in a quote", "> </script>\n[a]: /b"},
	{"a fence after a closing tag", "</pre>\n```\n\n</script>x"},
	{"a declaration in lower case without its end", "<!doctype html"},
	{"a declaration in lower case after a paragraph", "text\n<!a\n\nmore"},
	{"a fence after a self-closing pre tag and more", "<pre/><a>\n~~~\n</pre>"},
}

// renderEntries writes an entry holding one part of kind with text, then
// a second entry, as the Markdown transcript does.
func renderEntries(t *testing.T, kind, text string) string {
	t.Helper()
	var buf bytes.Buffer
	r := &mdRenderer{w: bufio.NewWriter(&buf)}
	p := part{Kind: kind, Text: text, Label: "Plan"}
	if err := r.item(&item{ID: "first", Time: "09:00", Title: "Assistant", Parts: []part{p}}); err != nil {
		t.Fatal(err)
	}
	if err := r.item(&item{ID: "next", Time: "09:01", Title: "User", Parts: []part{{Kind: "text", Text: "thanks"}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.end(); err != nil {
		t.Fatal(err)
	}
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestMarkdownTextCannotRunIntoLaterEntries: whatever an entry's text, the
// next entry's heading is still a heading of the transcript's own (no code
// block or HTML block of the text swallows it), and the text defines no
// link references for the other entries. Checked with a CommonMark parser
// for text, notebook sections, thinking and summaries.
func TestMarkdownTextCannotRunIntoLaterEntries(t *testing.T) {
	for _, c := range runOnInputs {
		for _, kind := range []string{"text", "section", "thinking", "summary"} {
			md := renderEntries(t, kind, c.in)
			doc, refs, src := commonMark(md)
			if len(refs) > 0 {
				t.Errorf("%s (%s): the transcript defines link references:\n%s", c.name, kind, md)
			}
			var headings []string
			for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
				if h, ok := n.(*ast.Heading); ok && h.Level == 3 {
					line := h.Lines().At(0)
					headings = append(headings, string(line.Value(src)))
				}
			}
			last, ok := doc.LastChild().(*ast.Paragraph)
			if ok {
				line := last.Lines().At(0)
				ok = string(line.Value(src)) == "thanks"
			}
			if len(headings) != 2 || !strings.Contains(headings[1], "`next`") || !ok {
				t.Errorf("%s (%s): the next entry is not its own (entry headings %q):\n%s", c.name, kind, headings, md)
			}
		}
	}
}

// TestProseKeepsOrdinaryMarkdown: text that keeps to itself is written as
// it is (line endings made "\n", trailing newlines gone), not verbatim.
func TestProseKeepsOrdinaryMarkdown(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain text", "Fixed it.\n\nSee `main.go`.\n", "Fixed it.\n\nSee `main.go`."},
		{"a closed code block", "Sure:\n```go\nfunc main() {}\n```\nDone.", "Sure:\n```go\nfunc main() {}\n```\nDone."},
		{"a closed block with crlf", "Here:\r\n```go\r\nfunc main() {}\r\n```\r\nDone.", "Here:\n```go\nfunc main() {}\n```\nDone."},
		{"lists", "Steps:\n\n1. Build.\n2. Test:\n   ```sh\n   go test ./...\n   ```\n\n- a\n  - b\n", "Steps:\n\n1. Build.\n2. Test:\n   ```sh\n   go test ./...\n   ```\n\n- a\n  - b"},
		{"inline links and html", "See [the docs](https://example.com) and <https://example.com>, <b>bold</b>.", "See [the docs](https://example.com) and <https://example.com>, <b>bold</b>."},
		{"a closed comment", "<!-- a -->\nrest", "<!-- a -->\nrest"},
		{"a script closed in any case", "<script>\nx\n</SCRIPT>", "<script>\nx\n</SCRIPT>"},
		{"a tag that opens no such block", "<div>\nx", "<div>\nx"},
		{"a quote", "> quoted\n> ```\n> x", "> quoted\n> ```\n> x"},
		{"html inside a code block", "```\n<!--\n```", "```\n<!--\n```"},
		{"a fence left open in a list item", "1. Install it:\n   ```bash\n   npm i foo", "1. Install it:\n   ```bash\n   npm i foo"},
		{"a comment's end after a case change", "İİİİ\n<!-- a\nİİ -->", "İİİİ\n<!-- a\nİİ -->"},
		{"a closing tag alone on a line holds the fence after it", "</pre>\n```\n\n</script>x", "</pre>\n```\n\n</script>x"},
		{"a self-closing pre tag alone on a line holds the fence after it", "<pre/>\n```\n\nx", "<pre/>\n```\n\nx"},
	} {
		if got := prose(c.in); got != c.want {
			t.Errorf("%s: prose(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestProseRepairsOrShowsVerbatim: text that would run on is repaired when
// closing its fence or escaping its HTML opener is enough, and is shown
// verbatim in a code block otherwise.
func TestProseRepairsOrShowsVerbatim(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"an answer cut off in a block is closed", "Sure:\n```go\nfunc main() {", "Sure:\n```go\nfunc main() {\n```"},
		{"the closing fence matches the opening", "~~~~\na\n~~~\nb", "~~~~\na\n~~~\nb\n~~~~"},
		{"a shorter fence does not close", "````\n```\nx", "````\n```\nx\n````"},
		{"lone carriage returns are line endings", "progress\r```\rcode", "progress\n```\ncode\n```"},
		{"an unclosed comment is shown as text", "note:\n<!-- hidden\nrest", "note:\n\\<!-- hidden\nrest"},
		{"an unclosed script is shown as text", "  <SCRIPT>\nalert(1)", "  \\<SCRIPT>\nalert(1)"},
		{"a declaration without its end", "<!DOCTYPE html\nx", "\\<!DOCTYPE html\nx"},
		{"a declaration in lower case without its end", "<!doctype html\nx", "\\<!doctype html\nx"},
		{"a closing fence with text after is verbatim", "```\ncode\n``` ``\nafter", "````\n```\ncode\n``` ``\nafter\n````"},
		{"a link reference definition is verbatim", "[foo]: http://evil.example\nsee", "```\n[foo]: http://evil.example\nsee\n```"},
	} {
		if got := prose(c.in); got != c.want {
			t.Errorf("%s: prose(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestQuote: thinking and summaries are blockquotes, with lone carriage
// returns as line endings; one that would define a link reference is shown
// verbatim after its label.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ name, label, in, want string }{
		{"a quote", "*Thinking:*", "first\nsecond\n", "> *Thinking:* first\n> second"},
		{"lone carriage returns", "*Thinking:*", "progress\r```\rcode", "> *Thinking:* progress\n> ```\n> code"},
		{"a summary", "", "## Goal\r\nship it", "> ## Goal\n> ship it"},
		{"a link reference definition", "", "[foo]: http://evil.example", "```\n[foo]: http://evil.example\n```"},
		{"a link reference definition after the label", "*Thinking:*", "a\n\n[foo]: /x", "*Thinking:*\n\n```\na\n\n[foo]: /x\n```"},
	} {
		if got := quote(c.label, c.in); got != c.want {
			t.Errorf("%s: quote(%q, %q) = %q, want %q", c.name, c.label, c.in, got, c.want)
		}
	}
}

// TestProseConcurrently: exports may run at once; the parser is shared.
func TestProseConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, c := range runOnInputs {
				if err := keepsToItself(prose(c.in)); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			}
		})
	}
	wg.Wait()
}

// costly reports whether mdSafe takes text as unsafe unparsed.
func costly(text string) bool {
	if strings.Count(text, "]:") > mdMaxRefs {
		return true
	}
	for _, l := range strings.Split(text, "\n") {
		if depth, _ := mdLine(l); depth > mdMaxDepth {
			return true
		}
	}
	return false
}

// FuzzProse: whatever the text, what prose and quote write keeps to itself
// (checked by keepsToItself, with no shortcut), the verbatim fallback does
// too, and prose written again changes nothing (but for costly text).
func FuzzProse(f *testing.F) {
	for _, c := range runOnInputs {
		f.Add(c.in)
	}
	for _, s := range []string{"```go\nx", "<!--", "~~~\n```\n", "  ````\n````` \n<pre>", "<![CDATA[", "a\n\n", "- [a]: /b", "> [a]: /b", "\t```\n", "[a]:\n/b\n\"t\n\"", strings.Repeat("> ", 40) + "```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := prose(s)
		if err := keepsToItself(out); err != nil {
			t.Fatalf("prose(%q) = %q: %v", s, out, err)
		}
		if v := fence(lf(s), ""); keepsToItself(v) != nil || (!mdSafe(v) && !costly(lf(s))) {
			t.Fatalf("the verbatim form of %q is not safe: %q", s, v)
		}
		// Costly text is shown verbatim, and its verbatim form is costly too.
		if again := prose(out); again != out && !costly(lf(s)) {
			t.Fatalf("prose is not stable: %q → %q → %q", s, out, again)
		}
		for _, label := range []string{"", "*Thinking:*"} {
			if q := quote(label, s); keepsToItself(q) != nil {
				t.Fatalf("quote(%q, %q) = %q: %v", label, s, q, keepsToItself(q))
			}
		}
	})
}

// TestExpandTabs: a tab goes to the next multiple of four columns, counted
// in characters from the start of its line.
func TestExpandTabs(t *testing.T) {
	for in, want := range map[string]string{
		"\tx":        "    x",
		"> \t- a":    ">   - a",
		"ab\tc\n\td": "ab  c\n    d",
		"é\t|":       "é   |",
		"no tabs":    "no tabs",
	} {
		if got := expandTabs(in); got != want {
			t.Errorf("expandTabs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProseCostlyTextIsVerbatim: text that goldmark would take long over
// (containers nested deeper than anyone writes, thousands of link
// reference definitions) is shown verbatim without parsing it, and soon.
func TestProseCostlyTextIsVerbatim(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"quotes", strings.Repeat(">", 1<<16) + "```"},
		{"lists", strings.Repeat("- ", 1<<16) + "```"},
		{"ordered lists after tabs", strings.Repeat("1)\t", 1<<15) + "```"},
		{"link reference definitions", strings.Repeat("[a]: /b\n", 1<<16)},
	} {
		start := time.Now()
		got := prose(c.in)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: prose took %v", c.name, took)
		}
		if want := fence(c.in, ""); got != want {
			t.Errorf("%s: prose did not show it verbatim", c.name)
		}
	}
	for in, want := range map[string]struct {
		depth int
		first byte
	}{
		"> > - 1. x": {4, 'x'}, ">>-\t2) `": {4, '`'}, "-x": {0, '-'}, "10.5": {0, '1'}, "* * *": {3, 0},
		"  > 1.": {2, 0}, "": {0, 0}, ">```": {1, '`'}, "-   <div>": {1, '<'}, "1.[a]: /b": {0, '1'},
	} {
		if depth, first := mdLine(in); depth != want.depth || first != want.first {
			t.Errorf("mdLine(%q) = %d, %q, want %d, %q", in, depth, first, want.depth, want.first)
		}
	}
}
