//go:build race

package search

// raceEnabled shrinks the brute-force matrices under the race detector,
// which makes their searches many times slower (see pageSizes and
// docs/measurements/2026-12-07-a-slower-kernel.md); the test script runs
// them whole without it.
const raceEnabled = true
