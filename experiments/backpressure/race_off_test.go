//go:build !race

package backpressure_test

const raceDetector = false
