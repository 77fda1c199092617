//go:build race

package export

// raceEnabled shrinks the streaming test under the race detector, which
// makes compression some ten times slower.
const raceEnabled = true
