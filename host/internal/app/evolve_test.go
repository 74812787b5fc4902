package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/sdk"
)

// TestEvolveLoads: an evolution loads the live version with its replays
// set up and the versions its candidates may not take; an adapter that
// does not resolve is a usage error, and a pipeline without a strategy
// invalid input.
func TestEvolveLoads(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	dir := filepath.Dir(f.pipeline)
	b, err := os.ReadFile(filepath.Join(dir, "candidates", "improving.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// A strategy file beside the live one takes its version (2.1.0).
	if err := os.WriteFile(filepath.Join(dir, "strategies", "email-handler-2.1.0.toml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var ev evolve.Evolution
	e, err := r.Evolve(ctx, f.pipeline, f.store, &ev, replay.Overrides{Sample: -1, OnMiss: replay.MissSkip})
	if err != nil {
		t.Fatal(err)
	}
	if e.Setup.Settings.OnMiss != replay.MissSkip || e.Configured != e.Setup.Loaded.Pipeline || !e.Taken["2.1.0"] || ev.Adapter == "" {
		t.Errorf("evolving: on-miss %q, configured %p of %p, taken %v (want 2.1.0), adapter %q",
			e.Setup.Settings.OnMiss, e.Configured, e.Setup.Loaded.Pipeline, e.Taken, ev.Adapter)
	}
	e.Close(ctx)
	if _, err := r.Evolve(ctx, f.pipeline, f.store, &evolve.Evolution{Adapter: "nightly"}, replay.Overrides{Sample: -1}); !errors.As(err, new(*UsageError)) {
		t.Errorf("adapter nightly: %v, want a usage error", err)
	}
	if b, err = os.ReadFile(f.pipeline); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "[strategy]")
	j := strings.Index(string(b), "[providers.default]")
	if i < 0 || j < i {
		t.Fatal("the fixture's pipeline has no [strategy] block before its providers")
	}
	if err := os.WriteFile(f.pipeline, append(b[:i:i], b[j:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Evolve(ctx, f.pipeline, f.store, &evolve.Evolution{}, replay.Overrides{Sample: -1}); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "[strategy]") {
		t.Errorf("no strategy: %v, want invalid input naming [strategy]", err)
	}
}
