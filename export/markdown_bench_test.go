package export

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pi-history/pi-history/internal/testutil"
	"github.com/pi-history/pi-history/search"
)

// BenchmarkMarkdownExport writes a generated session of 2,000 entries as
// Markdown; bytes are the journal's.
func BenchmarkMarkdownExport(b *testing.B) {
	st := openStore(b)
	j := testutil.Journal(testutil.GenOptions{Session: "bench-md", Entries: 2000, Seed: 7})
	sid := load(b, st, testutil.WriteFile(b, b.TempDir(), "bench.jsonl", j))
	x, err := New(st, search.New(st, nil), sid, Options{Format: Markdown})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(j)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := x.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarkdownExportProse writes as Markdown a session of 2,000
// messages whose text is benchProse (code blocks, links, lists), so that
// most of it goes through the CommonMark check; bytes are the journal's.
func BenchmarkMarkdownExportProse(b *testing.B) {
	var j strings.Builder
	line := func(v map[string]any) {
		enc, _ := json.Marshal(v)
		j.Write(enc)
		j.WriteByte('\n')
	}
	line(map[string]any{"type": "session", "version": 3, "id": "bench-prose", "timestamp": "2026-03-01T09:00:00.000Z", "cwd": "/home/dev"})
	var parent any
	for i := range 2000 {
		id := fmt.Sprintf("%08x", i+1)
		role := "user"
		content := any(benchProse[i%len(benchProse)])
		if i%2 == 1 {
			role = "assistant"
			content = []any{map[string]any{"type": "text", "text": content}}
		}
		line(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": fmt.Sprintf("2026-03-01T09:%02d:%02d.000Z", i/60%60, i%60),
			"message": map[string]any{"role": role, "content": content, "timestamp": 1772442001500 + i}})
		parent = id
	}
	st := openStore(b)
	sid := load(b, st, testutil.WriteFile(b, b.TempDir(), "bench.jsonl", j.String()))
	x, err := New(st, search.New(st, nil), sid, Options{Format: Markdown})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(j.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, err := x.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// benchProse is assistant text as it comes: plain sentences, inline code,
// links, lists and closed code blocks, and one reply cut off in a block.
var benchProse = []string{
	"Fixed it. The handler now returns early when the cart is empty, so the checkout page no longer panics.",
	"I'll look at `store/store.go` first, then run `go test ./store/`.\n\nThe failure is in `Open`: it reads the manifest before the lock is taken.",
	"Here is the change:\n\n```go\nfunc (s *Store) Close() error {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn s.db.Close()\n}\n```\n\nRun the tests again with `go test -race ./...`.",
	"Steps:\n\n1. Install the tools:\n   ```sh\n   npm i\n   ```\n2. Build with `make`.\n3. See [the README](https://example.com/readme) for more.\n\n- one\n- two\n",
	"The error comes from <code>parse</code>; see the docs at <https://example.com/docs>.\n\n> Note: the cache is per process.",
	"Sure:\n```python\ndef main():\n    print(\"hello\")\n",
	strings.Repeat("A longer answer with `code` and *emphasis* and a [link](https://example.com). ", 40),
}

// BenchmarkProse writes benchProse as Markdown prose.
func BenchmarkProse(b *testing.B) {
	n := 0
	for _, s := range benchProse {
		n += len(s)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, s := range benchProse {
			prose(s)
		}
	}
}
