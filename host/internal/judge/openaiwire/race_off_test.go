//go:build !race

package openaiwire

// raceEnabled says the race detector is on: allocation counts then include
// its own and budgets are not checked.
const raceEnabled = false
