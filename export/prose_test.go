package export

import "testing"

// TestProseClosesWhatItOpens: text written as Markdown cannot run on into
// the entries after it.
func TestProseClosesWhatItOpens(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain text is unchanged", "Fixed it.\n\nSee `main.go`.\n", "Fixed it.\n\nSee `main.go`."},
		{"a closed block is unchanged", "Sure:\n```go\nfunc main() {}\n```\nDone.", "Sure:\n```go\nfunc main() {}\n```\nDone."},
		{"an answer cut off in a block is closed", "Sure:\n```go\nfunc main() {", "Sure:\n```go\nfunc main() {\n```"},
		{"the closing fence matches the opening", "~~~~\na\n~~~\nb", "~~~~\na\n~~~\nb\n~~~~"},
		{"a shorter fence does not close", "````\n```\nx", "````\n```\nx\n````"},
		{"a backtick run with backticks after is not a fence", "```a`b\nx", "```a`b\nx"},
		{"indented four spaces is not a fence", "    ```\nx", "    ```\nx"},
		{"a fence in a list item closes in the item", "1. Install it:\n   ```bash\n   npm i foo", "1. Install it:\n   ```bash\n   npm i foo\n   ```"},
		{"a fence in a bullet closes in the bullet", "- run:\n  ```sh\n  make all", "- run:\n  ```sh\n  make all\n  ```"},
		{"an unclosed comment is shown as text", "note:\n<!-- hidden\nrest", "note:\n\\<!-- hidden\nrest"},
		{"a closed comment stays", "<!-- a -->\nrest", "<!-- a -->\nrest"},
		{"an unclosed script is shown as text", "  <SCRIPT>\nalert(1)", "  \\<SCRIPT>\nalert(1)"},
		{"a script closed in any case stays", "<script>\nx\n</SCRIPT>", "<script>\nx\n</SCRIPT>"},
		{"a declaration without its end", "<!DOCTYPE html\nx", "\\<!DOCTYPE html\nx"},
		{"html inside a code block is code", "```\n<!--\n```", "```\n<!--\n```"},
		{"a tag that opens no such block stays", "<div>\nx", "<div>\nx"},
	} {
		if got := prose(c.in); got != c.want {
			t.Errorf("%s: prose(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// FuzzProse: whatever the text, prose leaves no code block open, and
// applying it twice changes nothing more.
func FuzzProse(f *testing.F) {
	for _, s := range []string{"```go\nx", "<!--", "~~~\n```\n", "  ````\n````` \n<pre>", "<![CDATA[", "a\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := prose(s)
		if again := prose(out); again != out {
			t.Fatalf("prose is not stable: %q → %q → %q", s, out, again)
		}
		if closed := prose(out + "\n```x"); closed != out+"\n```x\n```" {
			t.Fatalf("a block was left open by %q: %q", s, out)
		}
	})
}

func TestProseKeepsOffsetsPastCaseChanges(t *testing.T) {
	// "İ" lowers to a string of another length; the comment's end must
	// still be found after it.
	in := "İİİİ\n<!-- a\nİİ -->"
	if got := prose(in); got != in {
		t.Errorf("prose(%q) = %q, want it unchanged", in, got)
	}
}
