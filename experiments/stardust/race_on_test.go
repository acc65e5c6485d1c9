//go:build race

package stardust_test

// raceDetector says the tests run under the race detector. The bench tests
// that run a whole recipe on twelve simulated switches take several times
// longer under it; they skip there (make test runs this package without
// the detector, its whole-recipe bench tests in make test-long; its
// Interrupted tests, which bring the same bench up and measure a point,
// run under it: the model-only one in make test, the two on the bench in
// make test-long).
const raceDetector = true
