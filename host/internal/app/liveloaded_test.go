package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestFollowLiveLoaded: with no store, or a store where nothing moved,
// the configured version stays; the store rule finds the store (a broken
// sextant.toml is invalid input).
func TestFollowLiveLoaded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Chdir(filepath.Dir(f.store))
	t.Setenv(project.EnvStore, "")
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := run.Load(ctx, f.pipeline, plugin.NewRegistry(entries, plugin.WithLogger(quiet())), quiet())
	if err != nil {
		t.Fatal(err)
	}
	conf, st := loaded.Pipeline, loaded.Strategy
	if conf.Strategy.File == "" {
		t.Fatal("the fixture's pipeline configures no strategy file: the test would hold vacuously")
	}
	for _, storeFlag := range []string{"", f.store} {
		got, err := FollowLiveLoaded(ctx, loaded, storeFlag, quiet(), "sextant test")
		if err != nil || got != conf || loaded.Pipeline != conf || loaded.Strategy != st {
			t.Fatalf("--store %q: %v, %v", storeFlag, got, err)
		}
		open(t, Target{Store: f.store, Create: true}).Close()
	}
	if err := os.WriteFile(project.FileName, []byte("store = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FollowLiveLoaded(ctx, loaded, "", quiet(), "sextant test"); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a broken %s: %v, want invalid input", project.FileName, err)
	}
}
