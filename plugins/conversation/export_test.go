package conversation

import "github.com/agentanvil/anvil/abi"

// Interactions exposes interactions as [start, end) pairs.
func Interactions(turns []abi.Turn) [][2]int {
	var out [][2]int
	for _, s := range interactions(turns) {
		out = append(out, [2]int{s.start, s.end})
	}
	return out
}
