//go:build !race

package stardust_test

const raceDetector = false
