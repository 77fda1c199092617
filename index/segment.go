package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
)

// A file of postings covers an aligned range of seqs, [lo, lo+span-1],
// span the index's run span (a run, written when the open run in memory
// fills) or its segment span (a segment, merged from the runs it covers). For every byte
// trigram some text in the range holds, it lists the entries that hold it
// as offsets from lo, in one container: a bitmap of span bits when at least
// one entry in 16 holds it, else the offsets' gaps as uvarints.
//
// Layout, little-endian:
//
//	header  magic "PIHGRAMS", version u32, keys u32, lo u64, span u32, covered u32
//	dir     keys x (key u32, count u32, offset u32, crc u32), sorted by key
//	pages   a crc u32 for each page of dirPage directory entries
//	bodies  the containers, each at its offset from the bodies' start
//	trailer length of the bodies u32, crc of header and pages u32, magic "GEND"
//
// Checksums are Castagnoli CRCs. A container's and a directory page's are
// checked the first time a lookup in this process answers from them (a
// lookup reads a few pages, and a one-shot search should not read every
// directory whole; the first key of each page, which a lookup may read
// to pick a page, is not an answer); the header's when the file is first
// used. A file that
// fails one is read around, then rebuilt from the store.
const (
	fileMagic    = "PIHGRAMS"
	trailerMagic = "GEND"
	headerSize   = 32
	dirEntrySize = 16
	dirPage      = 256 // directory entries a page checksum covers
	trailerSize  = 12
	// FormatVersion is the version of the postings files. A file of
	// another version is deleted and built again from the store.
	FormatVersion = 2
	// DefaultRunSpan and DefaultSegmentSpan are the seqs a run and a
	// segment cover unless Options say otherwise.
	DefaultRunSpan     = 4096
	DefaultSegmentSpan = 65536
	maxSpan            = 65536
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt marks a file that fails its checks.
var errCorrupt = errors.New("corrupt postings file")

// postingFile is an open, mapped file of postings.
type postingFile struct {
	path string
	lo   uint64
	span uint32
	// covered is how many seqs from lo the file answers for: the whole
	// span, but for the open run saved at Close (see saveOpen).
	covered uint32
	data    []byte // the whole file, mapped
	unmap   func() error
	keys    int
	dir     []byte
	pages   []byte // a crc per page of the directory
	bodies  []byte
	// checked: a bit per directory page whose crc was found right;
	// sound: a bit per directory entry whose container's was (decision
	// 450).
	checked, sound bitset

	checkOnce sync.Once
	checkErr  error

	// pageKeys holds the first key of each directory page, each read (not
	// checked) the first time a lookup needs it, as 1<<32 | key (0: not
	// read yet): a lookup searches them, then the one page they name,
	// instead of probing pages across the whole directory, and the keys
	// every lookup passes stay together in a few cache lines.
	pageKeys []atomic.Uint64
}

// bitset is a set of small numbers that goroutines add to at once.
type bitset []atomic.Uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i/64].Load()&(1<<(i%64)) != 0 }
func (b bitset) add(i int)      { b[i/64].Or(1 << (i % 64)) }

// pageKey returns the first key of directory page p, reading it into
// pageKeys the first time.
func (f *postingFile) pageKey(p int) uint32 {
	v := f.pageKeys[p].Load()
	if v == 0 {
		v = 1<<32 | uint64(f.keyAt(p*dirPage))
		f.pageKeys[p].Store(v)
	}
	return uint32(v)
}

// hi is the last seq the file covers.
func (f *postingFile) hi() uint64 { return f.lo + uint64(f.span) - 1 }

// fileName is the name of the file covering span seqs from lo.
func fileName(lo uint64, span uint32) string {
	return fmt.Sprintf("pg-%012d-%05d.pg", lo, span)
}

// openFile maps the file at path and checks its header and trailer (the
// directory's crc is checked at first use, see check). A file of another
// format version fails with errOldFormat.
func openFile(path string) (*postingFile, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	f := &postingFile{path: path, data: data, unmap: unmap}
	if err := f.parse(); err != nil {
		unmap()
		return nil, fmt.Errorf("index: %s: %w", filepath.Base(path), err)
	}
	return f, nil
}

// errOldFormat marks a file written by another format version.
var errOldFormat = errors.New("written by another format version")

func (f *postingFile) parse() error {
	d := f.data
	if len(d) < headerSize+trailerSize || string(d[:8]) != fileMagic || string(d[len(d)-4:]) != trailerMagic {
		return fmt.Errorf("%w: no header or trailer", errCorrupt)
	}
	if v := binary.LittleEndian.Uint32(d[8:]); v != FormatVersion {
		return fmt.Errorf("%w (%d, this build reads %d)", errOldFormat, v, FormatVersion)
	}
	f.keys = int(binary.LittleEndian.Uint32(d[12:]))
	f.lo = binary.LittleEndian.Uint64(d[16:])
	f.span = binary.LittleEndian.Uint32(d[24:])
	f.covered = binary.LittleEndian.Uint32(d[28:])
	if f.covered == 0 || f.covered > f.span {
		return fmt.Errorf("%w: it covers %d of its %d seqs", errCorrupt, f.covered, f.span)
	}
	if f.span < 16 || f.span > maxSpan || f.span&(f.span-1) != 0 || f.lo%uint64(f.span) != 1 {
		return fmt.Errorf("%w: range %d+%d is not aligned", errCorrupt, f.lo, f.span)
	}
	npages := (f.keys + dirPage - 1) / dirPage
	dirEnd := headerSize + f.keys*dirEntrySize
	pagesEnd := dirEnd + 4*npages
	nb := int(binary.LittleEndian.Uint32(d[len(d)-trailerSize:]))
	if f.keys < 0 || pagesEnd+nb+trailerSize != len(d) {
		return fmt.Errorf("%w: sizes do not add up", errCorrupt)
	}
	f.dir = d[headerSize:dirEnd]
	f.pages = d[dirEnd:pagesEnd]
	f.bodies = d[pagesEnd : pagesEnd+nb]
	f.checked, f.sound = newBitset(npages), newBitset(f.keys)
	f.pageKeys = make([]atomic.Uint64, npages)
	return nil
}

// check verifies the crc of the header and the page checksums, once.
func (f *postingFile) check() error {
	f.checkOnce.Do(func() {
		d := f.data
		want := binary.LittleEndian.Uint32(d[len(d)-8:])
		crc := crc32.Update(crc32.Checksum(d[:headerSize], castagnoli), castagnoli, f.pages)
		if crc != want {
			f.checkErr = fmt.Errorf("index: %s: %w: its header fails its checksum", filepath.Base(f.path), errCorrupt)
		}
	})
	return f.checkErr
}

// checkPage verifies the crc of the directory page holding entry i, the
// first time it is read.
func (f *postingFile) checkPage(i int) error {
	p := i / dirPage
	if f.checked.has(p) {
		return nil
	}
	if err := f.check(); err != nil {
		return err
	}
	end := min((p+1)*dirPage, f.keys) * dirEntrySize
	if crc32.Checksum(f.dir[p*dirPage*dirEntrySize:end], castagnoli) != binary.LittleEndian.Uint32(f.pages[4*p:]) {
		return fmt.Errorf("index: %s: %w: page %d of its directory fails its checksum", filepath.Base(f.path), errCorrupt, p)
	}
	f.checked.add(p)
	return nil
}

// checkAll verifies every page of the directory.
func (f *postingFile) checkAll() error {
	for i := 0; i < f.keys; i += dirPage {
		if err := f.checkPage(i); err != nil {
			return err
		}
	}
	return f.check()
}

// container is one trigram's entries in a file: a bitmap of span bits or
// a list of uvarint gaps.
type container struct {
	count int
	body  []byte
	dense bool
	span  uint32 // the file's: no offset reaches it
}

// find returns the container of key, false when no entry of the file
// holds it.
func (f *postingFile) find(key uint32) (container, bool, error) {
	i, err := f.search(key)
	if err != nil || i == f.keys || f.keyAt(i) != key {
		return container{}, false, err
	}
	c, err := f.entry(i)
	return c, err == nil, err
}

// search returns the index of the first directory entry whose key is key
// or more (f.keys when none is), answering only from pages it checked
// (the page keys it may read first are not checked).
func (f *postingFile) search(key uint32) (int, error) {
	if i, ok, err := f.searchPage(key); ok || err != nil {
		return i, err
	}
	return f.searchWhole(key)
}

// searchPage is search through the page keys: it picks the page whose
// first key is the last at or below key, checks it and searches it alone
// (and the next page's first entry, when key lies past its last). The
// page keys are not checked, only the pages: an answer the checked
// entries do not prove (the page picked starts above key, or the next
// one below it) is not given (ok false), and searchWhole answers.
func (f *postingFile) searchPage(key uint32) (i int, ok bool, err error) {
	npages := len(f.pageKeys)
	if npages == 0 {
		return 0, false, nil
	}
	p := max(sort.Search(npages, func(j int) bool { return f.pageKey(j) > key })-1, 0)
	lo, hi := p*dirPage, min((p+1)*dirPage, f.keys)
	if err := f.checkPage(lo); err != nil {
		return 0, false, err
	}
	if p > 0 && f.keyAt(lo) > key {
		return 0, false, nil // an earlier page may hold it
	}
	i = lo + sort.Search(hi-lo, func(j int) bool { return f.keyAt(lo+j) >= key })
	if i < hi || hi == f.keys {
		return i, true, nil
	}
	// Past the page's last key: the answer is the next page's first
	// entry, when that is at or above key.
	if err := f.checkPage(hi); err != nil {
		return 0, false, err
	}
	if f.keyAt(hi) < key {
		return 0, false, nil
	}
	return hi, true, nil
}

// searchWhole is search by bisecting the whole directory.
func (f *postingFile) searchWhole(key uint32) (int, error) {
	i, j := 0, f.keys
	for i < j {
		h := int(uint(i+j) >> 1)
		if err := f.checkPage(h); err != nil {
			return 0, err
		}
		if f.keyAt(h) < key {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < f.keys {
		if err := f.checkPage(i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// keyAt is the key of directory entry i.
func (f *postingFile) keyAt(i int) uint32 {
	return binary.LittleEndian.Uint32(f.dir[i*dirEntrySize:])
}

// entry returns the container of directory entry i, checked against its
// checksum the first time it is read.
func (f *postingFile) entry(i int) (container, error) {
	if err := f.checkPage(i); err != nil {
		return container{}, err
	}
	if i+1 < f.keys {
		if err := f.checkPage(i + 1); err != nil {
			return container{}, err
		}
	}
	e := f.dir[i*dirEntrySize:]
	count := int(binary.LittleEndian.Uint32(e[4:]))
	off := int(binary.LittleEndian.Uint32(e[8:]))
	end := len(f.bodies)
	if i+1 < f.keys {
		end = int(binary.LittleEndian.Uint32(f.dir[(i+1)*dirEntrySize+8:]))
	}
	key := binary.LittleEndian.Uint32(e)
	if off > end || end > len(f.bodies) || i+1 < f.keys && f.keyAt(i+1) <= key {
		return container{}, fmt.Errorf("index: %s: %w: the directory is out of order at key %x", filepath.Base(f.path), errCorrupt, key)
	}
	body := f.bodies[off:end]
	if !f.sound.has(i) {
		if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(e[12:]) {
			return container{}, fmt.Errorf("index: %s: %w: the container of key %x fails its checksum", filepath.Base(f.path), errCorrupt, key)
		}
		f.sound.add(i)
	}
	dense := isDense(count, f.span)
	if dense && len(body) != int(f.span/8) {
		return container{}, fmt.Errorf("index: %s: %w: the bitmap of key %x has %d bytes", filepath.Base(f.path), errCorrupt, key, len(body))
	}
	return container{count: count, body: body, dense: dense, span: f.span}, nil
}

// isDense says whether a container of count entries in a file of span seqs
// is a bitmap.
func isDense(count int, span uint32) bool { return count >= int(span/16) }

// has reports whether the dense container holds offset off.
func (c container) has(off uint32) bool {
	return c.body[off>>3]&(1<<(off&7)) != 0
}

// decode appends the container's offsets to out, ascending.
func (c container) decode(out []uint16) ([]uint16, error) {
	if c.dense {
		for i := 0; i < len(c.body); i += 8 {
			var w uint64
			if i+8 <= len(c.body) {
				w = binary.LittleEndian.Uint64(c.body[i:])
			} else {
				var tail [8]byte
				copy(tail[:], c.body[i:])
				w = binary.LittleEndian.Uint64(tail[:])
			}
			for w != 0 {
				out = append(out, uint16(i*8+bits.TrailingZeros64(w)))
				w &= w - 1
			}
		}
		return out, nil
	}
	prev := uint64(0)
	b := c.body
	for len(b) > 0 {
		g, n := binary.Uvarint(b)
		if n <= 0 || prev+g >= uint64(c.span) {
			return out, fmt.Errorf("index: %w: a list of offsets does not decode", errCorrupt)
		}
		prev += g
		out = append(out, uint16(prev))
		b = b[n:]
	}
	return out, nil
}

// close unmaps the file.
func (f *postingFile) close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap = nil
	return err
}

// fileWriter lays out a file of postings from keys in ascending order.
type fileWriter struct {
	lo      uint64
	span    uint32
	covered uint32 // seqs from lo it answers for (see postingFile.covered)
	keys    int
	dir     []byte
	bodies  []byte
	bitmap  []byte
}

func newFileWriter(lo uint64, span uint32) *fileWriter {
	return &fileWriter{lo: lo, span: span, covered: span, bitmap: make([]byte, span/8)}
}

// add appends key's container; offs are ascending offsets from lo.
func (w *fileWriter) add(key uint32, offs []uint16) {
	start := len(w.bodies)
	if isDense(len(offs), w.span) {
		clear(w.bitmap)
		for _, o := range offs {
			w.bitmap[o>>3] |= 1 << (o & 7)
		}
		w.bodies = append(w.bodies, w.bitmap...)
	} else {
		prev := uint16(0)
		for _, o := range offs {
			w.bodies = binary.AppendUvarint(w.bodies, uint64(o-prev))
			prev = o
		}
	}
	var e [dirEntrySize]byte
	binary.LittleEndian.PutUint32(e[0:], key)
	binary.LittleEndian.PutUint32(e[4:], uint32(len(offs)))
	binary.LittleEndian.PutUint32(e[8:], uint32(start))
	binary.LittleEndian.PutUint32(e[12:], crc32.Checksum(w.bodies[start:], castagnoli))
	w.dir = append(w.dir, e[:]...)
	w.keys++
}

// write writes the file into dir under a temporary name, syncs it and
// renames it into place, so that a crash leaves the whole file or none.
func (w *fileWriter) write(dir string) (string, error) {
	var h [headerSize]byte
	copy(h[:], fileMagic)
	binary.LittleEndian.PutUint32(h[8:], FormatVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(w.keys))
	binary.LittleEndian.PutUint64(h[16:], w.lo)
	binary.LittleEndian.PutUint32(h[24:], w.span)
	binary.LittleEndian.PutUint32(h[28:], w.covered)
	pages := make([]byte, 0, 4*((w.keys+dirPage-1)/dirPage))
	for p := 0; p*dirPage < w.keys; p++ {
		end := min((p+1)*dirPage, w.keys) * dirEntrySize
		pages = binary.LittleEndian.AppendUint32(pages, crc32.Checksum(w.dir[p*dirPage*dirEntrySize:end], castagnoli))
	}
	crc := crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, pages)
	var t [trailerSize]byte
	binary.LittleEndian.PutUint32(t[0:], uint32(len(w.bodies)))
	binary.LittleEndian.PutUint32(t[4:], crc)
	copy(t[8:], trailerMagic)
	if uint64(len(w.bodies)) > 0xFFFFFFFF {
		return "", fmt.Errorf("index: postings of seqs %d+%d exceed 4 GB", w.lo, w.span)
	}
	name := fileName(w.lo, w.span)
	if w.covered < w.span {
		name = openName
	}
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("index: write postings: %w", err)
	}
	for _, part := range [][]byte{h[:], w.dir, pages, w.bodies, t[:]} {
		if _, err = f.Write(part); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("index: write postings %s: %w", filepath.Base(path), err)
	}
	return path, nil
}

// writeTo writes the lists as the file of span seqs from lo.
func (l *postingLists) writeTo(dir string, lo uint64, span uint32) (string, error) {
	return l.writeCovering(dir, lo, span, span)
}

// writeCovering writes the lists as a file of span seqs from lo that
// answers for the first covered of them (the open run's, when fewer than
// span: see Index.saveOpen).
func (l *postingLists) writeCovering(dir string, lo uint64, span, covered uint32) (string, error) {
	w := newFileWriter(lo, span)
	w.covered = covered
	l.each(func(k uint32, offs []uint16) error {
		w.add(k, offs)
		return nil
	})
	return w.write(dir)
}

// openName is the file the open run is saved to at Close.
const openName = "open.pg"
