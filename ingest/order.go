package ingest

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SortByStart orders journal paths by when their sessions began, oldest
// first, so that a first import stores sessions in the order they were
// written and "oldest first" across every session means what it says.
// Sorted by path instead, every session of a project named early in the
// alphabet came before every session of the others, whatever their dates.
//
// Pi names a journal after the time its session began
// (2026-11-29T10-15-00-123Z_<id>.jsonl); a journal named otherwise (an
// export, a copy) is placed by its session header's timestamp, and any
// other file (an archive, a compressed journal) by its modification time,
// written the same way.
// Paths with the same key keep path order.
func SortByStart(paths []string) {
	keys := make(map[string]string, len(paths))
	for _, p := range paths {
		keys[p] = startKey(p)
	}
	slices.SortStableFunc(paths, func(a, b string) int {
		return cmp.Or(cmp.Compare(keys[a], keys[b]), cmp.Compare(a, b))
	})
}

// piStamp is the layout of the time at the start of a Pi journal's name.
const piStamp = "2006-01-02T15-04-05-000Z"

// startKey is the sort key of SortByStart: the time at the start of the
// file's name when it is Pi's, else its session header's time, else its
// modification time, in the same layout, else "~" (after every time).
func startKey(path string) string {
	base := filepath.Base(path)
	if isPiStamp(base) {
		return base[:len(piStamp)]
	}
	if t, ok := headerStart(path); ok {
		return stampOf(t)
	}
	if info, err := os.Stat(path); err == nil {
		return stampOf(info.ModTime())
	}
	return "~"
}

// stampOf writes t as Pi writes times in journal names.
func stampOf(t time.Time) string {
	t = t.UTC()
	return t.Format("2006-01-02T15-04-05") + fmt.Sprintf("-%03dZ", t.Nanosecond()/1e6)
}

// headerStart is the timestamp of the session header on the first line of
// an uncompressed journal, if it has one (a header line is short: at most
// 64 KiB of it are read).
func headerStart(path string) (time.Time, bool) {
	if !strings.HasSuffix(path, ".jsonl") {
		return time.Time{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	line, _ := bufio.NewReaderSize(io.LimitReader(f, 64<<10), 64<<10).ReadSlice('\n')
	var h struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(line, &h) != nil || h.Type != "session" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, h.Timestamp)
	return t, err == nil
}

// isPiStamp reports whether name begins with a time written as Pi writes it
// in journal names: digits where the layout has digits, the rest as is.
func isPiStamp(name string) bool {
	if len(name) < len(piStamp) {
		return false
	}
	for i := 0; i < len(piStamp); i++ {
		c, l := name[i], piStamp[i]
		if l >= '0' && l <= '9' {
			if c < '0' || c > '9' {
				return false
			}
		} else if c != l {
			return false
		}
	}
	return true
}
