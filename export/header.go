package export

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/pi-history/pi-history/store"
)

// headerLine returns a session's header line exactly as written.
//
// SessionInfo.Header holds it while a session is being stored, but the
// store does not persist that field (it is tagged json:"-"), so a session
// read back has Header "". Then the line is recovered and checked against
// the hash of the header the store keeps in the file's read state: first
// from the journal file (or the archive member) it was read from, then by
// writing the header again from the stored fields the way Pi writes it.
// When no candidate matches the hash (the file is gone and the header had
// an unusual shape) the rebuilt line is used: it has the same id, version,
// time, cwd and parent, which is all Pi reads from a header.
func headerLine(src Source, si *store.SessionInfo) []byte {
	if si.Header != "" {
		return []byte(si.Header)
	}
	var want uint64
	have := false
	if si.File != "" {
		if fs, err := src.FileState(si.File); err == nil && fs.Offset > 0 {
			want, have = fs.HeadHash, true
		}
	}
	if have && si.File != "" {
		if line, err := firstLine(si.File); err == nil && fnv64(line) == want {
			return bytes.TrimSuffix(line, []byte{'\r'})
		}
	}
	cands := rebuiltHeaders(si)
	if have {
		for _, c := range cands {
			if fnv64(c) == want {
				return c
			}
		}
	}
	return cands[0]
}

// firstLine reads the first line of a journal file, or of an archive
// member named "ARCHIVE!MEMBER".
func firstLine(file string) ([]byte, error) {
	archive, member, isMember := strings.Cut(file, "!")
	if !isMember {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readFirstLine(f)
	}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(bufio.NewReader(f), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		if h.Name == member {
			return readFirstLine(tr)
		}
	}
}

func readFirstLine(r io.Reader) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > 1<<20 {
			return nil, errors.New("header line too long")
		}
		if err == nil {
			return line[:len(line)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// rebuiltHeaders writes the header from the stored fields in the shapes Pi
// has used: {"type","version","id","timestamp","cwd"[,"parentSession"]},
// and without "version" for version 1. The most likely comes first.
func rebuiltHeaders(si *store.SessionInfo) [][]byte {
	id := si.ID
	if i := strings.LastIndex(id, "~"); i > 0 && len(id)-i == 9 {
		id = id[:i] // the store's suffix for a second file with the same id
	}
	build := func(withVersion bool) []byte {
		var b bytes.Buffer
		b.WriteString(`{"type":"session"`)
		if withVersion {
			b.WriteString(`,"version":` + strconv.Itoa(max(si.Version, 1)))
		}
		b.WriteString(`,"id":` + jsString(id))
		b.WriteString(`,"timestamp":` + jsString(si.Created))
		b.WriteString(`,"cwd":` + jsString(si.Cwd))
		if si.ParentSession != "" {
			b.WriteString(`,"parentSession":` + jsString(si.ParentSession))
		}
		b.WriteByte('}')
		return b.Bytes()
	}
	if si.Version <= 1 {
		return [][]byte{build(false), build(true)}
	}
	return [][]byte{build(true), build(false)}
}

// jsString encodes s as JavaScript's JSON.stringify does (no HTML escaping).
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	// JSON.stringify leaves U+2028 and U+2029 as they are.
	out = strings.ReplaceAll(out, `\u2028`, "\u2028")
	return strings.ReplaceAll(out, `\u2029`, "\u2029")
}

// fnv64 is the hash package ingest keeps of a file's header line.
func fnv64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
