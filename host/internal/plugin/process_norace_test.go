//go:build !race

package plugin

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
