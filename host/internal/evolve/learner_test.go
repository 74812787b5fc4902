package evolve

import (
	"testing"

	"github.com/sextant-dev/sextant/host/internal/strategy"
)

func TestOpCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []strategy.Delta
		want string
	}{
		{"none", nil, ""},
		{"ordered by kind", []strategy.Delta{{Op: strategy.OpRemove}, {Op: strategy.OpTag}, {Op: strategy.OpAdd}, {Op: strategy.OpTag}},
			"2 TAG, 1 ADD, 1 REMOVE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OpCounts(tc.ops); got != tc.want {
				t.Fatalf("OpCounts: %q, want %q", got, tc.want)
			}
		})
	}
}
