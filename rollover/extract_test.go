package rollover

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with testdata/golden/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./rollover/ -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// extractCase is one extraction rule case: each rule has a case that
// triggers it (has) and one that must not (hasNot).
type extractCase struct {
	name   string
	text   string
	images int
	has    string // a substring the line must contain
	hasNot string // a substring it must not contain
}

var extractCases = []extractCase{
	{name: "t3-context-removed", text: "<t3_context>\nbranch: main\nfiles: 12\n</t3_context>\nWhy does the build fail?",
		has: "Why does the build fail?", hasNot: "branch"},
	{name: "t3-context-other-tag-kept", text: "<t3_notes>keep me</t3_notes> please",
		has: "<t3_notes>keep me</t3_notes>"},
	{name: "attachment-removed", text: "[Attachment saved at /tmp/pi/att-1.png] What is in this picture?",
		has: "What is in this picture?", hasNot: "Attachment"},
	{name: "attachment-prose-kept", text: "The attachment saved at /tmp is gone, see [Attachment] notes",
		has: "attachment saved at /tmp"},
	{name: "file-ref", text: "[File: main.go; ref=abc123] fix the panic here",
		has: "[file: main.go] fix the panic here", hasNot: "ref="},
	{name: "file-refs-counted", text: "[File: a-very-long-file-name-that-goes-on-and-on-forever.go; ref=1]\n[File: b.go; ref=2]\n[File: c.go; ref=3]\nreview these",
		has: "+2 files]", hasNot: "b.go"},
	{name: "file-ref-must-not", text: "open file: main.go and [file main.go] please",
		has: "[file main.go]", hasNot: "[file: "},
	{name: "quote", text: "[Assistant quote](entry-42) you said this was fixed",
		has: "[quote] you said this was fixed", hasNot: "entry-42"},
	{name: "quote-must-not", text: "[Assistant quote] without a link stays",
		has: "[Assistant quote] without"},
	{name: "image-once", text: "what is this", images: 1, has: "[image] what is this"},
	{name: "image-repeats", text: "compare them", images: 3, has: "[image ×3] compare them"},
	{name: "image-none", text: "no pictures here", hasNot: "[image"},
	{name: "fence-backtick", text: "Run this:\n```go\nfunc main() {\n}\n```\nand tell me",
		has: "Run this: [code 2 lines]", hasNot: "func main"},
	{name: "fence-tilde", text: "~~~\nline one\nline two\nline three\n~~~\nexplain",
		has: "[code 3 lines] explain"},
	{name: "fence-longer-delimiter", text: "see\n````md\n```\ninner\n```\n````\ndone",
		has: "see [code 3 lines]", hasNot: "inner"},
	{name: "fence-shorter-close-not-a-close", text: "x\n````\na\n```\nb\n````\ny",
		has: "x [code 3 lines]", hasNot: "b"},
	{name: "fence-unclosed", text: "paste:\n```\nno end\nstill code",
		has: "paste: [code 2 lines]", hasNot: "still"},
	{name: "fence-inline-must-not", text: "```inline``` code stays text",
		has: "```inline``` code stays text", hasNot: "[code"},
	{name: "fence-two-backticks-must-not", text: "``\nnot a fence\n``",
		has: "``", hasNot: "[code"},
	{name: "log-json-records", text: "{\"level\":\"error\",\"msg\":\"boom\"}\n{\"level\":\"info\",\"msg\":\"retry\"}\nwhy does it fail?",
		has: "[log 2 lines] why does it fail?", hasNot: "boom"},
	{name: "log-json-pretty", text: "{\n  \"a\": 1,\n  \"b\": \"x\"\n}\nis this valid?",
		has: "[log 4 lines] is this valid?"},
	{name: "log-bracketed", text: "[2026-01-02 10:00:00] started\n[ERROR] disk full\nfix it",
		has: "[log 2 lines] fix it"},
	{name: "log-iso-crlf", text: "2026-01-02T10:00:00Z start\r\n2026-01-02T10:00:01.5Z stop\r\nwhat happened?",
		has: "[log 2 lines] what happened?"},
	{name: "log-subsecond", text: "12:00:01.123 a\n12:00:01.456 b\nslow?",
		has: "[log 2 lines] slow?"},
	{name: "log-stack-frames", text: "panic: nil map\n\tmain.go:12 +0x1d\n    at run (/src/app.js:10:5)\nhow?",
		has: "panic: nil map", hasNot: "app.js"},
	{name: "log-single-line-must-not", text: "{\"this looks\": \"like a record\"}\nbut it is one line",
		has: "{\"this looks\": \"like a record\"}", hasNot: "[log"},
	{name: "log-unindented-path-must-not", text: "edit main.go:12\nand util.go:40",
		has: "edit main.go:12", hasNot: "[log"},
	{name: "host-handoff", text: "Context handoff (from session 0190…): continue the migration\nlots of detail",
		has: TagHandoff, hasNot: "migration"},
	{name: "host-delegated", text: "Delegated task t-17 reached a terminal state: done\nresult…",
		has: TagDelegated, hasNot: "t-17"},
	{name: "host-must-not", text: "Please write a Context handoff (short) for me",
		has: "Please write", hasNot: TagHandoff},
	{name: "first-line-80", text: strings.Repeat("word ", 40) + "\nsecond line",
		has: "…", hasNot: "second"},
	{name: "first-line-short-must-not", text: "short question?\nmore detail",
		has: "short question?", hasNot: "…"},
	{name: "empty", text: "   \n\n", has: "(empty)"},
}

func TestExtractRules(t *testing.T) {
	var all strings.Builder
	for _, c := range extractCases {
		t.Run(c.name, func(t *testing.T) {
			got := ExtractIndexLine(c.text, c.images)
			if c.has != "" && !strings.Contains(got, c.has) {
				t.Errorf("line %q lacks %q", got, c.has)
			}
			if c.hasNot != "" && strings.Contains(got, c.hasNot) {
				t.Errorf("line %q contains %q", got, c.hasNot)
			}
			if n := utf8.RuneCountInString(got); n > IndexLineMaxChars || strings.ContainsAny(got, "\r\n") {
				t.Errorf("line %q is not one line of at most %d characters", got, IndexLineMaxChars)
			}
			golden(t, filepath.Join("extract", c.name+".golden"), fmt.Sprintf("input (%d images):\n%s\n--- line:\n%s\n", c.images, c.text, got))
		})
		fmt.Fprintf(&all, "%s\t%s\n", c.name, ExtractIndexLine(c.text, c.images))
	}
	golden(t, "extract/all.golden", all.String())
}

// TestExtractLinear guards the linear-time promise: a message 32 times
// larger must not take more than ~32 times as long (with generous slack for
// a shared machine).
func TestExtractLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	unit := "```\ncode\n```\n{\"a\":1}\n[File: x; ref=1] [Assistant quote](q) <t3_context>x</t3_context> " +
		"[Attachment saved at y] text\n\tat f (a.js:1:2)\n"
	measure := func(s string, reps int) time.Duration {
		best := time.Duration(0)
		for i := 0; i < 3; i++ {
			start := time.Now()
			for j := 0; j < reps; j++ {
				ExtractIndexLine(s, 2)
			}
			if d := time.Since(start); best == 0 || d < best {
				best = d
			}
		}
		return best
	}
	small := measure(strings.Repeat(unit, 100), 32)
	big := measure(strings.Repeat(unit, 100*32), 1)
	if big > small*4 {
		t.Errorf("32× input took %.1f× as long", float64(big)/float64(small)*32)
	}
}

func FuzzExtract(f *testing.F) {
	for _, c := range extractCases {
		f.Add(c.text, c.images)
	}
	f.Fuzz(func(t *testing.T, text string, images int) {
		if !utf8.ValidString(text) || images < 0 || images > 1000 {
			t.Skip()
		}
		got := ExtractIndexLine(text, images)
		if got == "" || strings.ContainsAny(got, "\r\n") {
			t.Fatalf("line %q is empty or spans lines", got)
		}
		if utf8.RuneCountInString(got) > IndexLineMaxChars {
			t.Fatalf("line %q exceeds %d characters", got, IndexLineMaxChars)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("line %q is not valid UTF-8", got)
		}
		if again := ExtractIndexLine(text, images); again != got {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}
