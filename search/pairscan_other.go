//go:build !amd64

package search

// pairScan returns the first p in [from, end] with s[p+o1] == b1,
// s[p+o2] == b2 and s[p+o3] == b3, or -1: pairscan_amd64.s tests 16
// positions at a time.
// Here, one at a time, it is no faster than finder.index's one-byte way,
// which finders use instead (see hasPairScan); the finder's tests still
// run it.
func pairScan(s []byte, from, end, o1, o2, o3 int, b1, b2, b3 byte) int {
	for p := from; p <= end; p++ {
		if s[p+o1] == b1 && s[p+o2] == b2 && s[p+o3] == b3 {
			return p
		}
	}
	return -1
}

// hasPairScan says whether pairScan tests positions in bulk here.
const hasPairScan = false

// useAVX2 is pairscan_amd64.go's; here it changes nothing.
var useAVX2 = false
