package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	pihistory "github.com/pi-history/pi-history"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pi-history/pi-history/journal"
)

// FileBatch is a run of complete lines read from one journal file.
type FileBatch struct {
	Path    string
	Header  *journal.Header  // set when the header line is part of this batch
	Entries []*journal.Entry // in file order
	State   FileState        // the file's read position after this batch
	// Replace: the file was rewritten, and this batch begins its new
	// content. Nothing stored is dropped for it, but in Pi's own migration
	// of a version 1 journal (whose entries get new ids): if the header
	// still names the session the file held, the entries still in the file
	// take its bytes in place and the others stay, as history; if it names
	// another session, the one the file held ends (its entries stay, it
	// no longer names the file) and the header is placed as a new file's.
	Replace bool
}

// Result says what a write did (a wire type: see pihistory.PushResult).
type Result = pihistory.PushResult

// ConflictError is returned by Push for an id already stored with other content.
type ConflictError = pihistory.ConflictError

// Apply stores a batch read from a journal file, with one synced commit.
//
// One piece (122 lines): everything between taking the write lock and
// the synced commit is one batch, whose order (the file's session record
// read, the entries added, the file state written last) is what makes a
// crash leave either the whole file's batch or none of it.
func (s *Store) Apply(fb *FileBatch) (Result, error) {
	// Checked before the lock too: a commit that Pebble stalls (its
	// flushes failing on a disk someone else filled) holds the lock until
	// space is back, and other writers are refused meanwhile instead of
	// waiting behind it.
	if err := s.writable(); err != nil {
		return Result{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.sums = nil // a batch this call makes holds none of the texts yet (see share)
	if err := s.writable(); err != nil {
		return Result{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()

	var si *SessionInfo
	prev, err := s.FileState(fb.Path)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Result{}, err
	}
	var res Result
	fresh := false // the session has nothing stored, or its old entries are dropped in this batch
	switch {
	case prev != nil && !fb.Replace:
		si, err = s.Session(prev.Session)
		if err != nil {
			return Result{}, fmt.Errorf("store: file %s names session %q: %w", fb.Path, prev.Session, err)
		}
	case fb.Header != nil:
		idPrev, replace := prev, fb.Replace
		var ended *SessionInfo // the session the file held before it began another
		if prev != nil && fb.Replace {
			own, err := s.Session(prev.Session)
			switch {
			case err != nil:
			case own.File != "" && own.File != fb.Path:
				// A rewritten copy (read before as a copy of a session whose
				// own journal is another file) must not replace that session:
				// it is placed afresh, as a new file would be.
				idPrev = nil
			case headerID(own.Header) != fb.Header.ID:
				// The file now begins another session (another journal
				// copied over it): the session it held ends here. Its
				// entries stay, as history, and it no longer names the
				// file; the new header is placed as a new file's would be.
				idPrev, replace = nil, false
				if own.File == fb.Path {
					own.File = ""
					ended = own
				}
			case own.Version == 1 && fb.Header.Version > 1:
				// Pi migrated the version 1 journal in place: the same
				// entries, under new ids. Kept, the old ones would double
				// the session; they are dropped for the new.
			default:
				// The same session rewritten (Pi's v2 to v3 migration, a
				// backup put back, a line edited): nothing is dropped.
				// addEntries gives the entries still in the file its
				// bytes; those no longer in it stay, as history.
				replace = false
			}
		}
		sid, copied, err := s.sessionIDFor(fb.Header, fb.Path, idPrev, fb.Entries)
		if err != nil {
			return Result{}, err
		}
		if ended != nil && ended.ID != sid {
			sib, _ := json.Marshal(ended)
			if err := b.Set(sessionKey(tagSession, ended.ID), sib, nil); err != nil {
				return Result{}, err
			}
		}
		old, err := s.Session(sid)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Result{}, err
		}
		if copied {
			// Another copy of a stored session (a backup, an archive
			// imported again): what it holds beyond the stored entries is
			// added; the session's own journal stays its file.
			si = old
			break
		}
		if old != nil && (replace || old.File != "" && old.File != fb.Path) {
			n, err := s.dropSession(b, sid, false)
			if err != nil {
				return Result{}, err
			}
			res.Replaced = n
			old = nil
			fresh = true
		}
		if old != nil { // pushed before the file was seen
			si = old
			si.File, si.Header = fb.Path, string(fb.Header.Raw)
		} else {
			// A new session has nothing stored: its entries need no
			// lookup (one Pebble read each).
			si = &SessionInfo{ID: sid, File: fb.Path, FirstUserKnown: true}
			si.applyHeader(fb.Header)
			fresh = true
		}
	default:
		return Result{}, fmt.Errorf("store: file %s: batch has no header and the file was never read", fb.Path)
	}
	fb.State.Path, fb.State.Session = fb.Path, si.ID
	res.Session = si.ID
	if err := s.addEntries(b, si, fb.Path, fb.Entries, fresh, &res); err != nil {
		return Result{}, err
	}
	fsb, _ := json.Marshal(&fb.State)
	if err := b.Set(append([]byte{tagFile}, fb.Path...), fsb, nil); err != nil {
		return Result{}, err
	}
	if err := s.commit(b, si); err != nil {
		return Result{}, err
	}
	res.LastSeq = s.nextSeq - 1
	return res, nil
}

// Push stores entries sent by a live client before (or after) they reach the
// journal file. An id already stored with the same bytes is a duplicate; with
// other bytes it is a *ConflictError and nothing of the push is stored.
// header is needed only for a session the store has not seen yet.
func (s *Store) Push(sid string, header *journal.Header, entries []*journal.Entry) (Result, error) {
	// Checked before the lock too (see Apply).
	if err := s.writable(); err != nil {
		return Result{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.sums = nil // a batch this call makes holds none of the texts yet (see share)
	if err := s.writable(); err != nil {
		return Result{}, err
	}
	si, err := s.Session(sid)
	if errors.Is(err, ErrNotFound) {
		if header == nil {
			return Result{}, fmt.Errorf("session %q is unknown; push its header line too, or sync its journal file first: %w", sid, ErrNotFound)
		}
		if header.ID != sid {
			return Result{}, fmt.Errorf("header names session %q, not %q", header.ID, sid)
		}
		si = &SessionInfo{ID: sid, FirstUserKnown: true}
		si.applyHeader(header)
	} else if err != nil {
		return Result{}, err
	}
	for _, e := range entries {
		seq, err := s.Lookup(sid, e.ID)
		if err != nil {
			continue
		}
		raw, err := s.Raw(seq)
		if err != nil {
			return Result{}, err
		}
		if !bytes.Equal(raw, e.Raw) {
			return Result{}, &ConflictError{Session: sid, ID: e.ID}
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	res := Result{Session: sid}
	if err := s.addEntries(b, si, "", entries, false, &res); err != nil {
		return Result{}, err
	}
	if err := s.commit(b, si); err != nil {
		return Result{}, err
	}
	res.LastSeq = s.nextSeq - 1
	return res, nil
}

// DropSession removes a session and all its entries.
func (s *Store) DropSession(sid string) (int, error) {
	// Checked before the lock too (see Apply).
	if err := s.writable(); err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.sums = nil // a batch this call makes holds none of the texts yet (see share)
	if err := s.writable(); err != nil {
		return 0, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	n, err := s.dropSession(b, sid, true)
	if err != nil {
		return 0, err
	}
	if err := s.commitBatch(b, s.syncWrites()); err != nil {
		return 0, err
	}
	s.trees.drop(sid)
	if err := s.notify(b.Len()); err != nil {
		return 0, err
	}
	return n, nil
}

func (si *SessionInfo) applyHeader(h *journal.Header) {
	si.Cwd, si.Created, si.Version, si.ParentSession, si.Header = h.Cwd, h.Timestamp, h.Version, h.ParentSession, string(h.Raw)
	if si.LastActivity == "" {
		si.LastActivity = h.Timestamp
	}
}

// headerID is the session id a stored header line names ("" if it names
// none).
func headerID(raw string) string {
	var h struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(raw), &h) != nil {
		return ""
	}
	return h.ID
}

// sessionIDFor picks the session key for a header read from path: the
// header's id, unless another live file already owns that id. copied says
// path is another copy of that stored session: the same header line, and
// none of the entries of its first batch stored with other bytes (a backup
// of the journal, or an archive of this store imported again); it adds to
// the session instead of becoming a second one. A file that differs is a
// session of its own under a new key (id~hash of its path).
func (s *Store) sessionIDFor(h *journal.Header, path string, prev *FileState, first []*journal.Entry) (sid string, copied bool, err error) {
	if prev != nil {
		return prev.Session, false, nil
	}
	hid := h.ID
	si, err := s.Session(hid)
	if errors.Is(err, ErrNotFound) {
		return hid, false, nil
	}
	if err != nil {
		return "", false, err
	}
	if si.File == "" || si.File == path {
		return hid, false, nil
	}
	onDisk, _, _ := strings.Cut(si.File, "!") // an archive member lives in its archive
	if _, err := os.Stat(onDisk); err != nil {
		return hid, false, nil // the old file is gone: this is the session, moved
	}
	if si.Header == string(h.Raw) {
		same, err := s.holdsSame(hid, first)
		if err != nil {
			return "", false, err
		}
		if same {
			return hid, true, nil
		}
	}
	sum := sha256.Sum256([]byte(path))
	return hid + "~" + hex.EncodeToString(sum[:4]), false, nil
}

// holdsSame reports whether every entry of entries that session sid
// stores is stored with the same bytes.
func (s *Store) holdsSame(sid string, entries []*journal.Entry) (bool, error) {
	for _, e := range entries {
		seq, err := s.Lookup(sid, e.ID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		raw, err := s.Raw(seq)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(raw, e.Raw) {
			return false, nil
		}
	}
	return true, nil
}

// dropSession deletes every key of a session into b.
func (s *Store) dropSession(b *pebble.Batch, sid string, withInfo bool) (int, error) {
	metas, err := s.SessionMetas(sid)
	if err != nil {
		return 0, err
	}
	for _, m := range metas {
		for _, k := range [][]byte{seqKey(tagEntry, m.Seq), seqKey(tagText, m.Seq), refKey(m.Seq), seqKey(tagRaw, m.Seq), orderKey(sid, m.Seq), idKey(sid, m.ID)} {
			if err := b.Delete(k, nil); err != nil {
				return 0, err
			}
		}
		if err := b.Set(seqKey(tagDeleted, m.Seq), nil, nil); err != nil {
			return 0, err
		}
		s.deletes = true
	}
	if err := b.Delete(sessionKey(tagBranch, sid), nil); err != nil {
		return 0, err
	}
	if withInfo {
		if err := b.Delete(sessionKey(tagSession, sid), nil); err != nil {
			return 0, err
		}
		files, err := s.Files()
		if err != nil {
			return 0, err
		}
		for _, f := range files {
			if f.Session == sid {
				if err := b.Delete(append([]byte{tagFile}, f.Path...), nil); err != nil {
					return 0, err
				}
			}
		}
	}
	s.trees.drop(sid)
	return len(metas), nil
}

// addEntries adds entries to b, read from the journal file path, or pushed
// when path is "". fresh means the session has no stored entries, or they
// are being dropped in b, so nothing stored counts as already present.
func (s *Store) addEntries(b *pebble.Batch, si *SessionInfo, path string, entries []*journal.Entry, fresh bool, res *Result) error {
	pushed := path == ""
	ownFile := !pushed && si.File == path // the session's own journal, not a copy
	batchIDs := map[string]*Meta{}
	batchRaw := map[uint64][]byte{}
	for _, e := range entries {
		var old *Meta
		if m, ok := batchIDs[e.ID]; ok {
			old = m
		} else if fresh {
			// nothing stored counts
		} else if seq, err := s.Lookup(si.ID, e.ID); err == nil {
			if old, err = s.Meta(seq); err != nil {
				return err
			}
		}
		m := metaFromEntry(si.ID, e)
		m.Window = s.windowFor(si.ID, e, batchIDs, fresh)
		if pushed {
			m.Flags |= FlagPushed
			m.Line = 0
		}
		if old != nil {
			if old.isUserMessage() != m.isUserMessage() {
				si.FirstUserKnown, si.FirstTitle = false, "" // replaced by an entry of another kind: walk
			}
			oldRaw, ok := batchRaw[old.Seq]
			if !ok {
				oldRaw, _ = s.Raw(old.Seq)
			}
			sameBytes := bytes.Equal(oldRaw, e.Raw)
			switch {
			case pushed && sameBytes:
				res.Duplicates++
				continue
			case !pushed && old.Flags&FlagPushed != 0:
				// The file now holds an entry that was pushed earlier: keep
				// its seq (and place), take the file's bytes and line.
				m.Seq = old.Seq
				if err := s.putEntry(b, m, e, false); err != nil {
					return err
				}
				si.titleFrom(m, e)
				if !sameBytes {
					if err := b.Set(seqKey(tagDeleted, m.Seq), nil, nil); err != nil {
						return err
					}
					s.deletes = true
				}
				batchIDs[e.ID] = m
				res.Confirmed++
				continue
			case !pushed && sameBytes:
				res.Duplicates++ // the same line twice in a file, or a rescan overlap
				continue
			case ownFile:
				// The session's journal, rewritten, holds other bytes for
				// the entry (Pi's v2 to v3 migration, an edited line): it
				// keeps its seq (and place) and takes the file's bytes.
				m.Seq = old.Seq
				if err := s.putEntry(b, m, e, false); err != nil {
					return err
				}
				si.titleFrom(m, e)
				if err := b.Set(seqKey(tagDeleted, m.Seq), nil, nil); err != nil {
					return err
				}
				s.deletes = true
				batchIDs[e.ID] = m
				batchRaw[m.Seq] = e.Raw
				res.Replaced++
				si.Bytes += int64(len(e.Raw) - len(oldRaw))
				if old.Searchable() != m.Searchable() {
					if m.Searchable() {
						si.Searchable++
					} else {
						si.Searchable--
					}
				}
				continue
			}
		}
		m.Seq = s.nextSeq
		s.nextSeq++
		if err := s.putEntry(b, m, e, true); err != nil {
			return err
		}
		batchIDs[e.ID] = m
		batchRaw[m.Seq] = e.Raw
		res.Added++
		if si.FirstUserKnown && si.FirstUser == 0 && si.Entries < TitleScan && m.isUserMessage() {
			si.FirstUser = m.Seq
			si.titleFrom(m, e)
		}
		si.Entries++
		if m.Searchable() {
			si.Searchable++
		}
		si.Bytes += int64(len(e.Raw) + 1)
		si.Leaf, si.LeafSeq, si.LeafWindow = m.ID, m.Seq, m.Window
		if e.Timestamp > si.LastActivity {
			si.LastActivity = e.Timestamp
		}
		if e.Type == "session_info" && e.HasName {
			si.Name = e.Name
		}
	}
	return nil
}

// putEntry writes entry e under m.Seq into b. A fresh seq (one just
// taken from nextSeq) has held nothing, so its text goes in without the
// deletions of what an earlier version of the entry may have left: each
// would be a tombstone that lookups step over until a compaction drops it.
func (s *Store) putEntry(b *pebble.Batch, m *Meta, e *journal.Entry, fresh bool) error {
	enc := m.encode(nil)
	if err := b.Set(seqKey(tagEntry, m.Seq), enc, nil); err != nil {
		return err
	}
	if err := b.Set(orderKey(m.Session, m.Seq), nil, nil); err != nil {
		return err
	}
	if err := b.Set(idKey(m.Session, m.ID), binary.BigEndian.AppendUint64(nil, m.Seq), nil); err != nil {
		return err
	}
	if err := b.Set(seqKey(tagRaw, m.Seq), e.Raw, nil); err != nil {
		return err
	}
	switch {
	case e.Searchable:
		return s.putText(b, m.Seq, e.Text, fresh)
	case fresh:
		return nil
	}
	return deleteText(b, m.Seq)
}

// windowFor computes the context window of e on its own ancestor chain:
// its parent's window, plus one if e is a compaction with a parent.
func (s *Store) windowFor(sid string, e *journal.Entry, batch map[string]*Meta, fresh bool) int {
	if e.ParentID == "" {
		return 1
	}
	pw := 0
	if m, ok := batch[e.ParentID]; ok {
		pw = m.Window
	} else if fresh {
		// nothing stored counts
	} else if seq, err := s.Lookup(sid, e.ParentID); err == nil {
		if m, err := s.Meta(seq); err == nil {
			pw = m.Window
		}
	}
	if pw == 0 {
		return 1 // parent unknown: the entry is a root
	}
	if e.Type == "compaction" {
		return pw + 1
	}
	return pw
}

func (s *Store) commit(b *pebble.Batch, si *SessionInfo) error {
	if err := b.Delete(sessionKey(tagBranch, si.ID), nil); err != nil {
		return err
	}
	sib, _ := json.Marshal(si)
	if err := b.Set(sessionKey(tagSession, si.ID), sib, nil); err != nil {
		return err
	}
	if err := b.Set(append([]byte{tagMeta}, "seq"...), binary.BigEndian.AppendUint64(nil, s.nextSeq), nil); err != nil {
		return err
	}
	if err := s.commitWithTexts(b); err != nil {
		return err
	}
	s.trees.drop(si.ID)
	return s.notify(b.Len())
}
