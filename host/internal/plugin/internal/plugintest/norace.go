//go:build !race

package plugintest

// RaceEnabled is true when the tests run under the race detector.
const RaceEnabled = false
