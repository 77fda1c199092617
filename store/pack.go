package store

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
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
// packed: MoveTexts). Texts are packed with LZ4 since decision 410 (it
// unpacks them twice as fast as S2, for as many bytes); those packed with
// S2 before are read as they are.
const (
	packMark = 0xff
	packNone = 0 // the text follows as it is (it did not shrink)
	packS2   = 1 // an S2 block follows
	packLZ4  = 2 // the text's length (uvarint), then an LZ4 block
)

// lz4Packers hold LZ4's compressors, whose match tables are too large to
// make for each text.
var lz4Packers = sync.Pool{New: func() any { return &lz4.CompressorHC{Level: lz4.Level2} }}

// packText returns the value holding text: LZ4, or the text as it is when
// LZ4 does not shrink it.
func packText(text string) []byte {
	out := make([]byte, 2, 2+binary.MaxVarintLen64+lz4.CompressBlockBound(len(text)))
	out[0] = packMark
	out[1] = packLZ4
	out = binary.AppendUvarint(out, uint64(len(text)))
	c := lz4Packers.Get().(*lz4.CompressorHC)
	n, err := c.CompressBlock([]byte(text), out[len(out):cap(out)])
	lz4Packers.Put(c)
	if err != nil || n == 0 || len(out)+n >= 2+len(text) {
		out = append(out[:2], text...)
		out[1] = packNone
		return out
	}
	return out[:len(out)+n]
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
	case packLZ4:
		n, k := binary.Uvarint(v[2:])
		block := v[2+max(k, 0):]
		// LZ4 grows a block at most ~255 times: a larger length is damage,
		// not a reason to allocate.
		if k <= 0 || n > 255*uint64(len(block))+16 {
			return nil, fmt.Errorf("unpack a text: a length that does not fit its %d bytes: the store is damaged (rebuild it with 'pi-history import')", len(v))
		}
		if uint64(cap(*buf)) < n {
			*buf = make([]byte, n)
		}
		got, err := lz4.UncompressBlock(block, (*buf)[:n])
		if err != nil || uint64(got) != n {
			return nil, fmt.Errorf("unpack a text: %d of %d bytes (%v): the store is damaged (rebuild it with 'pi-history import')", got, n, err)
		}
		return (*buf)[:n], nil
	default:
		return nil, fmt.Errorf("a packed text of unknown codec %d: written by a newer pi-history, or damaged", v[1])
	}
}
