package store

import (
	"cmp"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ScanTexts calls fn for the searchable text of every entry with
// from <= seq <= to, in seq order (newest first when reverse), until fn
// returns false. The text slice is valid only during the call.
func (s *Store) ScanTexts(from, to uint64, reverse bool, fn func(seq uint64, text []byte) bool) error {
	if to < from {
		return nil
	}
	return s.ScanTextRanges([]SeqRange{{Lo: from, Hi: to}}, reverse, fn)
}

// TextReader reads the texts of chosen seqs, with one iterator over the
// inline texts and one over the references to texts stored once; reading
// seqs in ascending order costs least (a seq up to readerStepMax on is
// stepped to, a later one a forward seek). It is not safe for concurrent
// use: give each goroutine its own, and Close it after.
type TextReader struct {
	texts, refs finder
	lo, hi      uint64 // the reader's range
	shared      SharedReader
	ref         TextRef // the last reference Lookup returned
}

// NewTextReader returns a reader of the texts of seqs in [lo, hi].
func (s *Store) NewTextReader(lo, hi uint64) *TextReader {
	r := &TextReader{lo: lo, hi: hi, shared: SharedReader{db: s.db, log: s.texts}}
	r.texts = finder{db: s.db, tag: tagText, lo: lo, hi: hi}
	r.refs = finder{db: s.db, tag: tagRef, lo: lo, hi: hi}
	return r
}

// Text returns the searchable text of seq, and false when seq has none (or
// lies outside the reader's range). The slice is valid until the next call.
func (r *TextReader) Text(seq uint64) ([]byte, bool, error) {
	text, ref, ok, err := r.Lookup(seq)
	if ref != nil {
		text, err = r.shared.Text(ref)
	}
	return text, ok && err == nil, err
}

// Lookup is Text that leaves a text stored once unread: for such a text
// it returns the reference to it (text nil), valid until the next call,
// for a caller that remembers what it found in each (see TextRef); Shared
// reads it.
func (r *TextReader) Lookup(seq uint64) (text []byte, ref *TextRef, ok bool, err error) {
	if seq < r.lo || seq > r.hi {
		return nil, nil, false, nil
	}
	// The references first: they are few and small, so their blocks stay
	// cached, and a text read through one needs no block of inline texts.
	v, ok, err := r.refs.find(seq)
	if err != nil {
		return nil, nil, false, err
	}
	if ok {
		if err := readRef(seq, v, &r.ref); err != nil {
			return nil, nil, false, err
		}
		return nil, &r.ref, true, nil
	}
	text, ok, err = r.texts.find(seq)
	return text, nil, ok, err
}

// Shared returns the text ref names (from Lookup); the slice is valid
// until the next call.
func (r *TextReader) Shared(ref *TextRef) ([]byte, error) { return r.shared.Text(ref) }

// Close releases the reader's iterators, if it made them.
func (r *TextReader) Close() error {
	r.shared.Close()
	err := r.texts.close()
	if err2 := r.refs.close(); err == nil {
		err = err2
	}
	return err
}

// finder finds the values of one seq-keyed kind at chosen seqs with one
// cursor, its iterator made at first use (a reader asked for nothing, a
// search whose candidates are all ruled out, never makes one). A seq up to
// readerStepMax on is stepped to (see cursor.enter).
type finder struct {
	db     *pebble.DB
	tag    byte
	lo, hi uint64
	c      cursor
	it     *pebble.Iterator // c.it, once made
}

// find returns the value at seq, and false when there is none. The slice
// is valid until the next call.
func (f *finder) find(seq uint64) ([]byte, bool, error) {
	if f.it == nil {
		it, err := f.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(f.tag, f.lo), UpperBound: prefixEnd(seqKey(f.tag, f.hi))})
		if err != nil {
			return nil, false, fmt.Errorf("store: read texts of seqs %d-%d: %w", f.lo, f.hi, err)
		}
		f.it = it
		f.c = cursor{it: it, tag: f.tag, stepMax: readerStepMax}
	}
	if !f.c.enter(SeqRange{Lo: seq, Hi: seq}) {
		return nil, false, f.it.Error()
	}
	v, err := f.it.ValueAndErr()
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (f *finder) close() error {
	if f.it == nil {
		return nil
	}
	err := f.it.Close()
	f.it = nil
	return err
}

// SeqRange is an inclusive range of seqs.
type SeqRange struct{ Lo, Hi uint64 }

// ScanTextRanges is ScanTexts over several ranges with one iterator over
// the inline texts and one over the references. The ranges must be
// ascending and disjoint; they are visited in order (last first when
// reverse, each newest first), until fn returns false. The text slice is
// valid only during the call.
func (s *Store) ScanTextRanges(ranges []SeqRange, reverse bool, fn func(seq uint64, text []byte) bool) error {
	shared := s.NewSharedReader()
	defer shared.Close()
	return s.scanTextKeys(ranges, reverse, func(seq uint64, text []byte, ref *TextRef) (bool, error) {
		if ref != nil {
			var err error
			if text, err = shared.Text(ref); err != nil {
				return false, err
			}
		}
		return fn(seq, text), nil
	})
}

// scanTextKeys visits the inline texts and the references of ranges in
// the order ScanTextRanges visits texts, giving fn each entry's text or,
// for a text stored once, its reference (text nil).
func (s *Store) scanTextKeys(ranges []SeqRange, reverse bool, fn func(seq uint64, text []byte, ref *TextRef) (bool, error)) error {
	if len(ranges) == 0 {
		return nil
	}
	var cs [2]cursor
	for k, tag := range []byte{tagText, tagRef} {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: seqKey(tag, ranges[0].Lo),
			UpperBound: prefixEnd(seqKey(tag, ranges[len(ranges)-1].Hi))})
		if err != nil {
			return err
		}
		defer it.Close()
		cs[k] = cursor{it: it, tag: tag, reverse: reverse}
	}
	// The references of each range are read first, into refs (their blocks
	// are few and stay cached): a range they cover whole, a long text's
	// seq above all, is not sought among the inline texts, which would
	// read a block of other entries' texts to learn that it is not there.
	type refAt struct {
		seq uint64
		ref TextRef
	}
	var refs []refAt
	visit := func(r SeqRange) (bool, error) {
		refs = refs[:0]
		for in := cs[1].enter(r); in; in = cs[1].next(r) {
			v, err := cs[1].it.ValueAndErr()
			if err != nil {
				return false, err
			}
			refs = append(refs, refAt{seq: cs[1].at})
			if err := readRef(cs[1].at, v, &refs[len(refs)-1].ref); err != nil {
				return false, err
			}
		}
		t := &cs[0]
		in := uint64(len(refs)) != r.Hi-r.Lo+1 && t.enter(r)
		for i := 0; in || i < len(refs); {
			if in && (i == len(refs) || (t.at < refs[i].seq) != reverse) {
				v, err := t.it.ValueAndErr()
				if err != nil {
					return false, err
				}
				if ok, err := fn(t.at, v, nil); !ok || err != nil {
					return false, err
				}
				in = t.next(r)
				continue
			}
			if ok, err := fn(refs[i].seq, nil, &refs[i].ref); !ok || err != nil {
				return false, err
			}
			i++
		}
		return true, nil
	}
	if err := inVisitOrder(ranges, reverse, visit); err != nil {
		return err
	}
	for k := range cs {
		if err := cs[k].it.Error(); err != nil {
			return err
		}
	}
	return nil
}

// cursor walks the keys of one seq-keyed kind through ranges in visit
// order, stepping to the next range when it starts close by and seeking
// it otherwise.
type cursor struct {
	it      *pebble.Iterator
	tag     byte
	reverse bool
	stepMax uint64 // the farthest it steps to a range instead of seeking (stepMax when 0)
	key     [9]byte
	// on says the iterator stands at seq at, the first key past the last
	// range visited (in the order of the visit).
	on bool
	at uint64
}

// enter puts the cursor on the first key of r in visit order and says
// whether there is one.
func (c *cursor) enter(r SeqRange) bool {
	step := c.it.Next
	if c.reverse {
		step = c.it.Prev
	}
	most := cmp.Or(c.stepMax, stepMax)
	var ok bool
	switch {
	case c.on && !c.reverse && c.at <= r.Hi && (c.at >= r.Lo || r.Lo-c.at <= most),
		c.on && c.reverse && c.at >= r.Lo && (c.at <= r.Hi || c.at-r.Hi <= most):
		// The range starts at most a few seqs on: stepping there
		// costs less than a seek, which descends the index again
		// (candidate ranges are many and close together).
		ok = true
		for ok && (!c.reverse && c.at < r.Lo || c.reverse && c.at > r.Hi) {
			if ok = step(); ok {
				c.at = binary.BigEndian.Uint64(c.it.Key()[1:])
			}
		}
	case c.reverse && r.Hi == ^uint64(0):
		ok = c.it.Last()
	case c.reverse:
		c.key[0] = c.tag
		binary.BigEndian.PutUint64(c.key[1:], r.Hi+1)
		ok = c.it.SeekLT(c.key[:])
	default:
		c.key[0] = c.tag
		binary.BigEndian.PutUint64(c.key[1:], r.Lo)
		ok = c.it.SeekGE(c.key[:])
	}
	return c.settle(ok, r)
}

// next steps the cursor on within r and says whether it is still in it.
func (c *cursor) next(r SeqRange) bool {
	if c.reverse {
		return c.settle(c.it.Prev(), r)
	}
	return c.settle(c.it.Next(), r)
}

// settle records where the iterator stands after a move that reported
// ok, and whether that is in r.
func (c *cursor) settle(ok bool, r SeqRange) bool {
	if c.on = ok; !ok {
		return false
	}
	c.at = binary.BigEndian.Uint64(c.it.Key()[1:])
	return c.at >= r.Lo && c.at <= r.Hi
}

// stepMax is the farthest (in seqs) ScanTextRanges steps to the next
// range instead of seeking it, readerStepMax the farthest a TextReader
// steps to the next seq asked for. A seek descends the index and the data
// block again; a step within a block is a few dozen nanoseconds
// (docs/measurements/2026-11-30-whole-runs-at-a-million-entries.md).
const (
	stepMax       = 16
	readerStepMax = 8
)
