package export

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pi-history/pi-history/internal/testutil/chromium"
)

// Hostile strings of the browser test: each would set window.__pwned if the
// page ran it, and each must show on the page as text.
var hostileStrings = []string{
	`<script>window.__pwned=1</script>`,
	`<img src=x onerror="window.__pwned=2">`,
	`[click me](javascript:window.__pwned=3)`,
	`<a href="javascript:window.__pwned=3">a link</a>`,
	`javascript:window.__pwned=3`,
	`</details><script>window.__pwned=4</script>`,
	`</pre></div></article><svg onload="window.__pwned=5">`,
	`<iframe src="javascript:window.__pwned=6"></iframe>`,
	`<a href="#" onclick="window.__pwned=7">click</a>`,
	`<details open ontoggle="window.__pwned=8"><summary>s</summary></details>`,
	`<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=9">`,
}

// writeHostileJournal writes a v3 journal whose every shown field carries the
// hostile strings: header, session name, user text, thinking, assistant
// text, tool call name and arguments, a long (collapsed) tool result, an
// error result, and a second branch.
func writeHostileJournal(t *testing.T, path string) {
	t.Helper()
	all := strings.Join(hostileStrings, " ")
	var long strings.Builder
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&long, "line %d: %s\n", i, hostileStrings[i%len(hostileStrings)])
	}
	ts := func(i int) string { return fmt.Sprintf("2026-03-04T10:00:%02d.000Z", i) }
	lines := []map[string]any{
		{"type": "session", "version": 3, "id": "0195f2a0-b0b0-7bad-8bad-00000000b0b0", "timestamp": ts(0),
			"cwd": `/tmp/"><script>window.__pwned=10</script>`},
		{"type": "session_info", "id": "b0000001", "parentId": nil, "timestamp": ts(1),
			"name": `</title><script>window.__pwned=11</script>`},
		{"type": "message", "id": "b0000002", "parentId": "b0000001", "timestamp": ts(2),
			"message": map[string]any{"role": "user", "content": "Please look: " + all + " <script>alert(1)</script>", "timestamp": 1772618402000}},
		{"type": "message", "id": "b0000003", "parentId": "b0000002", "timestamp": ts(3),
			"message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "thinking " + all, "thinkingSignature": "s"},
				map[string]any{"type": "text", "text": "Answer " + all},
				map[string]any{"type": "toolCall", "id": "call_1", "name": `<svg/onload="window.__pwned=12">`,
					"arguments": map[string]any{"command": all, "url": "javascript:window.__pwned=3"}},
				map[string]any{"type": "toolCall", "id": "call_2", "name": "bash", "arguments": map[string]any{"command": "false"}},
			}, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
				"usage": map[string]any{"input": 1200, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1240,
					"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
				"stopReason": "toolUse", "timestamp": 1772618403000}},
		{"type": "message", "id": "b0000004", "parentId": "b0000003", "timestamp": ts(4),
			"message": map[string]any{"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
				"content": []any{map[string]any{"type": "text", "text": long.String()}}, "isError": false, "timestamp": 1772618404000}},
		{"type": "message", "id": "b0000005", "parentId": "b0000004", "timestamp": ts(5),
			"message": map[string]any{"role": "toolResult", "toolCallId": "call_2", "toolName": "bash",
				"content": []any{map[string]any{"type": "text", "text": "error: " + all}}, "isError": true, "timestamp": 1772618405000}},
		{"type": "message", "id": "b0000006", "parentId": "b0000005", "timestamp": ts(6),
			"message": map[string]any{"role": "user", "content": "current branch " + hostileStrings[0], "timestamp": 1772618406000}},
		// A second branch off the first user message.
		{"type": "message", "id": "b0000007", "parentId": "b0000002", "timestamp": ts(7),
			"message": map[string]any{"role": "user", "content": "other branch " + hostileStrings[5], "timestamp": 1772618407000}},
		{"type": "message", "id": "b0000008", "parentId": "b0000006", "timestamp": ts(8),
			"message": map[string]any{"role": "user", "content": "leaf " + hostileStrings[1], "timestamp": 1772618408000}},
	}
	var b strings.Builder
	for _, l := range lines {
		enc, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(enc)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileHTMLInChromium opens an HTML export of a hostile session in
// headless Chromium from a file:// URL, opens every <details> and clicks
// every link with the mouse, and checks that nothing ran (window.__pwned
// stays undefined), the page never left the file, and every hostile string
// shows as text. The page is also opened with its Content-Security-Policy
// removed, so the escaping alone is tested, and a control copy with one real
// script added shows that the harness would see a script that runs.
func TestHostileHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	chromium.Path(t) // skip before exporting when there is no browser
	dir := t.TempDir()
	journal := filepath.Join(dir, "hostile.jsonl")
	writeHostileJournal(t, journal)
	st := openStore(t)
	sid := load(t, st, journal)
	page := exportTo(t, st, sid, Options{Format: HTML}, dir, "hostile.html")
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkInert(t, string(html))
	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">`
	if !strings.Contains(string(html), csp) {
		t.Fatal("the page lacks its Content-Security-Policy")
	}
	noCSP := strings.Replace(string(html), csp, "", 1)
	noCSPPage := filepath.Join(dir, "hostile-nocsp.html")
	control := filepath.Join(dir, "control.html")
	os.WriteFile(noCSPPage, []byte(noCSP), 0o644)
	os.WriteFile(control, []byte(strings.Replace(noCSP, "</body>", "<script>window.__pwned=42</script></body>", 1)), 0o644)

	shots := chromium.ShotsDir(t)
	bctx := chromium.Start(t)
	do := func(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	str := func(t *testing.T, expr string) string {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	num := func(t *testing.T, expr string) int {
		t.Helper()
		c, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	pwned := func(t *testing.T) string { t.Helper(); return str(t, `String(window.__pwned)`) }
	fileURL := func(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

	t.Run("control", func(t *testing.T) {
		do(t, "open control", chromedp.Navigate(fileURL(control)), chromedp.WaitReady(chromedp.CSS("footer")))
		if got := pwned(t); got != "42" {
			t.Fatalf("window.__pwned is %s in the control page; the harness does not see scripts run", got)
		}
	})

	for _, c := range []struct{ name, file string }{{"export", page}, {"export without CSP", noCSPPage}} {
		t.Run(c.name, func(t *testing.T) {
			u := fileURL(c.file)
			do(t, "open "+c.name, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("footer")))
			if got := pwned(t); got != "undefined" {
				t.Fatalf("window.__pwned is %s after loading: hostile content ran", got)
			}
			// Tag what to click, then click each with the mouse.
			count := num(t, `(() => { let n = 0; for (const el of document.querySelectorAll('details > summary, a')) el.dataset.probe = String(n++); return n })()`)
			summaries := num(t, `document.querySelectorAll('details > summary').length`)
			if summaries == 0 || count == summaries {
				t.Fatalf("%d summaries and %d clickables: the page should have both <details> and links", summaries, count)
			}
			t.Logf("clicking %d <summary> and %d links", summaries, count-summaries)
			for i := 0; i < count; i++ {
				sel := chromedp.CSS(fmt.Sprintf(`[data-probe="%d"]`, i))
				do(t, fmt.Sprintf("click %d", i), chromedp.ScrollIntoView(sel), chromedp.Click(sel))
				loc := str(t, `location.href`)
				if !strings.HasPrefix(loc, u) || (len(loc) > len(u) && loc[len(u)] != '#') {
					t.Fatalf("after click %d the page is at %s, not the export", i, loc)
				}
				if got := pwned(t); got != "undefined" {
					t.Fatalf("window.__pwned is %s after click %d (%s): hostile content ran", got, i,
						str(t, fmt.Sprintf(`document.querySelector('[data-probe="%d"]').outerHTML`, i)))
				}
			}
			if closed := num(t, `[...document.querySelectorAll('details')].filter(d => !d.open).length`); closed != 0 {
				t.Errorf("%d <details> still closed after clicking every summary", closed)
			}
			if hrefs := str(t, `[...document.querySelectorAll('a')].map(a => a.getAttribute('href')).filter(h => !h.startsWith('#e-')).join(' ')`); hrefs != "" {
				t.Errorf("links that do not point into the page: %s", hrefs)
			}
			for _, tag := range []string{"script", "img", "iframe", "svg", "object", "embed", "form", "base", "link"} {
				if got := str(t, `String(document.getElementsByTagName('`+tag+`').length)`); got != "0" {
					t.Errorf("the page has %s <%s> element(s)", got, tag)
				}
			}
			if got := str(t, `String([...document.querySelectorAll('*')].filter(el => [...el.attributes].some(a => /^on/i.test(a.name))).length)`); got != "0" {
				t.Errorf("%s element(s) carry an event-handler attribute", got)
			}
			text := str(t, `document.body.innerText`)
			for _, h := range hostileStrings {
				if !strings.Contains(text, h) {
					t.Errorf("the page does not show %q as text", h)
				}
			}
			if title := str(t, `document.title`); !strings.Contains(title, `</title><script>window.__pwned=11</script>`) {
				t.Errorf("title %q lacks the hostile session name as text", title)
			}
			if got := pwned(t); got != "undefined" {
				t.Fatalf("window.__pwned is %s at the end", got)
			}
			if c.file == page {
				do(t, "scroll to top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
				c, cancel := context.WithTimeout(bctx, 20*time.Second)
				defer cancel()
				buf, err := chromedp.Run(c, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatalf("screenshot: %v", err)
				}
				p := filepath.Join(shots, "export-hostile.png")
				if err := os.WriteFile(p, buf, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot %s", p)
			}
		})
	}
}
