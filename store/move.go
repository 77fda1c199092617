package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// moveChunk is how many keys MoveTexts rewrites per batch, with the write
// lock held.
const moveChunk = 1024

// MoveTexts moves the texts that a store of format 3 or 4 keeps under X
// into the text file (decision 390) and records format 5. First the hash
// pointers (H) are pointed at the moved texts, so that no writer can take
// a reference to an X key any more; then the entries' references (U); the
// X keys go at the next open (dropMovedTexts), when no search can hold a
// reference to one. Each step holds the write lock per chunk of keys only. A
// crash midway leaves references of both kinds, each naming its text;
// the next run moves what is left (the texts moved before are appended
// again, left unread in the file). It returns how many texts it moved.
func (s *Store) MoveTexts(ctx context.Context) (int, error) {
	v, err := s.getMeta(formatKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	if len(v) != 8 || binary.BigEndian.Uint64(v) < formatSharedTexts || binary.BigEndian.Uint64(v) >= formatTextFile {
		return 0, nil // long texts still inline (ShareTexts first), or moved already
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	moved := map[TextRef]TextRef{}
	for _, tag := range []byte{tagSum, tagRef} {
		from := []byte{tag}
		for from != nil {
			if err := ctx.Err(); err != nil {
				return len(moved), err
			}
			if from, err = s.moveChunk(tag, from, moved); err != nil {
				return len(moved), fmt.Errorf("store: move the stored texts of %s to %s: %w", s.dir, s.texts.path, err)
			}
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	// The X keys stay until the next open (dropMovedTexts): a search
	// running now may hold a reference to one it has not read yet.
	if err := b.Set(append([]byte{tagMeta}, movedMark...), nil, nil); err != nil {
		return len(moved), err
	}
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, formatTextFile), nil); err != nil {
		return len(moved), err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return len(moved), fmt.Errorf("store: record that the stored texts of %s moved to %s: %w", s.dir, s.texts.path, err)
	}
	return len(moved), nil
}

// moveChunk points the references among the moveChunk keys of kind tag
// from key from on that name X keys at the texts' records in the text
// file, moving each text the first time (moved maps X references to
// file references), and returns the key to go on from (nil at the end).
func (s *Store) moveChunk(tag byte, from []byte, moved map[TextRef]TextRef) ([]byte, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: []byte{tag + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	shared := s.NewSharedReader()
	defer shared.Close()
	b := s.db.NewBatch()
	defer b.Close()
	seen, n := 0, 0
	var next []byte
	for ok := it.First(); ok; ok = it.Next() {
		if seen == moveChunk {
			next = slices.Clone(it.Key())
			break
		}
		seen++
		var ref TextRef
		if v := it.Value(); len(v) != len(ref) {
			return nil, fmt.Errorf("the key %q holds %d bytes, not a text reference: the store is damaged (rebuild it with 'pi-history import')", it.Key(), len(v))
		}
		copy(ref[:], it.Value())
		if ref.inLog() {
			continue
		}
		to, ok := moved[ref]
		if !ok {
			text, err := shared.Text(&ref)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(text)
			if to, err = s.texts.add(packText(string(text)), sum[:]); err != nil {
				return nil, err
			}
			moved[ref] = to
		}
		if err := b.Set(it.Key(), to[:], nil); err != nil {
			return nil, err
		}
		n++
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if n == 0 {
		return next, nil
	}
	return next, s.commitWithTexts(b)
}

// movedMark names the meta key MoveTexts sets: the X keys are to go.
const movedMark = "x_moved"

// dropMovedTexts deletes the X keys MoveTexts left behind, once, at an
// open for writing (no search can hold a reference to one yet).
func (s *Store) dropMovedTexts() error {
	if _, err := s.getMeta(movedMark); errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if err := s.writable(); errors.Is(err, ErrWritesStopped) {
		return nil
	} else if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte{tagShared}, []byte{tagShared + 1}, nil); err != nil {
		return err
	}
	if err := b.Delete(append([]byte{tagMeta}, movedMark...), nil); err != nil {
		return err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return fmt.Errorf("store: delete the texts moved to %s: %w", s.texts.path, err)
	}
	return nil
}
