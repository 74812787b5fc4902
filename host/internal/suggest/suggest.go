// Package suggest finds the near miss for a misspelt name, for
// `did you mean "default"?` hints.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate nearest to name by edit distance, if it is
// close enough to be a plausible typo, else "".
func Closest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if len(name) >= 3 && c != name && strings.HasPrefix(c, name) {
			return c // a truncated name ("sha" for "sha256")
		}
	}
	for _, c := range candidates {
		d := distance(name, c)
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := len(name) / 3
	if limit < 2 {
		limit = 2
	}
	if bestD < 0 || bestD > limit || best == name {
		return ""
	}
	return best
}

// Hint returns ` (did you mean "x"?)` for the closest candidate, or "".
func Hint(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// distance is the Levenshtein distance with adjacent transpositions
// counted as one edit (optimal string alignment).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
