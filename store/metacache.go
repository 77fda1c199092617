package store

import "sync"

const (
	metaShards = 64
	// metaCacheEntries bounds the decoded records kept in memory (~350
	// bytes each with their strings: ~22 MB).
	metaCacheEntries = 1 << 16
)

// metaCache keeps recently read entry records decoded, so that a search's
// hits, read again and again by the pages, lists and reads that follow,
// cost a map lookup instead of a point read through every level of
// Pebble. Records are shared: callers must not change them.
//
// A record changes only when a batch rewrites its seq (a pushed entry
// found in the file, a session rewritten or dropped); notify forgets those
// seqs after the commit and bumps their shard's generation, and a reader
// keeps what it read only if its shard's generation did not move while it
// read, so a read that raced with a commit is used once and not kept.
type metaCache struct {
	shards [metaShards]metaShard
}

type metaShard struct {
	mu  sync.Mutex
	m   map[uint64]*Meta
	gen uint64
}

func (c *metaCache) shard(seq uint64) *metaShard { return &c.shards[seq%metaShards] }

// get returns the cached record of seq, or nil and the generation to hand
// to put.
func (c *metaCache) get(seq uint64) (*Meta, uint64) {
	sh := c.shard(seq)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if m := sh.m[seq]; m != nil {
		return m, 0
	}
	return nil, sh.gen
}

// put keeps m unless a commit changed records of its shard since get.
func (c *metaCache) put(m *Meta, gen uint64) {
	sh := c.shard(m.Seq)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	if sh.m == nil {
		sh.m = map[uint64]*Meta{}
	}
	if len(sh.m) >= metaCacheEntries/metaShards {
		for k := range sh.m { // any one: map order is random
			delete(sh.m, k)
			break
		}
	}
	sh.m[m.Seq] = m
}

// forget drops seqs whose records a commit changed or deleted.
func (c *metaCache) forget(seqs []uint64) {
	for _, seq := range seqs {
		sh := c.shard(seq)
		sh.mu.Lock()
		delete(sh.m, seq)
		sh.gen++
		sh.mu.Unlock()
	}
}
