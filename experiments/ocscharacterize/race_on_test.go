//go:build race

package ocscharacterize_test

// raceDetector says the tests run under the race detector. The simulated
// microsecond switch runs in real time, and the recipe must read every
// night it makes: under the detector beside other packages the reads fall
// behind and nights are missed, so the test that needs all of them skips
// there and runs without it, alone (the Makefile's REALTIME, in make
// test-long).
const raceDetector = true
