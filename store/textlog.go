package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Texts stored once live in a file of their own beside Pebble's, appended
// to and never rewritten (decision 390): a reference holds a text's offset
// and length, so reading it touches exactly its bytes (in place where the
// file is mapped, else with one positioned read), where a Pebble value
// costs a seek through the table's index and a copy and checksum of the
// whole 32 KiB block around it (decisions 390 and 430).
//
// Each record is the packed text's length (4 bytes, little-endian), its
// CRC-32C (4 bytes), then the packed text (see packText). Durability follows Pebble's: the records a batch refers
// to are written before the batch is committed, and synced before it when
// the commit is synced, and before any flush of Pebble's memtables (a bulk
// store's commits are made durable by flushes). A crash can leave records
// no reference names at the end of the file; they are never read.
const textLogName = "texts.pack"

// formatTextFile is the format of a store made by a build that writes
// the texts it stores once to the text file (older stores keep their X
// values, read as they are; new texts go to the file in either).
const formatTextFile = 5

// logRefMark is the first byte of a reference into the text file. A
// reference to an X key starts with the top byte of a seq, which is 0.
const logRefMark = 0x80

// maxLogOffset is the largest offset a reference holds (7 bytes).
const maxLogOffset = 1<<56 - 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordHeader is the length of a record's length and checksum.
const recordHeader = 8

// inLog reports whether r names a text in the text file.
func (r *TextRef) inLog() bool { return r[0] == logRefMark }

// logAt returns the offset and payload length r names in the text file.
func (r *TextRef) logAt() (int64, int) {
	var b [8]byte
	copy(b[1:], r[1:8])
	return int64(binary.BigEndian.Uint64(b[:])), int(binary.BigEndian.Uint32(r[8:12]))
}

// textLog is a store's file of texts stored once.
type textLog struct {
	fs   vfs.FS
	path string

	mu      sync.Mutex   // writes and syncs
	size    atomic.Int64 // the file's length: where the next record goes (changed under mu and wmu)
	dirty   bool         // written since the last sync
	pending []byte       // records added, not yet written (writers hold wmu)
	// failed is the first failed write or sync: after it the page cache
	// may hold bytes the disk lost, so every later write and sync fails
	// with it until the process opens the store again.
	failed error

	fmu sync.RWMutex // f's and mapped's lifetimes: readers hold it shared, close and remap alone
	f   vfs.File     // nil in a read-only store without the file
	// mapped maps the file from its start (past its end too, for the
	// records to come, in a store that writes), nil where it cannot be
	// mapped. A record within it is read in place, without a system call
	// and a copy (decision 430).
	mapped []byte
}

// minMapAhead is the least length a writable text file is mapped to: it
// is mapped to twice its length, and again each time it outgrows that.
const minMapAhead = 64 << 20

// mapLength is the length to map a text file of size bytes to.
func mapLength(size int64, readOnly bool) int64 {
	if readOnly {
		return size
	}
	return max(2*size, minMapAhead)
}

// openTextLog opens (or, unless readOnly, creates) the text file in dir,
// mapped unless told not to (see mapped).
func openTextLog(fs vfs.FS, dir string, readOnly, noMap bool) (*textLog, error) {
	l := &textLog{fs: fs, path: filepath.Join(dir, textLogName)}
	if readOnly {
		f, err := fs.Open(l.path)
		if errors.Is(err, os.ErrNotExist) {
			return l, nil
		}
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", l.path, err)
		}
		l.f = f
	} else {
		_, statErr := fs.Stat(l.path)
		f, err := fs.OpenReadWrite(l.path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", l.path, err)
		}
		l.f = f
		if errors.Is(statErr, os.ErrNotExist) {
			// The new file's name must survive a power cut as well.
			if err := syncDir(fs, dir); err != nil {
				f.Close()
				return nil, fmt.Errorf("store: create %s: %w", l.path, err)
			}
		}
	}
	st, err := l.f.Stat()
	if err != nil {
		l.f.Close()
		return nil, fmt.Errorf("store: open %s: %w", l.path, err)
	}
	l.size.Store(st.Size())
	if !noMap {
		l.mapped = mapText(l.f, mapLength(st.Size(), readOnly))
	}
	return l, nil
}

// syncDir syncs directory dir.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// add queues packed (see packText) as a record and returns its reference;
// sum is the text's SHA-256. The record reaches the file at the next
// write; a writer holding wmu calls both.
func (l *textLog) add(packed []byte, sum []byte) (TextRef, error) {
	off := l.size.Load() + int64(len(l.pending))
	if off > maxLogOffset || uint64(len(packed)) > 1<<32-1 {
		return TextRef{}, fmt.Errorf("store: %s is full (%d bytes) or the text too long (%d bytes)", l.path, off, len(packed))
	}
	var ref TextRef
	binary.BigEndian.PutUint64(ref[:8], uint64(off))
	ref[0] = logRefMark
	binary.BigEndian.PutUint32(ref[8:12], uint32(len(packed)))
	copy(ref[12:], sum[:4])
	l.pending = binary.LittleEndian.AppendUint32(l.pending, uint32(len(packed)))
	l.pending = binary.LittleEndian.AppendUint32(l.pending, crc32.Checksum(packed, castagnoli))
	l.pending = append(l.pending, packed...)
	return ref, nil
}

// write writes the queued records, and syncs the file when sync is set.
func (l *textLog) write(sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	if len(l.pending) > 0 {
		if l.f == nil {
			return fmt.Errorf("store: %s is open for reading only", l.path)
		}
		if _, err := l.f.WriteAt(l.pending, l.size.Load()); err != nil {
			// Nothing refers to these bytes yet: the batch is refused, and
			// the records are written again with the next one.
			return fmt.Errorf("store: write texts to %s: %w", l.path, err)
		}
		size := l.size.Add(int64(len(l.pending)))
		l.pending = l.pending[:0]
		l.dirty = true
		if l.mapped != nil && size > int64(len(l.mapped)) {
			// Mapped again, or, where that fails (address space), the
			// old mapping kept: records past it are read positioned.
			if m := mapText(l.f, mapLength(size, false)); m != nil {
				l.fmu.Lock()
				unmapText(l.mapped)
				l.mapped = m
				l.fmu.Unlock()
			}
		}
	}
	if sync {
		return l.syncLocked()
	}
	return nil
}

// syncWritten syncs what was written, for a flush of Pebble's memtables
// about to make references to it durable.
func (l *textLog) syncWritten() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked()
}

// syncLocked syncs the file if it was written since the last sync; l.mu
// is held. A failed sync is kept (see failed).
func (l *textLog) syncLocked() error {
	if l.failed != nil {
		return l.failed
	}
	if !l.dirty || l.f == nil {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		l.failed = fmt.Errorf("store: sync %s: %w (texts written since the last sync may be lost: restart to go on)", l.path, err)
		return l.failed
	}
	l.dirty = false
	return nil
}

// broken reports whether a write or sync failed in a way only a restart
// clears (see failed).
func (l *textLog) broken() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed != nil
}

// bytes is the file's length.
func (l *textLog) bytes() int64 { return l.size.Load() }

// read returns the text ref names, reading its record into *raw and
// unpacking it into *buf (both grown as needed).
func (l *textLog) read(ref *TextRef, raw, buf *[]byte) ([]byte, error) {
	off, n := ref.logAt()
	l.fmu.RLock()
	defer l.fmu.RUnlock()
	if l.f == nil {
		return nil, fmt.Errorf("store: a text at offset %d of %s, which does not exist or is closed: the store is damaged (rebuild it with 'pi-history import')", off, l.path)
	}
	if n < 0 || n > math.MaxInt-recordHeader || off+int64(recordHeader+n) > l.size.Load() {
		return nil, fmt.Errorf("store: the text at offset %d of %s lies past its end: the store is damaged (rebuild it with 'pi-history import')", off, l.path)
	}
	if end := off + int64(recordHeader+n); end <= int64(len(l.mapped)) {
		return l.readMapped(l.mapped[off:end:end], off, buf)
	}
	if cap(*raw) < recordHeader+n {
		*raw = make([]byte, recordHeader+n)
	}
	rec := (*raw)[:recordHeader+n]
	if _, err := l.f.ReadAt(rec, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("store: the text at offset %d of %s lies past its end: the store is damaged (rebuild it with 'pi-history import')", off, l.path)
		}
		return nil, fmt.Errorf("store: read the text at offset %d of %s: %w", off, l.path, err)
	}
	return l.unpackRecord(rec, off, buf)
}

// readMapped is read of a record in the mapped file (fmu held shared).
// The text is unpacked into *buf, or copied there when stored as it is:
// nothing returned points into the mapping, which a close or a remap
// ends. A page the kernel cannot give (the file cut short by another
// program, a failing disk) is an error, as a positioned read's would be.
func (l *textLog) readMapped(rec []byte, off int64, buf *[]byte) (t []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// Only a fault in the record itself is the file's: any other
			// panic is a bug, and goes on.
			f, fault := r.(interface{ Addr() uintptr })
			start := uintptr(unsafe.Pointer(unsafe.SliceData(rec)))
			if !fault || f.Addr() < start || f.Addr()-start >= uintptr(len(rec)) {
				panic(r)
			}
			t, err = nil, fmt.Errorf("store: read the text at offset %d of %s: the file could not be read where it is mapped (a fault at byte %d of the record): the store is damaged, or its disk failing (rebuild it with 'pi-history import')", off, l.path, f.Addr()-start)
		}
	}()
	if t, err = l.unpackRecord(rec, off, buf); err != nil || len(t) == 0 {
		return t, err
	}
	if cap(*buf) == 0 || &t[0] != &(*buf)[:1][0] {
		if cap(*buf) < len(t) {
			*buf = make([]byte, len(t))
		}
		t = (*buf)[:copy((*buf)[:len(t)], t)]
	}
	return t, nil
}

// unpackRecord checks record rec, read at off, and unpacks its text.
func (l *textLog) unpackRecord(rec []byte, off int64, buf *[]byte) ([]byte, error) {
	n := len(rec) - recordHeader
	if int(binary.LittleEndian.Uint32(rec)) != n || binary.LittleEndian.Uint32(rec[4:]) != crc32.Checksum(rec[recordHeader:], castagnoli) {
		return nil, fmt.Errorf("store: the text at offset %d of %s fails its checksum: the store is damaged (rebuild it with 'pi-history import')", off, l.path)
	}
	t, err := unpackText(rec[recordHeader:], buf)
	if err != nil {
		return nil, fmt.Errorf("store: the text at offset %d of %s: %w", off, l.path, err)
	}
	return t, nil
}

// close closes the file.
func (l *textLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fmu.Lock()
	defer l.fmu.Unlock()
	if l.f == nil {
		return nil
	}
	unmapText(l.mapped)
	l.mapped = nil
	err := l.syncLocked()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// commitWithTexts writes the texts b refers to that the text file does
// not hold yet (synced, unless the store is bulk: see textLogName), then
// commits b as every write is committed. wmu is held.
func (s *Store) commitWithTexts(b *pebble.Batch) error {
	if err := s.texts.write(!s.bulk); err != nil {
		s.faults.stopWrites(err, s.texts.broken())
		return fmt.Errorf("%w: %v (the write was not stored)", ErrWritesStopped, err)
	}
	return s.commitBatch(b, s.syncWrites())
}
