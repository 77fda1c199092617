package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Keys that builds before the search's derived data moved to package
// index wrote into the store, and that nothing reads any more: a trigram
// sketch per searchable entry and a text filter per full chunk of 1,024
// seqs, plus the meta key saying from which seq every entry had a sketch.
const (
	oldTagSketch  = 'K' // K<seq:8> → the entry's trigram sketch
	oldTagFilter  = 'B' // B<chunk:8> → a chunk's text filter
	oldSketchMark = "sketch_from"
)

// formatKey names the meta key holding the store's format: what the
// store holds besides the source of truth. Absent in a store written
// before it existed.
const formatKey = "format"

// formatNoSearchData is the format of a store that holds no derived
// search data (see dropSearchData).
const formatNoSearchData = 2

// dropSearchData removes, once, the keys that earlier builds wrote to
// accelerate search (see oldTagSketch), and records that it did so under
// formatKey: one range deletion per key kind, committed with the marker,
// so that a crash leaves both or neither and the next open tries again.
// The memtable is then flushed, so that Pebble drops the tables the
// deletions cover (they hold one key kind each, see splitByKind) without
// waiting for the next flush. A store short of space is left as it is
// until an open finds room; a new store only gets the marker.
func (s *Store) dropSearchData() error {
	v, err := s.getMeta(formatKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) >= formatNoSearchData {
		return nil
	}
	if err := s.writable(); errors.Is(err, ErrWritesStopped) {
		return nil
	} else if err != nil {
		return err
	}
	old := s.nextSeq > 1 // a store that ever held an entry may hold their sketches
	b := s.db.NewBatch()
	defer b.Close()
	if old {
		for _, tag := range []byte{oldTagSketch, oldTagFilter} {
			if err := b.DeleteRange([]byte{tag}, []byte{tag + 1}, nil); err != nil {
				return err
			}
		}
		if err := b.Delete(append([]byte{tagMeta}, oldSketchMark...), nil); err != nil {
			return err
		}
	}
	format := uint64(formatNoSearchData)
	if !old && s.sharedMin > 0 {
		format = formatTextFile // every text it gets is written as today's builds write them
	}
	if err := b.Set(append([]byte{tagMeta}, formatKey...), binary.BigEndian.AppendUint64(nil, format), nil); err != nil {
		return err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return fmt.Errorf("store: remove the search data of earlier versions from %s: %w", s.dir, err)
	}
	if !old {
		return nil
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store: flush %s after removing the search data of earlier versions: %w", s.dir, err)
	}
	return nil
}

// Upkeep says what an open that may write would change in the store at
// once, or "" when nothing: the search data of earlier builds to delete,
// the texts a move left behind, writes a killed process left in Pebble's
// log (a store opened for reading only reads them again at every open),
// entries removed since they were stored that the index has still to
// forget. A command that only reads opens the
// store for reading only when nothing is due (cmd/pi-history's
// openExisting); a store opened for reading only sees these as they are.
func (s *Store) Upkeep() (string, error) {
	v, err := s.getMeta(formatKey)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	if len(v) != 8 || binary.BigEndian.Uint64(v) < formatNoSearchData {
		return "the search data of an earlier version to delete", nil
	}
	if _, err := s.getMeta(movedMark); err == nil {
		return "texts moved to the text file to delete from the store", nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	if s.readOnly && s.db.Metrics().MemTable.Count > 1 {
		// What Pebble read back from its log at open, past its first
		// memtable: a process that ended without closing the store (a
		// kill) left it unflushed, and every open for reading only reads
		// it again. (Less fits the first memtable, and costs as little.)
		return "writes in Pebble's log to flush into its tables", nil
	}
	if seqs, err := s.Deleted(1); err != nil {
		return "", err
	} else if len(seqs) > 0 {
		return "removed entries for the index to forget", nil
	}
	return "", nil
}
