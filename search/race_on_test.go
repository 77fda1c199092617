//go:build race

package search

// raceEnabled shrinks the brute-force matrices under the race detector,
// which makes a search some fifteen times slower (see pageSizes); the
// test script runs them whole without it.
const raceEnabled = true
