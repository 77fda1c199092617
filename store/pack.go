package store

import (
	"fmt"

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
// of format 3 wrote it under X (Compact moves those to the text file,
// packed: MoveTexts).
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
