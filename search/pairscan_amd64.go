package search

import "golang.org/x/sys/cpu"

// useAVX2 says whether pairScan tests 32 positions at a time with AVX2
// (read by pairscan_amd64.s). Over texts a first page reads in vain (most
// of the index's candidates for a 3-5 character needle hold no match, and each
// is read to its end), twice the width of SSE2 halves the loop's work.
var useAVX2 = cpu.X86.HasAVX2

// pairScan is implemented in pairscan_amd64.s.
//
//go:noescape
func pairScan(s []byte, from, end, o1, o2, o3 int, b1, b2, b3 byte) int

// hasPairScan says whether pairScan tests positions in bulk here.
const hasPairScan = true
