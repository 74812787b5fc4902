package docgen

import (
	"slices"
	"testing"
)

// TestDocKeysExist: every key the hand-written tables of expressions.md
// and templates.md name is a key of the format they say it is in.
func TestDocKeysExist(t *testing.T) {
	for _, k := range append(slices.Clone(exprKeys), templateKeys...) {
		if !slices.Contains(specKeys(k.Spec), k.Key) {
			t.Errorf("%s: no key %q (keys: %q)", k.File, k.Key, specKeys(k.Spec))
		}
	}
}
