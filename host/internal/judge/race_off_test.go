//go:build !race

package judge

// raceEnabled says the race detector is on: allocation counts then include
// its own and budgets are not checked.
const raceEnabled = false
