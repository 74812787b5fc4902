package sdk

import (
	"regexp"
	"testing"
)

// TestValidNameMatchesPattern: the hand-written ValidName accepts exactly
// what the documented expression accepts, on every string of up to five
// bytes over an alphabet that reaches each of its branches.
func TestValidNameMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9]*([-_][a-z0-9]+)*$`)
	const alphabet = "az09-_A. "
	var walk func(prefix string)
	walk = func(prefix string) {
		if got, want := ValidName(prefix), re.MatchString(prefix); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", prefix, got, want)
		}
		if len(prefix) == 5 {
			return
		}
		for i := range len(alphabet) {
			walk(prefix + alphabet[i:i+1])
		}
	}
	walk("")
	for _, s := range []string{"échelle", "a\x00b", "name-", "a--b", "a_-b", "echo-provider", "a1_b2-c3"} {
		if got, want := ValidName(s), re.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}
