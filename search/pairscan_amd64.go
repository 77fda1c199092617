package search

// pairScan is implemented in pairscan_amd64.s.
//
//go:noescape
func pairScan(s []byte, from, end, o1, o2, o3 int, b1, b2, b3 byte) int

// hasPairScan says whether pairScan tests positions in bulk here.
const hasPairScan = true
