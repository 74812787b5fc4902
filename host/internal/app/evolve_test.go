package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
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

// TestRunEvolution: a dry-run round prints its candidates and settles
// nothing (the settling store is never opened), and a mutator the
// pipeline lacks is evolve.ErrUnknownMutator.
func TestRunEvolution(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	for _, tc := range []struct {
		mutators []string
		wantErr  error
	}{{nil, nil}, {[]string{"no-such-mutator"}, evolve.ErrUnknownMutator}} {
		var out, diag strings.Builder
		er := &EvolveRun{Evolution: evolve.Evolution{Mutators: tc.mutators, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, DryRun: true, Store: f.store, Stdout: &out, Stderr: &diag,
			SettleStore: func(context.Context, *pipeline.Pipeline) (*store.Store, string, error) {
				t.Error("a dry run opened the store to settle in")
				return nil, "", errors.New("dry run")
			}}
		e, err := r.Evolve(ctx, f.pipeline, f.store, &er.Evolution, replay.Overrides{Sample: -1, OnMiss: replay.MissSkip})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.RunEvolution(ctx, e, er)
		e.Close(ctx)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("mutators %v: %v, want %v", tc.mutators, err, tc.wantErr)
		}
		if tc.wantErr == nil && !strings.Contains(out.String(), "baseline") {
			t.Errorf("mutators %v: printed %q (stderr %q), want the baseline", tc.mutators, out.String(), diag.String())
		}
	}
}

// TestEpochPrinterHostile: the curator's refusal is a model's reply; its
// control characters are shown escaped on stderr, never obeyed by the
// terminal.
func TestEpochPrinterHostile(t *testing.T) {
	var out, diag bytes.Buffer
	er := &EvolveRun{Stdout: &out, Stderr: &diag, Evolution: evolve.Evolution{Epochs: 2}}
	er.epochPrinter(evolve.MetricSuccessRate)(evolve.Epoch{N: 1, Rejected: "no \x1b]0;pwned\x07 \u009b2J"})
	if want := "epoch 1: curator proposed nothing: no \\x1b]0;pwned\\x07 \\u009b2J\n"; diag.String() != want {
		t.Errorf("stderr %q, want %q", diag.String(), want)
	}
}
