package process

import (
	"context"
	"testing"
)

// TestSmallMemoryRequest: a request that is a fine heap for a wasm build
// (the scaffold's "64MiB") lets a native Go plugin start and answer too:
// the runtime's reservations are not counted against it.
func TestSmallMemoryRequest(t *testing.T) {
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.MemoryLimit = 64 << 20; c.MaxRestarts = -1 })
	if _, err := check(context.Background(), p, "ok"); err != nil {
		t.Fatal(err)
	}
}
