package store

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// A session's current branch, once worked out, is kept under C<sid>: a
// one-shot command searching every session would otherwise walk every
// record of the store to learn which hits lie on their session's current
// branch (walkSessionRecords). Every batch that changes
// the session deletes the key (commit, dropSession); a read also checks
// that the branch ends at the session's leaf. See
// docs/decisions/380-current-branches-kept.md.
const tagBranch = 'C' // C<sid>\x00 → the leaf's seq:8, then the branch's seqs ascending as uvarint gaps

// BranchesWorkedOut is how many current branches this store has worked
// out by walking their sessions' records, rather than read back as kept.
func (s *Store) BranchesWorkedOut() uint64 { return s.branchWalks.Load() }

// encodeBranch is the value of tagBranch for seqs (ascending) ending at
// leaf.
func encodeBranch(leaf uint64, seqs []uint64) []byte {
	v := make([]byte, 8, 8+2*len(seqs))
	binary.BigEndian.PutUint64(v, leaf)
	prev := uint64(0)
	for _, q := range seqs {
		v = binary.AppendUvarint(v, q-prev)
		prev = q
	}
	return v
}

// decodeBranch returns the seqs of a tagBranch value, and false when it is
// malformed or does not end at leaf (then it is worked out again).
func decodeBranch(v []byte, leaf uint64) ([]uint64, bool) {
	if len(v) < 8 || binary.BigEndian.Uint64(v) != leaf {
		return nil, false
	}
	var seqs []uint64
	prev := uint64(0)
	for rest := v[8:]; len(rest) > 0; {
		d, n := binary.Uvarint(rest)
		if n <= 0 || (d == 0 && len(seqs) > 0) {
			return nil, false
		}
		prev += d
		seqs = append(seqs, prev)
		rest = rest[n:]
	}
	if len(seqs) == 0 || seqs[len(seqs)-1] != leaf {
		return nil, false
	}
	return seqs, true
}

// savedBranch returns the branch kept for sid if it ends at leaf.
func (s *Store) savedBranch(sid string, leaf uint64) ([]uint64, bool) {
	v, closer, err := s.db.Get(sessionKey(tagBranch, sid))
	if err != nil {
		return nil, false
	}
	defer closer.Close()
	return decodeBranch(v, leaf)
}

// saveBranch keeps seqs as sid's current branch, unless the store is
// read-only, a writer is busy (the branch is kept another time), or the
// session changed since gen (the branch may predate the change). Holding
// the write lock, no commit can come between the check and the write.
func (s *Store) saveBranch(sid string, leaf uint64, seqs []uint64, gen uint64) {
	if s.readOnly || len(seqs) == 0 || !s.wmu.TryLock() {
		return
	}
	defer s.wmu.Unlock()
	// Not while a write fault is current: a cache write that went through
	// would clear it (commitBatch), and its checks start probes.
	if s.trees.generation(sid) != gen || len(s.faults.list()) > 0 {
		return
	}
	b := s.db.NewBatch()
	defer b.Close()
	if b.Set(sessionKey(tagBranch, sid), encodeBranch(leaf, seqs), nil) != nil {
		return
	}
	// Losing it in a crash only means working it out again.
	if err := s.commitBatch(b, pebble.NoSync); err != nil && !errors.Is(err, ErrWritesStopped) {
		s.faults.log.Warn("could not keep a session's current branch", "session", sid, "err", err)
	}
}
