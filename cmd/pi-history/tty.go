package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// ttySafe is what the commands print to when standard output is a terminal.
// Stored sessions hold whatever tools printed, escape sequences included: an
// ESC, BEL or C1 control from a tool's output, printed as is, would reach
// the terminal as a command (clear the screen, set the title, write the
// clipboard with OSC 52). Written through ttySafe, each such character shows
// as a visible stand-in instead: C0 controls as their Control Pictures
// (ESC as ␛), DEL as ␡, C1 controls as <U+009B>, bytes that are not UTF-8 as
// U+FFFD. Newlines and tabs pass. Output to a pipe or a file is not wrapped
// and keeps the exact bytes.
type ttySafe struct {
	w    io.Writer
	pend []byte // the start of a character that a later Write completes
	out  []byte
}

func (t *ttySafe) Write(p []byte) (int, error) {
	buf := p
	if len(t.pend) > 0 {
		buf = append(t.pend, p...)
	}
	out := t.out[:0]
	i := 0
	for i < len(buf) {
		c := buf[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' || c == '\t' || c >= 0x20 && c != 0x7f:
				out = append(out, c)
			case c == 0x7f:
				out = append(out, "␡"...)
			default:
				out = utf8.AppendRune(out, 0x2400+rune(c))
			}
			i++
			continue
		}
		if !utf8.FullRune(buf[i:]) {
			break
		}
		r, n := utf8.DecodeRune(buf[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, "\uFFFD"...)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, "<U+%04X>", r)
		default:
			out = append(out, buf[i:i+n]...)
		}
		i += n
	}
	t.pend = append(t.pend[:0:0], buf[i:]...)
	t.out = out
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is left of a character no Write completed, as U+FFFD.
func (t *ttySafe) Flush() error {
	if len(t.pend) == 0 {
		return nil
	}
	t.pend = nil
	_, err := io.WriteString(t.w, "\uFFFD")
	return err
}
