package wasm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
)

const gcProbe = "host/internal/plugin/wasm/testdata/gcprobe"

// TestMemoryLimitTold: the host tells a Go guest its memory limit
// (sextant_memory_limit) when the instance starts, and the SDK collects
// less often (GOGC 400) under a Go memory limit of 3/4 of it.
func TestMemoryLimitTold(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin")
	}
	const limit = 32 << 20
	_, c := open(t, "gcprobe", plugintest.Wasm(t, gcProbe), Config{MemoryLimit: limit})
	v, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": "gc"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gogc=400", fmt.Sprintf("limit=%d", limit/4*3)}
	if !slices.Equal(v.Reasons, want) {
		t.Fatalf("guest GC settings %q, want %q", v.Reasons, want)
	}
}

// TestMemoryLimitCollects: a guest whose live heap times 5 (GOGC 400)
// exceeds its instance's memory limit still collects in time, held by the
// Go memory limit, rather than running out of memory.
func TestMemoryLimitCollects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin")
	}
	_, c := open(t, "gcprobe", plugintest.Wasm(t, gcProbe), Config{MemoryLimit: 32 << 20})
	for range 3 {
		_, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": "churn", "live": 10, "garbage": 100}})
		if err != nil {
			t.Fatal(err)
		}
	}
}
