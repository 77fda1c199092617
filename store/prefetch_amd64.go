package store

// prefetch is implemented in prefetch_amd64.s.
//
//go:noescape
func prefetch(p *byte)
