//go:build race

package reactor_test

// raceDetector says the tests run under the race detector. The simulated
// microsecond switch runs in real time, and a schedule replacement sent
// over REST must reach it within a few periods of 1.5 ms: under the
// detector on a loaded machine it can miss the run by more than ten, so
// the tests that need it skip there and run without it, alone (the
// Makefile's REALTIME, in make test-long).
const raceDetector = true
