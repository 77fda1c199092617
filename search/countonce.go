package search

import (
	"bytes"
	"context"
	"slices"

	"github.com/pi-history/pi-history/store"
)

// countOnce counts the hits among ranges for a count with no filter,
// reading each text the store keeps once (see store.TextRef) only once
// however many entries hold it: the entries' inline texts and references
// are read first, then the distinct shared texts in the order they are
// stored. A needle in a licence header or a tool's boilerplate is held by
// a fifth of a history's entries, by far fewer distinct texts. Both passes
// run in two halves at once when they are long enough.
func (c *collector) countOnce(ctx context.Context, ranges []store.SeqRange) error {
	type part struct {
		refs    []store.TextRef
		hits    int
		scanned int
		bytes   int64
	}
	var parts [2]part
	inline := func(p *part, rs []store.SeqRange) error {
		n := 0
		return c.e.st.ScanTextRefs(rs, false, func(_ uint64, text []byte, ref *store.TextRef) (bool, error) {
			if n++; n%1024 == 0 && ctx.Err() != nil {
				return false, ctx.Err()
			}
			if ref != nil {
				p.refs = append(p.refs, *ref)
				return true, nil
			}
			p.scanned++
			p.bytes += int64(len(text))
			if c.p.find.index(text) >= 0 {
				p.hits++
			}
			return true, nil
		})
	}
	parallel := store.Count(ranges) >= c.e.opts.ParallelMin
	halves := [2][]store.SeqRange{ranges}
	if parallel {
		halves[0], halves[1] = store.Split(ranges)
	}
	if err := both(parallel, func(k int) error { return inline(&parts[k], halves[k]) }); err != nil {
		return err
	}
	// The distinct references, each with how many entries hold it.
	refs := append(parts[0].refs, parts[1].refs...)
	slices.SortFunc(refs, func(a, b store.TextRef) int { return bytes.Compare(a[:], b[:]) })
	var distinct []store.TextRef
	var holders []int
	for i, r := range refs {
		if i > 0 && r == refs[i-1] {
			holders[len(holders)-1]++
			continue
		}
		distinct, holders = append(distinct, r), append(holders, 1)
	}
	var shared [2]part
	cut := [3]int{0, len(distinct), len(distinct)}
	two := parallel && len(distinct) >= 2
	if two {
		cut[1] = len(distinct) / 2
	}
	err := both(two, func(k int) error {
		lo, hi := cut[k], cut[k+1]
		p := &shared[k]
		var ferr error
		err := c.e.st.ReadShared(distinct[lo:hi], func(i int, text []byte) bool {
			if i%256 == 255 && ctx.Err() != nil {
				ferr = ctx.Err()
				return false
			}
			p.scanned++
			p.bytes += int64(len(text))
			if c.p.find.index(text) >= 0 {
				p.hits += holders[lo+i]
			}
			return true
		})
		if err == nil {
			err = ferr
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range append(parts[:], shared[:]...) {
		c.st.Scanned += p.scanned
		c.st.BytesScanned += p.bytes
		c.st.Confirmed += p.hits
		c.hits = slices.Grow(c.hits, p.hits)
		for range p.hits {
			c.hits = append(c.hits, countedHit)
		}
	}
	return nil
}

// both runs fn(0) on this goroutine and, when two, fn(1) on another at
// once, and returns the first error.
func both(two bool, fn func(k int) error) error {
	if !two {
		return fn(0)
	}
	done := make(chan error, 1)
	go func() { done <- fn(1) }()
	err := fn(0)
	if err2 := <-done; err == nil {
		err = err2
	}
	return err
}
