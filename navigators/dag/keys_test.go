package dag

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
	if got := names(TaskKeys); !slices.Equal(got, taskKeys) {
		t.Errorf("TaskKeys = %q, the loader reads %q", got, taskKeys)
	}
}
