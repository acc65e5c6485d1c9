//go:build !race

package simlab

const raceDetector = false
