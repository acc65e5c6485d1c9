//go:build !race

package fct_test

const raceDetector = false
