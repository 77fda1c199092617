package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

func (s *Store) getMeta(name string) ([]byte, error) {
	return s.get(append([]byte{tagMeta}, name...))
}

func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read: %w", err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

// Session returns a session's info.
func (s *Store) Session(sid string) (*SessionInfo, error) {
	return getRecord[SessionInfo](s, sessionKey(tagSession, sid), fmt.Sprintf("session %q", sid))
}

// getRecord decodes the JSON record at key; what names it in errors.
func getRecord[T any](s *Store, key []byte, what string) (*T, error) {
	v, err := s.get(key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return nil, err
	}
	rec := new(T)
	if err := json.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("store: %s record is corrupt: %w", what, err)
	}
	return rec, nil
}

// Sessions returns every session, in id order.
func (s *Store) Sessions() ([]*SessionInfo, error) {
	return scanRecords[SessionInfo](s, tagSession, "session")
}

// scanRecords decodes every JSON record stored under a one-byte table tag.
func scanRecords[T any](s *Store, tag byte, what string) ([]*T, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*T
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		rec := new(T)
		if err := json.Unmarshal(v, rec); err != nil {
			return nil, fmt.Errorf("store: %s record %q is corrupt: %w", what, it.Key(), err)
		}
		out = append(out, rec)
	}
	return out, it.Error()
}

// SessionByFile finds the session stored from a journal path.
func (s *Store) SessionByFile(path string) (*SessionInfo, error) {
	fs, err := s.FileState(path)
	if err != nil {
		return nil, err
	}
	return s.Session(fs.Session)
}

// FileState returns the read position of a journal file.
func (s *Store) FileState(path string) (*FileState, error) {
	return getRecord[FileState](s, append([]byte{tagFile}, path...), "file "+path)
}

// Files returns the read position of every known journal file.
func (s *Store) Files() ([]*FileState, error) {
	return scanRecords[FileState](s, tagFile, "file")
}

// Meta returns the record of the entry with seq.
func (s *Store) Meta(seq uint64) (*Meta, error) {
	m := new(Meta)
	if err := s.MetaInto(seq, m); err != nil {
		return nil, err
	}
	return m, nil
}

// MetaInto is Meta decoding into m, whose every field it sets: a caller
// that reads many records (a page of hits) decodes them into one
// allocation of its own. (The record is decoded from Pebble's memory,
// which decodeMetaInto copies once, so no copy is made of it first.)
func (s *Store) MetaInto(seq uint64, m *Meta) error {
	v, closer, err := s.db.Get(seqKey(tagEntry, seq))
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("entry seq %d: %w", seq, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: read entry seq %d: %w", seq, err)
	}
	defer closer.Close()
	return decodeMetaInto(m, v)
}

// MetaReader reads the records of chosen seqs with one iterator, made at
// first use: seqs in ascending order cost least (a seq a few on is stepped
// to, others sought), where MetaInto looks each one up from the top. It
// sees the store as it was when it read its first record. It is not safe
// for concurrent use; Close it after.
type MetaReader struct{ f finder }

// NewMetaReader returns a reader of the entries' records.
func (s *Store) NewMetaReader() *MetaReader {
	return &MetaReader{finder{db: s.db, tag: tagEntry, lo: 0, hi: math.MaxUint64}}
}

// MetaInto is Store.MetaInto through the reader's iterator.
func (r *MetaReader) MetaInto(seq uint64, m *Meta) error {
	v, ok, err := r.f.find(seq)
	if err != nil {
		return fmt.Errorf("store: read entry seq %d: %w", seq, err)
	}
	if !ok {
		return fmt.Errorf("entry seq %d: %w", seq, ErrNotFound)
	}
	return decodeMetaInto(m, v)
}

// Close releases the reader's iterator, if it made one.
func (r *MetaReader) Close() error { return r.f.close() }

// Text returns the searchable text of seq ("" for an entry without any).
func (s *Store) Text(seq uint64) (string, error) {
	var out string
	_, err := s.TextBytes(seq, func(b []byte) { out = string(b) })
	return out, err
}

// TextBytes calls fn with the searchable text of seq without copying it; the
// slice is valid only during the call. It reports whether the entry has a
// text.
func (s *Store) TextBytes(seq uint64, fn func([]byte)) (bool, error) {
	v, closer, err := s.db.Get(seqKey(tagText, seq))
	if err == nil {
		fn(v)
		closer.Close()
		return true, nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return false, fmt.Errorf("store: read the text of entry seq %d: %w", seq, err)
	}
	v, closer, err = s.db.Get(refKey(seq))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: read the text of entry seq %d: %w", seq, err)
	}
	var ref TextRef
	err = readRef(seq, v, &ref)
	closer.Close()
	if err != nil {
		return false, err
	}
	if ref.inLog() {
		var raw, buf []byte
		text, err := s.texts.read(&ref, &raw, &buf)
		if err != nil {
			return false, fmt.Errorf("store: the text of entry seq %d: %w", seq, err)
		}
		fn(text)
		return true, nil
	}
	t, closer, err := s.db.Get(sharedKey(ref[:]))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, fmt.Errorf("store: the shared text first held by entry seq %d is missing: the store is damaged (rebuild it with 'pi-history import')", binary.BigEndian.Uint64(ref[:]))
	}
	if err != nil {
		return false, fmt.Errorf("store: read the text of entry seq %d: %w", seq, err)
	}
	var buf []byte
	text, err := unpackText(t, &buf)
	if err != nil {
		closer.Close()
		return false, fmt.Errorf("store: the text of entry seq %d: %w", seq, err)
	}
	fn(text)
	closer.Close()
	return true, nil
}

// Raw returns the original JSON line of seq.
func (s *Store) Raw(seq uint64) ([]byte, error) {
	v, err := s.get(seqKey(tagRaw, seq))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("entry seq %d: %w", seq, ErrNotFound)
	}
	return v, err
}

// Lookup returns the seq of entry id in session sid.
func (s *Store) Lookup(sid, id string) (uint64, error) {
	v, err := s.get(idKey(sid, id))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return 0, fmt.Errorf("entry %q in session %q: %w", id, sid, ErrNotFound)
		}
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

// SessionMetas returns a session's entries in file order.
func (s *Store) SessionMetas(sid string) ([]*Meta, error) {
	var out []*Meta
	err := s.WalkSessionMetas(sid, func(m *Meta) bool {
		out = append(out, m)
		return true
	})
	return out, err
}

// WalkSessionMetas calls fn with a session's entries in file order, until
// fn returns false: reading the first few costs only those.
func (s *Store) WalkSessionMetas(sid string, fn func(*Meta) bool) error {
	var derr error
	err := s.walkSessionRecords(sid, func(v []byte) bool {
		m, err := decodeMeta(v)
		if err != nil {
			derr = err
			return false
		}
		return fn(m)
	})
	if err == nil {
		err = derr
	}
	return err
}

// FirstUser returns the seq of the first user message among the first
// TitleScan entries of session si, 0 when there is none: from its record
// when it knows it, else by walking the session's records.
func (s *Store) FirstUser(si *SessionInfo) (uint64, error) {
	if si.FirstUserKnown {
		return si.FirstUser, nil
	}
	var first uint64
	n := 0
	err := s.WalkSessionMetas(si.ID, func(m *Meta) bool {
		n++
		if m.isUserMessage() {
			first = m.Seq
			return false
		}
		return n < TitleScan
	})
	return first, err
}

// walkSessionRecords calls fn with the encoded record of each of sid's
// entries in session order, valid only during the call, until fn returns
// false.
func (s *Store) walkSessionRecords(sid string, fn func(v []byte) bool) error {
	// A session's order keys name its seqs; since 2026-11-30 they
	// hold no copy of the record, which is read from the entry's own key
	// (older stores keep the copy, read as it is). One snapshot serves
	// both, so a session dropped meanwhile is seen whole or not at all.
	snap := s.db.NewSnapshot()
	defer snap.Close()
	p := sessionKey(tagOrder, sid)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	var recs *pebble.Iterator // the entries' records, opened when first needed
	defer func() {
		if recs != nil {
			recs.Close()
		}
	}()
	for it.First(); it.Valid(); it.Next() {
		v := it.Value()
		if len(v) == 0 {
			if len(it.Key()) != len(p)+8 {
				return fmt.Errorf("session %s: malformed order key %q", sid, it.Key())
			}
			seq := binary.BigEndian.Uint64(it.Key()[len(p):])
			if recs == nil {
				if recs, err = snap.NewIter(&pebble.IterOptions{LowerBound: []byte{tagEntry}, UpperBound: []byte{tagEntry + 1}}); err != nil {
					return err
				}
			}
			if v, err = recordAt(recs, seq); err != nil {
				return fmt.Errorf("session %s: %w", sid, err)
			}
		}
		if !fn(v) {
			return nil
		}
	}
	return it.Error()
}

// recordAt moves it (an iterator over the entries' records) to the record
// of seq and returns it: one step on from where it is when seqs come in a
// run, as a session's mostly do, else a seek.
func recordAt(it *pebble.Iterator, seq uint64) ([]byte, error) {
	k := seqKey(tagEntry, seq)
	if !it.Valid() || !it.Next() || !bytes.Equal(it.Key(), k) {
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			if err := it.Error(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("entry seq %d is listed in its session but has no record: the store is damaged; import the journals into a new data directory", seq)
		}
	}
	return it.Value(), nil
}

// ScanMetas calls fn for every entry with from <= seq <= to, in seq order,
// until fn returns false.
func (s *Store) ScanMetas(from, to uint64, fn func(*Meta) bool) error {
	return s.ScanMetaRanges([]SeqRange{{Lo: from, Hi: to}}, fn)
}

// ScanMetaRanges calls fn for the record of every entry in ranges
// (ascending, disjoint), in seq order, with one iterator, until fn returns
// false: a point read each cost several times more for a list of
// candidates.
func (s *Store) ScanMetaRanges(ranges []SeqRange, fn func(*Meta) bool) error {
	if len(ranges) == 0 {
		return nil
	}
	from, to := ranges[0].Lo, ranges[len(ranges)-1].Hi
	if to < from {
		return nil
	}
	upper := seqKey(tagEntry, to)
	upper = prefixEnd(upper)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tagEntry, from), UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for _, r := range ranges {
		for ok := it.SeekGE(seqKey(tagEntry, r.Lo)); ok; ok = it.Next() {
			if binary.BigEndian.Uint64(it.Key()[1:]) > r.Hi {
				break
			}
			m, err := decodeMeta(it.Value())
			if err != nil {
				return err
			}
			if !fn(m) {
				return it.Error()
			}
		}
	}
	return it.Error()
}
