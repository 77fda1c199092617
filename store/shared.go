package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Texts of at least Options.SharedTextMin bytes are stored once however
// many entries hold them (an agent reads the same file, runs the same
// command, many times): under X<seq:8><sum:8>, where seq is the entry that
// first held the text and sum eight bytes of its SHA-256, with
// H<SHA-256:16> pointing at that key for the writers that meet the text
// again. Each entry holding such a text has a reference, U<seq:8> → the X
// key's 16 bytes, in place of its text T<seq:8>. The short texts lie
// densely in T's blocks, apart from the long ones, and the references in
// blocks of their own, small enough to stay cached.
//
// Shared texts are never rewritten or deleted: an entry that gets other
// text (an edited line) or is dropped only loses its reference, so no
// reference is ever left pointing at another text. A text no entry
// refers to any more stays behind; see docs/decisions/360-texts-stored-once.md.
const (
	tagShared = 'X' // X<seq:8><sum:8>  → a text stored once
	tagSum    = 'H' // H<sha256:16>     → the X key's 16 bytes
	tagRef    = 'U' // U<seq:8>         → the X key's 16 bytes
)

// DefaultSharedTextMin is Options.SharedTextMin when it is 0.
const DefaultSharedTextMin = 1024

// TextRef names a shared text: the seq that first held it and eight bytes
// of its SHA-256. Equal refs are equal texts.
type TextRef [16]byte

// refKey is the key of seq's reference to a shared text.
func refKey(seq uint64) []byte { return seqKey(tagRef, seq) }

func sharedKey(ref []byte) []byte {
	k := make([]byte, 17)
	k[0] = tagShared
	copy(k[1:], ref)
	return k
}

// putText writes seq's searchable text into b: inline when short, else as
// a reference to the text stored once (written now when no entry held it
// before). Whatever seq held before, text or reference, is deleted, unless
// seq is fresh (it never held either).
func (s *Store) putText(b *pebble.Batch, seq uint64, text string, fresh bool) error {
	if s.sharedMin <= 0 || len(text) < s.sharedMin {
		if !fresh {
			if err := b.Delete(refKey(seq), nil); err != nil {
				return err
			}
		}
		return b.Set(seqKey(tagText, seq), []byte(text), nil)
	}
	ref, err := s.share(b, seq, text)
	if err != nil {
		return fmt.Errorf("store: store the text of entry seq %d once: %w", seq, err)
	}
	if !fresh {
		if err := b.Delete(seqKey(tagText, seq), nil); err != nil {
			return err
		}
	}
	return b.Set(refKey(seq), ref[:], nil)
}

// deleteText deletes seq's text or reference into b.
func deleteText(b *pebble.Batch, seq uint64) error {
	if err := b.Delete(seqKey(tagText, seq), nil); err != nil {
		return err
	}
	return b.Delete(refKey(seq), nil)
}

// share returns the reference to text, storing it (as first held by seq)
// when neither the store nor batch b holds it yet. Called with wmu held.
func (s *Store) share(b *pebble.Batch, seq uint64, text string) (TextRef, error) {
	sum := sha256.Sum256([]byte(text))
	var h [16]byte
	copy(h[:], sum[:16])
	if s.sums == nil {
		s.sums = map[[16]byte]TextRef{}
	}
	if ref, ok := s.sums[h]; ok {
		return ref, nil
	}
	hk := append([]byte{tagSum}, h[:]...)
	v, closer, err := s.db.Get(hk)
	switch {
	case err == nil:
		var ref TextRef
		ok := len(v) == len(ref)
		copy(ref[:], v)
		closer.Close()
		if ok {
			s.sums[h] = ref
			return ref, nil
		}
		// A damaged pointer: the text is stored again, and the pointer
		// set to the new copy.
	case !errors.Is(err, pebble.ErrNotFound):
		return TextRef{}, err
	}
	ref, err := s.texts.add(packText(text), sum[:])
	if err != nil {
		return TextRef{}, err
	}
	if err := b.Set(hk, ref[:], nil); err != nil {
		return TextRef{}, err
	}
	s.sums[h] = ref
	return ref, nil
}

// readRef copies v, the value of seq's reference, into ref.
func readRef(seq uint64, v []byte, ref *TextRef) error {
	if len(v) != len(ref) {
		return fmt.Errorf("store: entry seq %d: a text reference of %d bytes instead of %d: the store is damaged (rebuild it with 'pi-history import')", seq, len(v), len(ref))
	}
	copy(ref[:], v)
	return nil
}

// SharedReader reads texts stored once by their references, with one
// iterator made at first use; refs in ascending order cost least. It is
// not safe for concurrent use.
type SharedReader struct {
	db  *pebble.DB
	log *textLog
	it  *pebble.Iterator
	key [17]byte
	buf []byte // the last text unpacked
	raw []byte // the last record read from the text file
}

// NewSharedReader returns a reader of the texts stored once.
func (s *Store) NewSharedReader() *SharedReader { return &SharedReader{db: s.db, log: s.texts} }

// Text returns the text ref names; the slice is valid until the next call.
// A reference to a text the store does not hold is an error: stored texts
// are never deleted.
func (r *SharedReader) Text(ref *TextRef) ([]byte, error) {
	if ref.inLog() {
		return r.log.read(ref, &r.raw, &r.buf)
	}
	if r.it == nil {
		it, err := r.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagShared}, UpperBound: []byte{tagShared + 1}})
		if err != nil {
			return nil, fmt.Errorf("store: read shared texts: %w", err)
		}
		r.it = it
	}
	r.key[0] = tagShared
	copy(r.key[1:], ref[:])
	if !r.it.SeekGE(r.key[:]) || string(r.it.Key()) != string(r.key[:]) {
		if err := r.it.Error(); err != nil {
			return nil, fmt.Errorf("store: read the shared text first held by entry seq %d: %w", binary.BigEndian.Uint64(ref[:]), err)
		}
		return nil, fmt.Errorf("store: the shared text first held by entry seq %d is missing: the store is damaged (rebuild it with 'pi-history import')", binary.BigEndian.Uint64(ref[:]))
	}
	v, err := r.it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("store: read the shared text first held by entry seq %d: %w", binary.BigEndian.Uint64(ref[:]), err)
	}
	t, err := unpackText(v, &r.buf)
	if err != nil {
		return nil, fmt.Errorf("store: the shared text first held by entry seq %d: %w", binary.BigEndian.Uint64(ref[:]), err)
	}
	return t, nil
}

// Close releases the reader's iterator, if it made one.
func (r *SharedReader) Close() {
	if r.it != nil {
		r.it.Close()
		r.it = nil
	}
}

// ScanTextRefs is ScanTextRanges that leaves shared texts unread: fn gets
// an entry's text when it is kept inline, and the reference to it (text
// nil) when it is stored once, for a caller that reads or searches each
// such text once however many entries hold it (see ReadShared and
// SharedReader). ref is valid only during the call. The scan stops when
// fn returns false or an error, which it returns.
func (s *Store) ScanTextRefs(ranges []SeqRange, reverse bool, fn func(seq uint64, text []byte, ref *TextRef) (bool, error)) error {
	return s.scanTextKeys(ranges, reverse, fn)
}

// ReadShared calls fn with the text of each ref in turn, until fn returns
// false; refs in ascending order cost least (one forward pass over the
// shared texts). The slice is valid only during the call.
func (s *Store) ReadShared(refs []TextRef, fn func(i int, text []byte) bool) error {
	r := s.NewSharedReader()
	defer r.Close()
	for i := range refs {
		t, err := r.Text(&refs[i])
		if err != nil {
			return err
		}
		if !fn(i, t) {
			return nil
		}
	}
	return nil
}

// formatSharedTexts is the format of a store in which every text of
// SharedTextMin bytes or more is stored once: a store made by this build,
// or one whose inline texts ShareTexts has moved.
const formatSharedTexts = 3

// shareChunk is how many seqs ShareTexts moves per batch, with the write
// lock held.
const shareChunk = 4096

// ShareTexts stores once the long texts that a build before decision 360
// kept inline, as a write stores them today, shareChunk seqs at a time
// (each chunk one batch, written with the write lock held, so entries
// arriving meanwhile wait for a chunk at most), then records the store's
// format so that it is done once. It returns how many texts it moved. A
// store made by this build, or opened with SharedTextMin negative, is left
// as it is.
func (s *Store) ShareTexts(ctx context.Context) (int, error) {
	if s.sharedMin <= 0 {
		return 0, nil
	}
	v, err := s.getMeta(formatKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) >= formatSharedTexts {
		return 0, nil
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	moved := 0
	for from := uint64(1); from <= s.LastSeq(); from += shareChunk {
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		n, err := s.shareChunk(from, from+shareChunk-1)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("store: store the long texts of %s once (seqs %d-%d): %w", s.dir, from, from+shareChunk-1, err)
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, formatSharedTexts), nil); err != nil {
		return moved, err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return moved, fmt.Errorf("store: record that the long texts of %s are stored once: %w", s.dir, err)
	}
	return moved, nil
}

// shareChunk moves the long inline texts of seqs lo to hi (see ShareTexts).
func (s *Store) shareChunk(lo, hi uint64) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.sums = nil
	b := s.db.NewBatch()
	defer b.Close()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagText, lo), UpperBound: prefixEnd(seqKey(tagText, hi))})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return 0, err
		}
		if len(v) < s.sharedMin {
			continue
		}
		if err := s.putText(b, binary.BigEndian.Uint64(it.Key()[1:]), string(v), false); err != nil {
			it.Close()
			return 0, err
		}
		n++
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	return n, s.commitWithTexts(b)
}
