package simlab

// RaceDetector is raceDetector for the package's external tests.
const RaceDetector = raceDetector
