//go:build !race

package ocscharacterize_test

const raceDetector = false
