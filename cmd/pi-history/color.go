package main

import (
	"fmt"
	"io"
	"strings"
)

// colorMode is what --color asks for.
type colorMode string

const (
	colorAuto   colorMode = "auto"   // on a terminal, unless NO_COLOR or TERM=dumb
	colorAlways colorMode = "always" // even to a pipe (less -R, a pager)
	colorNever  colorMode = "never"
)

// parseColor reads --color.
func parseColor(v string) (colorMode, error) {
	switch m := colorMode(v); m {
	case colorAuto, colorAlways, colorNever:
		return m, nil
	}
	return "", usagef("--color %q: want auto, always or never", v)
}

// useColor decides whether output is coloured, as grep and ripgrep do:
// always and never say so; auto colours a terminal unless NO_COLOR is set
// to anything (https://no-color.org) or TERM is dumb.
func useColor(m colorMode, tty bool, getenv func(string) string) bool {
	switch m {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// SGR codes, those ripgrep uses by default.
const (
	sgrMatch = "1;31" // bold red
	sgrPath  = "35"   // magenta: the session/entry a hit is in
	sgrDim   = "2"    // the hit's details
)

// painter writes text, coloured when on. Text goes through text (which
// makes control characters from sessions visible on a terminal); the
// colour codes go to raw, around it, so that they reach the terminal.
type painter struct {
	text, raw io.Writer
	on        bool
}

func (p painter) paint(code, s string) {
	p.coloured(code, s != "", func() { io.WriteString(p.text, s) })
}

func (p painter) plain(s string) { io.WriteString(p.text, s) }

// paintBytes is paint for bytes, which it does not keep.
func (p painter) paintBytes(code string, b []byte) {
	p.coloured(code, len(b) > 0, func() { p.text.Write(b) })
}

// coloured runs write, which writes text, between the codes that colour
// it code when colouring and some is written.
func (p painter) coloured(code string, some bool, write func()) {
	if p.on && some {
		fmt.Fprintf(p.raw, "\x1b[%sm", code)
		write()
		io.WriteString(p.raw, "\x1b[0m")
		return
	}
	write()
}

// plainBytes is plain for bytes, which it does not keep.
func (p painter) plainBytes(b []byte) { p.text.Write(b) }

// link writes the address u, dimmed and as a terminal hyperlink (OSC 8,
// which terminals without it ignore) when colouring.
func (p painter) link(u string) {
	if !p.on {
		p.plain(u)
		return
	}
	fmt.Fprintf(p.raw, "\x1b]8;;%s\x1b\\", u)
	p.paint(sgrDim, u)
	io.WriteString(p.raw, "\x1b]8;;\x1b\\")
}

// markerPairs are the brackets that show a match without colour, tried in
// turn: the first pair whose characters the snippet does not hold is used,
// so a bracket in the text is never read as a match's edge.
var markerPairs = [][2]string{{"«", "»"}, {"⟦", "⟧"}, {"⟪", "⟫"}, {"⁅", "⁆"}, {"⦃", "⦄"}}

// markers returns the pair of brackets to set a match off in text.
func markers(text string) (string, string) {
	for _, m := range markerPairs {
		if !strings.Contains(text, m[0]) && !strings.Contains(text, m[1]) {
			return m[0], m[1]
		}
	}
	last := markerPairs[len(markerPairs)-1]
	return last[0] + last[0], last[1] + last[1]
}
