package textmatch

import "fmt"

// MaxLevenshteinCells bounds a Levenshtein comparison's table: one cell
// per pair of characters of the two texts, after their common prefix and
// suffix are set aside (5000 × 5000). Its time grows with the product and
// a Wasm guest's time is metered, so a larger comparison is refused with
// an error that says so rather than left to run into the call's deadline.
const MaxLevenshteinCells = 5000 * 5000

// Levenshtein is the edit distance between a and b in characters
// (runes): the fewest single-character insertions, deletions and
// substitutions that turn one into the other. n is the longer one's length
// in characters, so 1 − d/n is their normalised similarity (and d ≤ n).
// It fails when the texts, less their common prefix and suffix, need a
// table of more than MaxLevenshteinCells.
func Levenshtein(a, b string) (d, n int, err error) {
	ra, rb := []rune(a), []rune(b)
	n = max(len(ra), len(rb))
	// A shared prefix or suffix costs nothing: set it aside, so a long
	// text with a small change stays cheap.
	for len(ra) > 0 && len(rb) > 0 && ra[0] == rb[0] {
		ra, rb = ra[1:], rb[1:]
	}
	for len(ra) > 0 && len(rb) > 0 && ra[len(ra)-1] == rb[len(rb)-1] {
		ra, rb = ra[:len(ra)-1], rb[:len(rb)-1]
	}
	if len(ra) == 0 || len(rb) == 0 {
		return len(ra) + len(rb), n, nil // insert or delete the rest
	}
	if int64(len(ra))*int64(len(rb)) > MaxLevenshteinCells {
		return 0, n, fmt.Errorf("texts differ over %d and %d characters, a table of %d cells; the limit is %d (5000 × 5000)",
			len(ra), len(rb), int64(len(ra))*int64(len(rb)), MaxLevenshteinCells)
	}
	if len(ra) < len(rb) {
		ra, rb = rb, ra // the row is the shorter side
	}
	row := make([]int, len(rb)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		diag := row[0] // the cell above-left: d(i-1, j-1)
		row[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			up := row[j] // d(i-1, j)
			row[j] = min(up+1, row[j-1]+1, diag+cost)
			diag = up
		}
	}
	return row[len(rb)], n, nil
}

// Similarity is 1 − d/n for Levenshtein's d and n, and 1 for two empty
// texts (nothing to edit). It is computed as (n − d)/n, one rounding, so
// it is the nearest float to the exact fraction (4/6 is 0.6666666666666666).
func Similarity(d, n int) float64 {
	if n == 0 {
		return 1
	}
	return float64(n-d) / float64(n)
}
