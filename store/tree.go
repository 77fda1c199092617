package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pi-history/pi-history/journal"
)

// SessionTree is a session's entry tree with the store records behind it.
type SessionTree struct {
	*journal.Tree
	Metas []*Meta // parallel to Tree.Entries

	curOnce sync.Once
	current map[string]bool // ids on the current branch
	lvOnce  sync.Once
	leaves  map[string][]string // id → leaves whose branch holds it (at most maxLeaves)
}

const maxLeaves = 64

// OnCurrentBranch reports whether id lies on the path to the current leaf.
func (t *SessionTree) OnCurrentBranch(id string) bool {
	t.curOnce.Do(func() {
		t.current = map[string]bool{}
		if p, err := t.Path(t.Leaf()); err == nil {
			for _, e := range p {
				t.current[e.ID] = true
			}
		}
	})
	return t.current[id]
}

// LeavesOf returns the leaves whose branch holds id (up to 64), in file order.
func (t *SessionTree) LeavesOf(id string) []string {
	t.lvOnce.Do(func() {
		t.leaves = map[string][]string{}
		for _, l := range t.Leaves() {
			p, err := t.Path(l)
			if err != nil {
				continue
			}
			for _, e := range p {
				if len(t.leaves[e.ID]) < maxLeaves {
					t.leaves[e.ID] = append(t.leaves[e.ID], l)
				}
			}
		}
	})
	return t.leaves[id]
}

// MetaOf returns the record of entry id, or nil.
func (t *SessionTree) MetaOf(id string) *Meta {
	if i := t.Index(id); i >= 0 {
		return t.Metas[i]
	}
	return nil
}

// Tree returns the entry tree of a session. Trees are cached and rebuilt
// after the session changes.
func (s *Store) Tree(sid string) (*SessionTree, error) {
	if t := s.trees.get(sid); t != nil {
		return t, nil
	}
	gen := s.trees.generation(sid)
	if _, err := s.Session(sid); err != nil {
		return nil, err
	}
	metas, err := s.SessionMetas(sid)
	if err != nil {
		return nil, err
	}
	entries := make([]*journal.Entry, len(metas))
	for i, m := range metas {
		entries[i] = m.Entry()
	}
	t := &SessionTree{Tree: journal.NewTree(entries), Metas: metas}
	s.trees.put(sid, t, gen)
	return t, nil
}

// CurrentBranchSeqs returns, ascending, the seqs of the entries on the path
// to the session's current leaf. They are kept for many more sessions than
// whole trees (8 bytes per entry on the branch), so a search over every
// session can tell which hits lie on their session's current branch
// without loading each session's tree again. Like trees, they are dropped
// when the session changes. A branch worked out is also kept in the store
// (see tagBranch) for the next process.
func (s *Store) CurrentBranchSeqs(sid string) ([]uint64, error) {
	seqs, _, err := s.CurrentBranchSeqsRead(sid)
	return seqs, err
}

// CurrentBranchSeqsRead is CurrentBranchSeqs, also returning the session's
// record when it had to read it (nil when the branch was known), with the
// session's generation (SessionGeneration) as it was before the read: a
// caller that needs the record too reads it once.
func (s *Store) CurrentBranchSeqsRead(sid string) ([]uint64, *SessionRead, error) {
	if b, ok := s.trees.getBranch(sid); ok {
		return b, nil, nil
	}
	gen := s.trees.generation(sid)
	var seqs []uint64
	var read *SessionRead
	if t := s.trees.get(sid); t != nil {
		for _, m := range t.Metas {
			if t.OnCurrentBranch(m.ID) {
				seqs = append(seqs, m.Seq)
			}
		}
	} else {
		si, err := s.Session(sid)
		if err != nil {
			return nil, nil, err
		}
		read = &SessionRead{Info: si, Generation: gen}
		if saved, ok := s.savedBranch(sid, si.LeafSeq); ok {
			seqs = saved
		} else {
			if seqs, err = s.branchSeqs(sid); err != nil {
				return nil, nil, err
			}
			s.branchWalks.Add(1)
			slices.Sort(seqs)
			s.saveBranch(sid, si.LeafSeq, seqs, gen)
		}
	}
	slices.Sort(seqs)
	s.trees.putBranch(sid, seqs, gen)
	return seqs, read, nil
}

// SessionRead is a session's record as read, with the session's generation
// (Store.SessionGeneration) taken before the read: the record is current
// while the generation is.
type SessionRead struct {
	Info       *SessionInfo
	Generation uint64
}

// branchSeqs works out the seqs of the path to sid's last entry (its
// current leaf, as journal.Tree.Leaf has it) from its records' ids and
// parents alone: building the whole tree to learn it decoded every
// record, and a server searching a history of big sessions held whole
// trees for it (docs/measurements/2026-12-07-engine-on-disk.md, runs 4–6).
// Like journal.Tree.Path, a
// missing parent ends the path and a cycle is cut where it closes.
func (s *Store) branchSeqs(sid string) ([]uint64, error) {
	type link struct {
		parent string
		seq    uint64
	}
	byID := map[string]int{}
	var links []link
	var derr error
	err := s.walkSessionRecords(sid, func(v []byte) bool {
		seq, id, parent, err := decodeLinks(v)
		if err != nil {
			derr = err
			return false
		}
		byID[string(id)] = len(links) // the last entry of an id, as journal.NewTree keeps
		links = append(links, link{parent: string(parent), seq: seq})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil || len(links) == 0 {
		return nil, err
	}
	var seqs []uint64
	seen := make(map[int]bool)
	for i := len(links) - 1; !seen[i]; {
		seen[i] = true
		seqs = append(seqs, links[i].seq)
		j, ok := byID[links[i].parent]
		if links[i].parent == "" || !ok {
			break
		}
		i = j
	}
	return seqs, nil
}

// treeCacheEntries bounds the entries of the trees kept whole (a tree
// holds each entry's record and its journal.Entry, about half a kilobyte
// an entry), so that they fit well inside a server's default Go limit
// (service.SplitMemory).
const treeCacheEntries = 64_000

// maxBranchSeqs bounds the seqs kept by CurrentBranchSeqs (32 MB).
const maxBranchSeqs = 4 << 20

// treeCache keeps recently used trees, bounded by their total entry count,
// and the seqs of sessions' current branches. Lookups share a read lock;
// the recency tick is atomic.
type treeCache struct {
	mu    sync.RWMutex
	max   int
	total int
	tick  atomic.Uint64
	m     map[string]*cached
	// branches holds CurrentBranchSeqs results; when they exceed
	// maxBranchSeqs, arbitrary sessions' are forgotten.
	branches    map[string][]uint64
	branchTotal int
	// gen counts the drops of each session. A tree loaded while a commit
	// dropped its session may predate that commit: it is returned to its
	// caller but not cached.
	gen map[string]uint64
}

type cached struct {
	t    *SessionTree
	used atomic.Uint64
}

func newTreeCache(max int) *treeCache {
	return &treeCache{max: max, m: map[string]*cached{}, gen: map[string]uint64{}, branches: map[string][]uint64{}}
}

func (c *treeCache) getBranch(sid string) ([]uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	b, ok := c.branches[sid]
	return b, ok
}

func (c *treeCache) putBranch(sid string, seqs []uint64, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[sid] != gen {
		return // the session changed while the branch was worked out
	}
	c.branchTotal += len(seqs) - len(c.branches[sid])
	c.branches[sid] = seqs
	for k, v := range c.branches {
		if c.branchTotal <= maxBranchSeqs {
			break
		}
		if k != sid {
			c.branchTotal -= len(v)
			delete(c.branches, k)
		}
	}
}

// branchRoom is how many more seqs the branch lists take before sessions'
// lists are forgotten.
func (c *treeCache) branchRoom() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maxBranchSeqs - c.branchTotal
}

func (c *treeCache) generation(sid string) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen[sid]
}

func (c *treeCache) get(sid string) *SessionTree {
	c.mu.RLock()
	e, ok := c.m[sid]
	c.mu.RUnlock()
	if !ok {
		return nil
	}
	e.used.Store(c.tick.Add(1))
	return e.t
}

func (c *treeCache) put(sid string, t *SessionTree, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[sid] != gen {
		return // the session changed while t was loaded
	}
	if old, ok := c.m[sid]; ok {
		c.total -= old.t.Len()
	}
	e := &cached{t: t}
	e.used.Store(c.tick.Add(1))
	c.m[sid] = e
	c.total += t.Len()
	for c.total > c.max && len(c.m) > 1 {
		var victim string
		var oldest uint64 = ^uint64(0)
		for k, e := range c.m {
			if u := e.used.Load(); k != sid && u < oldest {
				victim, oldest = k, u
			}
		}
		c.total -= c.m[victim].t.Len()
		delete(c.m, victim)
	}
}

func (c *treeCache) drop(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[sid]++
	if old, ok := c.m[sid]; ok {
		c.total -= old.t.Len()
		delete(c.m, sid)
	}
	c.branchTotal -= len(c.branches[sid])
	delete(c.branches, sid)
}

// WarmBranches works out the current branch of every session (see
// CurrentBranchSeqs), newest session first, until their seqs would pass
// the bound, so that branch-scope searches and the hits of all-scope
// searches need no tree loads. It returns how many sessions it covered. A
// server calls it once in the background after it starts. It loads no
// trees (see branchSeqs).
func (s *Store) WarmBranches(ctx context.Context) (int, error) {
	infos, err := s.Sessions()
	if err != nil {
		return 0, err
	}
	slices.SortFunc(infos, func(a, b *SessionInfo) int { return cmp.Compare(b.LastActivity, a.LastActivity) })
	n := 0
	for _, si := range infos {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if s.trees.branchRoom() < si.Entries {
			break
		}
		if _, err := s.CurrentBranchSeqs(si.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("work out the current branch of session %s: %w", si.ID, err)
		}
		n++
	}
	return n, nil
}
