//go:build race

package openaiwire

const raceEnabled = true
