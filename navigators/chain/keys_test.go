package chain

import (
	"slices"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestKeysDocumented(t *testing.T) {
	names := func(fs []sdk.ConfigField) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	if got := names(RoutineKeys); !slices.Equal(got, rootKeys) {
		t.Errorf("RoutineKeys = %q, the loader reads %q", got, rootKeys)
	}
	if got := names(StepKeys); !slices.Equal(got, stepKeys) {
		t.Errorf("StepKeys = %q, the loader reads %q", got, stepKeys)
	}
}
