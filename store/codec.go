package store

import (
	"encoding/binary"
	"errors"

	"github.com/pi-history/pi-history/journal"
)

// Meta is what the store keeps about one entry besides its raw line and
// searchable text: enough to place it in its session's tree and to describe a
// search hit without reading anything else.
type Meta struct {
	Seq       uint64 // store-wide sequence number, assigned on first store
	Session   string // session id
	ID        string
	ParentID  string
	Type      string
	Role      string
	Timestamp string
	Line      int // line in the journal file; 0 for an entry pushed before it reached the file
	Window    int // context window on the entry's own ancestor chain (1-based)
	TextLen   int // bytes of searchable text
	RawLen    int // bytes of the raw line
	Flags     uint8
	Extra     Extra
}

// Extra carries the few type-specific fields the tree and lists need.
type Extra struct {
	CustomType       string
	ToolName         string
	ToolCallID       string
	FirstKeptEntryID string
	TargetID         string
	Label            string
	Name             string
}

// Flags.
const (
	FlagSearchable uint8 = 1 << iota
	FlagIsError
	FlagFromHook
	FlagHasName
	FlagPushed // stored from a push, not yet seen in the file
)

// Searchable reports whether the entry has searchable text.
func (m *Meta) Searchable() bool { return m.Flags&FlagSearchable != 0 }

// isUserMessage says whether m is a message the user wrote.
func (m *Meta) isUserMessage() bool { return m.Type == "message" && m.Role == "user" }

// Entry converts the meta to a journal.Entry without Raw and Text, for trees.
func (m *Meta) Entry() *journal.Entry {
	return &journal.Entry{Type: m.Type, ID: m.ID, ParentID: m.ParentID, Timestamp: m.Timestamp, Line: m.Line,
		Role: m.Role, CustomType: m.Extra.CustomType, ToolName: m.Extra.ToolName, ToolCallID: m.Extra.ToolCallID,
		IsError: m.Flags&FlagIsError != 0, FirstKeptEntryID: m.Extra.FirstKeptEntryID, FromHook: m.Flags&FlagFromHook != 0,
		TargetID: m.Extra.TargetID, Label: m.Extra.Label, Name: m.Extra.Name, HasName: m.Flags&FlagHasName != 0,
		Searchable: m.Searchable()}
}

func metaFromEntry(sid string, e *journal.Entry) *Meta {
	m := &Meta{Session: sid, ID: e.ID, ParentID: e.ParentID, Type: e.Type, Role: e.Role, Timestamp: e.Timestamp,
		Line: e.Line, TextLen: len(e.Text), RawLen: len(e.Raw),
		Extra: Extra{CustomType: e.CustomType, ToolName: e.ToolName, ToolCallID: e.ToolCallID,
			FirstKeptEntryID: e.FirstKeptEntryID, TargetID: e.TargetID, Label: e.Label, Name: e.Name}}
	if e.Searchable {
		m.Flags |= FlagSearchable
	}
	if e.IsError {
		m.Flags |= FlagIsError
	}
	if e.FromHook {
		m.Flags |= FlagFromHook
	}
	if e.HasName {
		m.Flags |= FlagHasName
	}
	return m
}

const metaVersion = 1

func (m *Meta) encode(b []byte) []byte {
	b = append(b, metaVersion, m.Flags)
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.AppendUvarint(b, uint64(m.Line))
	b = binary.AppendUvarint(b, uint64(m.Window))
	b = binary.AppendUvarint(b, uint64(m.TextLen))
	b = binary.AppendUvarint(b, uint64(m.RawLen))
	for _, s := range []string{m.Session, m.ID, m.ParentID, m.Type, m.Role, m.Timestamp, m.Extra.CustomType,
		m.Extra.ToolName, m.Extra.ToolCallID, m.Extra.FirstKeptEntryID, m.Extra.TargetID, m.Extra.Label, m.Extra.Name} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errCorruptMeta = errors.New("store: corrupt entry record (run 'pi-history reindex' does not fix this; re-import the journal)")

func decodeMeta(b []byte) (*Meta, error) {
	m := new(Meta)
	if err := decodeMetaInto(m, b); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeLinks reads only an encoded record's seq, id and parent id: what
// a session's current branch needs (see branchSeqs), without the rest of
// the record's strings.
func decodeLinks(b []byte) (seq uint64, id, parent []byte, err error) {
	if len(b) < 2 || b[0] != metaVersion {
		return 0, nil, nil, errCorruptMeta
	}
	b = b[2:]
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, nil, errCorruptMeta
	}
	b = b[n:]
	for range 4 { // Line, Window, TextLen, RawLen
		if _, n = binary.Uvarint(b); n <= 0 {
			return 0, nil, nil, errCorruptMeta
		}
		b = b[n:]
	}
	var fields [3][]byte // Session, ID, ParentID
	for i := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return 0, nil, nil, errCorruptMeta
		}
		fields[i] = b[n : n+int(l)]
		b = b[n+int(l):]
	}
	return seq, fields[1], fields[2], nil
}

// decodeMetaInto is decodeMeta into m, every field of which it sets.
func decodeMetaInto(m *Meta, b []byte) error {
	if len(b) < 2 || b[0] != metaVersion {
		return errCorruptMeta
	}
	*m = Meta{Flags: b[1]}
	b = b[2:]
	nums := []*int{&m.Line, &m.Window, &m.TextLen, &m.RawLen}
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return errCorruptMeta
	}
	m.Seq = v
	b = b[n:]
	for _, p := range nums {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return errCorruptMeta
		}
		*p = int(v)
		b = b[n:]
	}
	// The fields are cut from one copy of the rest of the record: one
	// allocation instead of one per field (a hit decodes its record).
	rest := string(b)
	off := 0
	for _, p := range []*string{&m.Session, &m.ID, &m.ParentID, &m.Type, &m.Role, &m.Timestamp, &m.Extra.CustomType,
		&m.Extra.ToolName, &m.Extra.ToolCallID, &m.Extra.FirstKeptEntryID, &m.Extra.TargetID, &m.Extra.Label, &m.Extra.Name} {
		l, n := binary.Uvarint(b[off:])
		if n <= 0 || uint64(len(b)-off-n) < l {
			return errCorruptMeta
		}
		*p = rest[off+n : off+n+int(l)]
		off += n + int(l)
	}
	return nil
}

// Key layout. Every key starts with a one-byte table tag.
const (
	tagMeta    = 'm' // m<name>                     → store-wide values (next seq, format)
	tagEntry   = 'E' // E<seq:8>                    → Meta
	tagText    = 'T' // T<seq:8>                    → searchable text (a short one; see tagShared)
	tagRaw     = 'R' // R<seq:8>                    → raw JSON line
	tagOrder   = 'O' // O<sid>\x00<seq:8>           → nothing (older stores: Meta); a session's entries in file order
	tagID      = 'I' // I<sid>\x00<entry id>        → seq:8
	tagSession = 'S' // S<sid>                      → SessionInfo (JSON)
	tagFile    = 'F' // F<path>                     → FileState (JSON)
	tagDeleted = 'D' // D<seq:8>                    → nothing: removed entries the index must forget
	// X, H and U: texts stored once (see tagShared); C: sessions' current
	// branches (see tagBranch).
)

func seqKey(tag byte, seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = tag
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

func sessionKey(tag byte, sid string) []byte {
	k := make([]byte, 0, len(sid)+2)
	k = append(k, tag)
	k = append(k, sid...)
	return append(k, 0)
}

func orderKey(sid string, seq uint64) []byte {
	k := sessionKey(tagOrder, sid)
	return binary.BigEndian.AppendUint64(k, seq)
}

func idKey(sid, id string) []byte {
	k := sessionKey(tagID, sid)
	return append(k, id...)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
