package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/s2"
)

// A text stored once is compressed on its own (packed), so that reading
// it decompresses its own bytes only: Pebble compresses whole blocks of
// 32 KiB, and a search reading one candidate text of a few KiB used to
// decompress the block around it, most of it other texts. The X span's
// blocks, already packed, are left uncompressed by Pebble (see
// splitByKind). See docs/decisions/370-stored-texts-packed.md.
//
// A packed value starts with packMark, a byte no UTF-8 text starts with
// (texts are valid UTF-8: the journal's decoder replaces invalid bytes),
// then the codec. A value without the mark is the text itself, as stores
// of format 3 wrote it; Compact packs those (PackTexts).
const (
	packMark = 0xff
	packNone = 0 // the text follows as it is (it did not shrink)
	packS2   = 1 // an S2 block follows
)

// packText returns the X value holding text.
func packText(text string) []byte {
	out := make([]byte, 2, 2+s2.MaxEncodedLen(len(text)))
	out[0] = packMark
	out[1] = packS2
	enc := s2.EncodeBetter(out[2:cap(out)], []byte(text))
	if len(enc) >= len(text) {
		out = append(out[:2], text...)
		out[1] = packNone
		return out
	}
	return out[:2+len(enc)]
}

// unpackText returns the text an X value holds, decompressing into *buf
// (grown as needed) when it is packed.
func unpackText(v []byte, buf *[]byte) ([]byte, error) {
	if len(v) == 0 || v[0] != packMark {
		return v, nil // written by a store of format 3
	}
	if len(v) < 2 {
		return nil, fmt.Errorf("a packed text of %d bytes, too short to name its codec: the store is damaged (rebuild it with 'pi-history import')", len(v))
	}
	switch v[1] {
	case packNone:
		return v[2:], nil
	case packS2:
		n, err := s2.DecodedLen(v[2:])
		if err != nil {
			return nil, fmt.Errorf("unpack a text: %w: the store is damaged (rebuild it with 'pi-history import')", err)
		}
		if cap(*buf) < n {
			*buf = make([]byte, n)
		}
		t, err := s2.Decode((*buf)[:n], v[2:])
		if err != nil {
			return nil, fmt.Errorf("unpack a text: %w: the store is damaged (rebuild it with 'pi-history import')", err)
		}
		return t, nil
	default:
		return nil, fmt.Errorf("a packed text of unknown codec %d: written by a newer pi-history, or damaged", v[1])
	}
}

// formatPackedTexts is the format of a store whose texts stored once are
// all packed: a store made by this build, or one PackTexts went through.
const formatPackedTexts = 4

// packChunk is how many stored texts PackTexts packs per batch, with the
// write lock held.
const packChunk = 1024

// PackTexts packs the texts stored once that a build of format 3 wrote as
// they are, packChunk at a time (each chunk one batch, written with the
// write lock held), then records the store's format so that it is done
// once. It returns how many texts it packed. Every value says whether it
// is packed, so readers meanwhile, and a crash midway, find each text
// whole either way.
func (s *Store) PackTexts(ctx context.Context) (int, error) {
	v, err := s.getMeta(formatKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) >= formatPackedTexts {
		return 0, nil
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	packed := 0
	from := []byte{tagShared}
	for from != nil {
		if err := ctx.Err(); err != nil {
			return packed, err
		}
		n, next, err := s.packChunk(from)
		packed += n
		if err != nil {
			return packed, fmt.Errorf("store: pack the stored texts of %s: %w", s.dir, err)
		}
		from = next
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, formatPackedTexts), nil); err != nil {
		return packed, err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return packed, fmt.Errorf("store: record that the stored texts of %s are packed: %w", s.dir, err)
	}
	return packed, nil
}

// packChunk packs the unpacked stored texts among the packChunk keys from
// key from on, and returns the key to go on from (nil at the end).
func (s *Store) packChunk(from []byte) (int, []byte, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: []byte{tagShared + 1}})
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer b.Close()
	n, seen := 0, 0
	var next []byte
	for ok := it.First(); ok; ok = it.Next() {
		if seen == packChunk {
			next = slices.Clone(it.Key())
			break
		}
		seen++
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, nil, err
		}
		if len(v) > 0 && v[0] == packMark {
			continue
		}
		if err := b.Set(it.Key(), packText(string(v)), nil); err != nil {
			return 0, nil, err
		}
		n++
	}
	if err := it.Error(); err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, next, nil
	}
	return n, next, s.commitBatch(b, s.syncWrites())
}
