// Package ingest reads Pi journal files into the store: once (import) or
// continuously (watch). It resumes each file at the byte where it stopped,
// reads only complete lines (a half-written last line waits until Pi
// finishes it), reports unreadable lines with their file and line number,
// and notices a file rewritten in place (Pi migrates old files on open), in
// which case it reads the file whole again: stored entries it still holds
// take its bytes, the others stay stored (see store.FileBatch.Replace). A
// session's identity comes from its header: a file rewritten to hold
// another session (another journal copied over it) ends the one it held,
// whose entries stay stored, and the new one is stored under its own id.
package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	pihistory "github.com/pi-history/pi-history"
	"hash/fnv"
	"io"
	"os"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// Limits bound what one line may cost.
const (
	// MaxLineBytes is the longest line read; longer lines are skipped with a reason.
	MaxLineBytes = 64 << 20
	batchBytes   = 8 << 20
	batchEntries = 8192
)

// Problem is a line that was skipped, or a file that could not be read
// (see pihistory.ImportProblem).
type Problem = pihistory.ImportProblem

// FileReport says what reading one file did (see pihistory.FileReport).
type FileReport = pihistory.FileReport

// Progress is called after each stored batch with the bytes consumed so far
// in this file and the entries added so far; it may be nil.
type Progress func(bytes int64, entries int)

// File reads path from where the store last stopped to its current end.
func File(st *store.Store, path string, progress Progress) (FileReport, error) {
	rep := FileReport{Path: path}
	f, err := os.Open(path)
	if err != nil {
		return rep, fmt.Errorf("open journal %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("stat journal %s: %w", path, err)
	}
	if info.IsDir() {
		return rep, fmt.Errorf("%s is a directory, not a journal file", path)
	}
	prev, err := st.FileState(path)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rep, err
	}
	var parser journal.Parser
	var offset int64
	replace := false
	var state store.FileState
	if prev != nil {
		rewritten, err := isRewritten(f, info.Size(), prev)
		if err != nil {
			return rep, fmt.Errorf("check journal %s: %w", path, err)
		}
		if rewritten {
			replace, rep.Rewritten = true, true
		} else {
			parser.State, offset, state = prev.Parser, prev.Offset, *prev
			rep.Session = prev.Session
		}
	}
	if info.Size() == offset {
		return rep, nil
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return rep, fmt.Errorf("seek journal %s to %d: %w", path, offset, err)
	}
	in := lines{key: path, size: info.Size(), offset: offset, replace: replace, parser: parser, state: state}
	err = readLines(st, bufio.NewReaderSize(f, bufferFor(info.Size()-offset)), in, &rep, progress)
	return rep, err
}

// bufferFor sizes the read buffer for n bytes still to read: a live
// append is a few kilobytes, and a megabyte for each would make the
// watcher allocate more than every search together (lines longer than the
// buffer are read in pieces).
func bufferFor(n int64) int {
	return int(min(max(n, 16<<10), 1<<20))
}

// lines says where readLines resumes a journal and what its input is.
type lines struct {
	key     string // the store's key: the file's path, or ARCHIVE!MEMBER
	size    int64  // the journal's size
	offset  int64  // the byte the input starts at
	replace bool   // the first batch replaces the session's entries
	parser  journal.Parser
	state   store.FileState
	// member: the input is a whole archive member, not a file that may
	// still grow. Its last line counts without a newline, and a line too
	// long is skipped even when the member ends inside it; in a file, both
	// wait for more (rep.Pending).
	member bool
}

// readLines reads r, a journal from in.offset on, into the store in batches
// under in.key, adding what it did to rep. It stops at the end of r or at an
// error; a journal without a header is not read.
func readLines(st *store.Store, r *bufio.Reader, in lines, rep *FileReport, progress Progress) error {
	what, unit := "journal", "file"
	if in.member {
		what, unit = "archive member", "member"
	}
	parser, state, consumed := in.parser, in.state, in.offset
	fb := &store.FileBatch{Path: in.key, Replace: in.replace}
	firstProblem := len(rep.Problems)
	pendingBytes := 0
	headerOK := parser.HeaderSeen()
	flush := func() error {
		if fb.Header == nil && len(fb.Entries) == 0 && consumed == state.Offset {
			return nil
		}
		if !headerOK && fb.Header == nil {
			// No header yet (nothing readable): remember nothing.
			fb.Entries = nil
			return nil
		}
		state.Offset = consumed
		state.Parser = parser.State
		fb.State = state
		res, err := st.Apply(fb)
		if err != nil {
			return err
		}
		rep.Session = res.Session
		rep.Added += res.Added
		rep.Confirmed += res.Confirmed
		rep.Dups += res.Duplicates
		rep.Replaced += res.Replaced
		rep.Bytes = consumed - in.offset
		if progress != nil {
			progress(rep.Bytes, rep.Added)
		}
		fb = &store.FileBatch{Path: in.key}
		pendingBytes = 0
		return nil
	}
	var line []byte
	var err error
	neverHeader := false // the unfinished first line can never become a session header
	for {
		line, err = readLine(r, line[:0])
		if errors.Is(err, errLineTooLong) {
			// Skip the rest of the oversize line, hashing it: it is the
			// last line read when nothing follows yet, and the next read
			// checks that line to tell an append from a rewrite.
			th := fnv.New64a()
			th.Write(line)
			n, complete, serr := skipLine(r, th)
			if in.member && serr != nil {
				return fmt.Errorf("read %s %s at byte %d: %w", what, in.key, consumed, serr)
			}
			if !in.member && (serr != nil || !complete) {
				// The long line is not finished: leave it for later.
				rep.Pending = in.size - consumed
				break
			}
			consumed += int64(len(line)) + n
			state.TailHash, state.TailLen = th.Sum64(), len(line)+int(n)
			parser.State.Line++
			state.Skipped++
			p := Problem{File: in.key, Line: parser.State.Line, Reason: fmt.Sprintf("line longer than %d MiB; skipped", MaxLineBytes>>20)}
			state.LastError = p.String()
			rep.Problems = append(rep.Problems, p)
			if !complete {
				break // the member ends inside the long line
			}
			continue
		}
		last := false
		if err == io.EOF {
			if !in.member || len(line) == 0 {
				// A file's last line without its newline may be half written.
				rep.Pending = int64(len(line))
				neverHeader = !headerOK && !couldBeHeader(line)
				break
			}
			last = true // the member is complete: a last line without its newline is still a line
		} else if err != nil {
			return fmt.Errorf("read %s %s at byte %d: %w", what, in.key, consumed, err)
		}
		n := int64(len(line))
		if !last {
			n++
		}
		content := bytes.TrimSuffix(line, []byte{'\r'})
		h, e, perr := parser.Line(content)
		switch {
		case errors.Is(perr, journal.ErrNoHeader):
			rep.Problems = append(rep.Problems, Problem{File: in.key, Line: 1, Reason: perr.Error() + "; the " + unit + " is not read", Unread: true})
			return nil
		case perr != nil:
			var le *journal.LineError
			reason := perr.Error()
			ln := parser.State.Line
			if errors.As(perr, &le) {
				reason, ln = le.Reason, le.Line
			}
			p := Problem{File: in.key, Line: ln, Reason: reason}
			rep.Problems = append(rep.Problems, p)
			state.Skipped++
			state.LastError = p.String()
		case h != nil:
			fb.Header = h
			headerOK = true
		case e != nil:
			fb.Entries = append(fb.Entries, e)
			pendingBytes += len(e.Raw)
		}
		if consumed == 0 {
			// The file's first line, whatever it is (Pi reads past a blank
			// or broken first line to the header): the next read compares
			// it to tell an append from a rewrite.
			state.HeadHash = hash(line)
		}
		consumed += n
		state.TailHash, state.TailLen = hash(line), int(n)
		if pendingBytes >= batchBytes || len(fb.Entries) >= batchEntries {
			if err := flush(); err != nil {
				return err
			}
		}
		if last {
			break
		}
	}
	if !headerOK && len(rep.Problems) > firstProblem {
		// Not a journal at all (a page, a log): one problem for the file,
		// not one per line.
		n := len(rep.Problems) - firstProblem
		rep.Problems = append(rep.Problems[:firstProblem], Problem{File: in.key, Unread: true,
			Reason: fmt.Sprintf("no Pi session header in %s: not a Pi journal; the %s is not read", firstLines(n), unit)})
	} else if neverHeader && len(rep.Problems) == firstProblem {
		// Nothing but an unfinished line that no writer of a journal would
		// leave: said now, not kept waiting for a line end.
		rep.Problems = append(rep.Problems, Problem{File: in.key, Unread: true,
			Reason: fmt.Sprintf("no Pi session header: its first %d bytes, without a line end, are binary data or too long for one; not a Pi journal; the %s is not read", len(line), unit)})
	}
	return flush()
}

var errLineTooLong = errors.New("line too long")

// maxHeaderBytes bounds a session header line: Pi's is a few hundred bytes
// (an id, a time, a working directory).
const maxHeaderBytes = 64 << 10

// couldBeHeader reports whether an unfinished first line may still become
// a session header once its writer finishes it: it is not too long for
// one, and holds no byte JSON text cannot (a control character, invalid
// UTF-8 aside, which is checked when the line is complete).
func couldBeHeader(line []byte) bool {
	if len(line) > maxHeaderBytes {
		return false
	}
	for _, c := range line {
		if c < 0x20 && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// readLine reads one '\n'-terminated line without its newline. At EOF it
// returns the partial line and io.EOF.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			return append(buf, chunk...), errLineTooLong
		}
		buf = append(buf, chunk...)
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

// skipLine discards up to and including the next newline, writing what it
// discards, but for the newline, to h.
func skipLine(r *bufio.Reader, h io.Writer) (int64, bool, error) {
	var n int64
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if err == nil {
			h.Write(chunk[:len(chunk)-1])
			return n, true, nil
		}
		h.Write(chunk)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			return n, false, nil
		}
		return n, false, err
	}
}

func hash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// isRewritten reports whether the bytes the store already read are no
// longer what the file holds: it is shorter, or its header line or the last
// line read changed.
func isRewritten(f *os.File, size int64, prev *store.FileState) (bool, error) {
	if size < prev.Offset {
		return true, nil
	}
	if prev.Offset == 0 {
		return false, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 8<<10)
	head, err := readLine(r, nil)
	if err != nil && !errors.Is(err, errLineTooLong) {
		return true, nil
	}
	if hash(head) != prev.HeadHash {
		return true, nil
	}
	if prev.TailLen > 0 {
		h, nl, err := hashSpan(io.NewSectionReader(f, prev.Offset-int64(prev.TailLen), int64(prev.TailLen)), int64(prev.TailLen))
		if err != nil {
			return false, err
		}
		if !nl || h != prev.TailHash {
			return true, nil
		}
	}
	return false, nil
}

// hashSpan hashes the next n bytes of r as hash does a line: without a final
// newline, which it reports. It reads in pieces: the last line read may be
// one of tens of megabytes.
func hashSpan(r io.Reader, n int64) (h uint64, newline bool, err error) {
	f := fnv.New64a()
	if n <= 0 {
		return f.Sum64(), false, nil
	}
	if _, err := io.CopyN(f, r, n-1); err != nil {
		return 0, false, err
	}
	var last [1]byte
	if _, err := io.ReadFull(r, last[:]); err != nil {
		return 0, false, err
	}
	if last[0] != '\n' {
		f.Write(last[:])
	}
	return f.Sum64(), last[0] == '\n', nil
}

// firstLines names the first n lines of a file.
func firstLines(n int) string {
	if n == 1 {
		return "its first line"
	}
	return fmt.Sprintf("its first %d lines", n)
}
