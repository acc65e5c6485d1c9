//go:build race

package stardust_test

// raceDetector says the tests run under the race detector. The bench tests
// that run a whole recipe on twelve simulated switches take several times
// longer under it; they skip there (make test runs this package without
// the detector, and its Interrupted test, which brings the same bench up
// and measures a point, with it).
const raceDetector = true
