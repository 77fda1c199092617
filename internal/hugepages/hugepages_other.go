//go:build !linux

package hugepages

import "context"

// Collapse reports ErrUnsupported: only Linux collapses memory into huge
// pages on request.
func Collapse(context.Context) (Stats, error) { return Stats{}, ErrUnsupported }
