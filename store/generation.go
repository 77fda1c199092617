package store

// SessionGeneration is a number that changes whenever the session sid is
// written to (the tree cache's own generation): what a caller derives from
// a session stays valid while it is the same. It is kept in memory only,
// so it is comparable within one process.
func (s *Store) SessionGeneration(sid string) uint64 { return s.trees.generation(sid) }
