//go:build race

package main

// raceDetector says the test binary is built with the race detector.
const raceDetector = true
