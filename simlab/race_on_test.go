//go:build race

package simlab

// raceDetector says the tests run under the race detector, which makes
// the frame-level models ten times slower: the longest of them skip and
// run without it instead (the Makefile's test target names them).
const raceDetector = true
