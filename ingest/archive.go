package ingest

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/pi-history/pi-history/journal"
	"github.com/pi-history/pi-history/store"
)

// IsArchive reports whether path names a session archive as 'pi-history
// export' writes them: a zstd-compressed tar (.tar.zst or .tzst).
func IsArchive(path string) bool {
	p := strings.ToLower(path)
	return strings.HasSuffix(p, ".tar.zst") || strings.HasSuffix(p, ".tzst")
}

// Archive reads every journal member (a regular file named *.jsonl) of a
// zstd-compressed tar archive into the store, streaming: nothing is
// unpacked to disk and memory does not grow with the archive. Each member
// is read like a journal file whose path is "ARCHIVE!MEMBER" (ARCHIVE made
// absolute); that key holds its read position, so importing the same
// archive again adds nothing, and an archive whose member grew adds only
// the new lines. A member whose already-read bytes changed replaces its
// session's entries, as a rewritten file does. Other members are ignored.
//
// progress, if not nil, gets the compressed bytes read so far and the
// entries added so far. It returns one report per journal member; an error
// (unreadable or truncated archive, store failure) stops the reading, and
// what was stored before it stays stored.
func Archive(st *store.Store, path string, progress Progress) ([]FileReport, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	added := 0
	reps, redo, err := readArchive(st, abs, nil, progress, &added)
	if err != nil || len(redo) == 0 {
		return reps, err
	}
	// Members whose stored prefix changed: read them again from the start.
	again, _, err := readArchive(st, abs, redo, progress, &added)
	for _, r := range again {
		r.Rewritten = true
		reps = append(reps, r)
	}
	return reps, err
}

// readArchive reads the archive's journal members (only those in only, with
// their old entries replaced, when only is set). It returns the members it
// found rewritten instead of reading them.
func readArchive(st *store.Store, path string, only map[string]bool, progress Progress, added *int) ([]FileReport, map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open archive %s: %w", path, err)
	}
	defer f.Close()
	cr := &countReader{r: f}
	zr, err := zstd.NewReader(bufio.NewReaderSize(cr, 256<<10), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, nil, fmt.Errorf("open archive %s: %w", path, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var reps []FileReport
	redo := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return reps, redo, nil
		}
		if err != nil {
			return reps, redo, fmt.Errorf("read archive %s (after %d members): %w; is it a .tar.zst that pi-history export wrote, and complete?", path, len(reps), err)
		}
		if hdr.Typeflag != tar.TypeReg || !strings.HasSuffix(hdr.Name, ".jsonl") {
			continue
		}
		key := path + "!" + hdr.Name
		if only != nil && !only[key] {
			continue
		}
		base := *added
		rep, rewritten, err := member(st, key, tr, hdr.Size, only != nil, func(_ int64, n int) {
			if progress != nil {
				progress(cr.n, base+n)
			}
		})
		if rewritten {
			redo[key] = true
			continue
		}
		*added += rep.Added
		reps = append(reps, rep)
		if err != nil {
			return reps, redo, err
		}
		if progress != nil {
			progress(cr.n, *added)
		}
	}
}

// member reads one journal member from r (size bytes), resuming after what
// the store already read under key. It reports rewritten (and reads
// nothing) when the bytes read before are not what the member holds now.
func member(st *store.Store, key string, r io.Reader, size int64, replace bool, progress Progress) (FileReport, bool, error) {
	rep := FileReport{Path: key, Rewritten: replace}
	var prev *store.FileState
	if !replace {
		var err error
		prev, err = st.FileState(key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return rep, false, err
		}
	}
	br := bufio.NewReaderSize(r, 1<<20)
	var parser journal.Parser
	var state store.FileState
	var consumed int64
	if prev != nil {
		ok, err := samePrefix(br, size, prev)
		if err != nil {
			return rep, false, fmt.Errorf("read archive member %s: %w", key, err)
		}
		if !ok {
			return rep, true, nil
		}
		parser.State, state, consumed = prev.Parser, *prev, prev.Offset
		rep.Session = prev.Session
		if size == prev.Offset {
			return rep, false, nil
		}
	}
	in := lines{key: key, size: size, offset: consumed, replace: replace, parser: parser, state: state, member: true}
	err := readLines(st, br, in, &rep, progress)
	return rep, false, err
}

// samePrefix reads the first prev.Offset bytes of a member and reports
// whether they are the bytes read before: the same header line and the same
// last line. It consumes exactly prev.Offset bytes when it reports true.
func samePrefix(br *bufio.Reader, size int64, prev *store.FileState) (bool, error) {
	if size < prev.Offset {
		return false, nil
	}
	if prev.Offset == 0 {
		return true, nil
	}
	head, err := readLine(br, nil)
	read := int64(len(head)) + 1
	if err == io.EOF {
		read-- // a member that is only a header without its newline
	} else if err != nil {
		return false, nil
	}
	if hash(head) != prev.HeadHash {
		return false, nil
	}
	tailStart := prev.Offset - int64(prev.TailLen)
	if tailStart < read { // the header was the last line read
		return read == prev.Offset, nil
	}
	if _, err := io.CopyN(io.Discard, br, tailStart-read); err != nil {
		return endsEarly(err)
	}
	h, _, err := hashSpan(br, int64(prev.TailLen))
	if err != nil {
		return endsEarly(err)
	}
	return h == prev.TailHash, nil
}

// endsEarly: a member (or compressed journal, whose length is known only
// at its end) shorter than what was read before is not the same prefix.
func endsEarly(err error) (bool, error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return false, nil
	}
	return false, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// IsCompressedJournal reports whether path names one journal compressed
// with zstd, as 'pi-history export SESSION --zstd' writes it (.jsonl.zst).
func IsCompressedJournal(path string) bool {
	return strings.HasSuffix(strings.ToLower(path), ".jsonl.zst")
}

// CompressedJournal reads a zstd-compressed journal into the store,
// streaming, as Archive reads one member: the file is whole (a last line
// without its newline counts), its key is its absolute path, and importing
// it again adds only what it holds beyond what was read before (a file
// whose read part changed replaces its session's entries).
func CompressedJournal(st *store.Store, path string, progress Progress) (FileReport, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return FileReport{Path: path}, err
	}
	read := func(replace bool) (FileReport, bool, error) {
		f, err := os.Open(abs)
		if err != nil {
			return FileReport{Path: abs}, false, err
		}
		defer f.Close()
		zr, err := zstd.NewReader(bufio.NewReaderSize(f, 256<<10), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return FileReport{Path: abs}, false, fmt.Errorf("open %s: %w", abs, err)
		}
		defer zr.Close()
		// Its length is known only at its end: as long as can be, for the
		// checks that compare it with what was read before.
		rep, rewritten, err := member(st, abs, zr, math.MaxInt64, replace, progress)
		if err != nil {
			err = fmt.Errorf("%w; is it a journal that 'pi-history export --zstd' wrote, and complete?", err)
		}
		return rep, rewritten, err
	}
	rep, rewritten, err := read(false)
	if rewritten && err == nil {
		rep, _, err = read(true)
		rep.Rewritten = true
	}
	return rep, err
}
