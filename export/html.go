package export

import (
	"bufio"
	"html/template"
)

// htmlRenderer writes one self-contained page: styles inline, no scripts,
// no external resources (a Content-Security-Policy meta tag forbids them
// too), every value escaped by html/template. Long tool output, tool
// arguments and thinking are collapsed in <details>.
type htmlRenderer struct {
	w         *bufio.Writer
	open      bool // a window <section> is open
	seenOther bool
	err       error
	exec      func(name string, data any)
}

func newHTMLRenderer(w *bufio.Writer) *htmlRenderer {
	r := &htmlRenderer{w: w}
	r.exec = func(name string, data any) {
		if r.err == nil {
			r.err = pageTemplate.ExecuteTemplate(w, name, data)
		}
	}
	return r
}

func (r *htmlRenderer) write(s string) {
	if r.err == nil {
		_, r.err = r.w.WriteString(s)
	}
}

func (r *htmlRenderer) begin(h *docHead) error {
	r.exec("head", h)
	return r.err
}

func (r *htmlRenderer) window(w *windowHead) error {
	if r.open {
		r.write("</section>\n")
	}
	if w.Branch != "" && w.First {
		if !r.seenOther {
			r.write("<p class=\"others\">The sections below hold the entries of the other branches, which are not on the branch above.</p>\n")
			r.seenOther = true
		}
		r.exec("branch", w)
	}
	r.exec("window", w)
	r.open = true
	return r.err
}

func (r *htmlRenderer) item(it *item) error {
	r.exec("item", it)
	return r.err
}

func (r *htmlRenderer) end() error {
	if r.open {
		r.write("</section>\n")
	}
	r.exec("foot", nil)
	return r.err
}

// ArgsPart is a call's arguments as a code part (collapsed when long).
func (p part) ArgsPart() part { return part{Kind: "code", Label: "arguments", Text: p.Args} }

const pageCSS = `
:root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--mute:#6e6e73;--line:#d2d2d7;--code:#f5f5f7;--user:#e8f0fe;--err:#b3261e;--sum:#fff8e1;--note:#f1f8e9}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8ed;--bg:#161618;--mute:#98989d;--line:#3a3a3c;--code:#232326;--user:#1c2a3f;--err:#ff6b60;--sum:#2e2a1c;--note:#1f2a1c}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:62rem;padding:1.5rem;font:15px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.6rem;margin:.2rem 0 .6rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0 0 1.5rem;color:var(--mute)}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
section.window{border-top:2px solid var(--line);margin-top:1.5rem}
h2{font-size:1.15rem;margin:1rem 0 .6rem}h2 .when{font-weight:400}
h2.branch{border-top:4px double var(--line);padding-top:1rem;margin-top:2.5rem}
p.others{margin-top:2.5rem;color:var(--mute);font-style:italic}
article.entry{border:1px solid var(--line);border-radius:8px;padding:.6rem .9rem;margin:.8rem 0}
article.user{background:var(--user)}
article.compaction,article.summary{background:var(--sum)}
article.notebook{background:var(--note)}
article header{font-size:.9rem;margin-bottom:.3rem}
.who{font-weight:700}.when{color:var(--mute);font-size:.85rem}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
pre{background:var(--code);padding:.5rem .7rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:.3rem 0}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.error>pre,pre.error,.result.error .callhead{color:var(--err)}
.label,.callhead{font-size:.85rem;color:var(--mute);margin-top:.4rem}
.call{border-left:3px solid var(--line);padding-left:.7rem;margin:.5rem 0}
.result{margin-top:.3rem}
blockquote.summary{margin:.4rem 0;padding:.2rem .8rem;border-left:3px solid var(--mute);white-space:pre-wrap}
p.note,p.image{color:var(--mute);font-style:italic;margin:.3rem 0}
p.meta{color:var(--mute);font-size:.88rem;margin:.3rem 0}
details{margin:.3rem 0}summary{cursor:pointer;color:var(--mute);font-size:.85rem}
a{color:inherit}
`

var pageTemplate = template.Must(template.New("page").Parse(`
{{- define "head" -}}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="pi-history">
<title>{{.Title}}</title>
<style>` + pageCSS + `</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<dl class="facts">
<dt>Session</dt><dd><code>{{.SessionID}}</code></dd>
{{if .Cwd}}<dt>Project</dt><dd><code>{{.Cwd}}</code></dd>
{{end}}{{if .Created}}<dt>Started</dt><dd>{{.Created}}</dd>
{{end}}{{if .Parent}}<dt>Forked from</dt><dd><code>{{.Parent}}</code></dd>
{{end}}<dt>Exported</dt><dd>{{.Scope}}{{if .Entries}}; {{.Entries}} entries in {{.Windows}} window(s){{end}}</dd>
</dl>
</header>
<main>
{{end}}

{{- define "branch" -}}
<h2 class="branch">Branch ending at <a href="#e-{{.Branch}}"><code>{{.Branch}}</code></a>
{{- if .BranchAt}} (branches off after <a href="#e-{{.BranchAt}}"><code>{{.BranchAt}}</code></a>){{else}} (a separate root){{end}}</h2>
{{end}}

{{- define "window" -}}
<section class="window">
<h2>Window {{.N}}{{if .Branch}} of this branch{{end}} <span class="when">· {{.Label}}{{if .Started}} · {{.Started}}{{end}}</span></h2>
{{end}}

{{- define "item" -}}
{{if .Meta -}}
<p class="meta" id="e-{{.ID}}">{{.Title}}{{if .Sub}} <code>{{.Sub}}</code>{{end}} <span class="when">· {{.Time}} · {{.ID}}</span></p>
{{else -}}
<article class="entry {{.Kind}}" id="e-{{.ID}}">
<header><span class="who">{{.Title}}</span>{{if .Sub}} <code>{{.Sub}}</code>{{end}} <span class="when">· {{.Time}} · <a href="#e-{{.ID}}">{{.ID}}</a></span></header>
{{range .Parts}}{{template "part" .}}{{end -}}
</article>
{{end}}{{end}}

{{- define "part" -}}
{{- if eq .Kind "text"}}<div class="text">{{.Text}}</div>
{{else if eq .Kind "thinking"}}<details class="thinking"><summary>Thinking</summary><div class="text">{{.Text}}</div></details>
{{else if eq .Kind "summary"}}<blockquote class="summary">{{.Text}}</blockquote>
{{else if eq .Kind "note"}}<p class="note">{{.Text}}</p>
{{else if eq .Kind "image"}}<p class="image">[image: {{.Text}}]</p>
{{else if eq .Kind "section"}}<h3>{{.Label}}</h3>
<div class="text">{{.Text}}</div>
{{else if eq .Kind "code"}}{{template "code" .}}
{{else if eq .Kind "call"}}<div class="call">
<div class="callhead">Tool call <code>{{.Label}}</code>{{if .CallID}} <span class="when">{{.CallID}}</span>{{end}}</div>
{{template "code" .ArgsPart}}
{{if .Answered}}<div class="result{{if .Error}} error{{end}}"><div class="callhead">{{if .Error}}Error{{else}}Result{{end}}{{if .Took}} <span class="when">· {{.Took}}</span>{{end}}</div>
{{range .Result}}{{template "part" .}}{{end}}</div>
{{else}}<p class="note">No result on this branch.</p>
{{end}}</div>
{{end}}
{{- end}}

{{- define "code" -}}
{{if .Long}}<details class="out{{if .Error}} error{{end}}"><summary>{{if .Label}}{{.Label}}{{else}}output{{end}} ({{.Lines}} lines)</summary><pre>{{.Text}}</pre></details>
{{- else}}{{if .Label}}<div class="label">{{.Label}}</div>{{end}}<pre class="out{{if .Error}} error{{end}}">{{.Text}}</pre>{{end}}
{{- end}}

{{- define "foot" -}}
</main>
<footer><p class="meta">Exported by pi-history.</p></footer>
</body>
</html>
{{end}}
`))
