package app

import (
	"context"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Evolving is a pipeline loaded for sextant evolve: switched to its live
// version, from which candidates derive, prepared without credentials,
// with the setup of the evolution's replays.
type Evolving struct {
	Setup replay.Setup
	// Prep is the live version, prepared.
	Prep *run.Prepared
	// Configured is the pipeline as configured, whose live version the
	// winner replaces.
	Configured *pipeline.Pipeline
	// Taken are the versions a candidate may not take, Promoted those
	// already promoted from the live version (evolve.Taken).
	Taken    map[string]bool
	Promoted []string
}

// Close releases the prepared and loaded pipeline.
func (e *Evolving) Close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	e.Prep.Close(ctx)
	e.Setup.Loaded.Close(ctx)
}

// Evolve loads the pipeline at path for ev (resolving ev against it), its
// replays set up with the command line's overrides o; storeFlag is
// --store. The caller closes what it returns.
func (r *Replayer) Evolve(ctx context.Context, path, storeFlag string, ev *evolve.Evolution, o replay.Overrides) (*Evolving, error) {
	reg, err := r.Registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	loaded, err := run.Load(ctx, path, reg, r.Logger)
	if err != nil {
		return nil, err
	}
	e := &Evolving{Setup: replay.Setup{Loaded: loaded}}
	if e.Configured, err = r.FollowLive(ctx, loaded, storeFlag); err == nil {
		e.Prep, err = loaded.Open(ctx, run.WithoutCredentials())
	}
	if err != nil {
		loaded.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := r.evolving(ctx, e, reg, storeFlag, ev, o); err != nil {
		e.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (r *Replayer) evolving(ctx context.Context, e *Evolving, reg *plugin.Registry, storeFlag string, ev *evolve.Evolution, o replay.Overrides) error {
	p := e.Prep.Pipeline
	if p.Strategy.File == "" {
		return NeedStrategy(p, "evolve derives candidates from the pipeline's strategy")
	}
	settings, err := ev.ReplaySettings(e.Setup.Loaded.Pipeline, o)
	if err != nil {
		return &UsageError{err}
	}
	setup, err := r.Setup(e.Setup.Loaded, reg, settings)
	if err != nil {
		return err
	}
	e.Setup = setup
	e.Taken, e.Promoted, err = r.taken(ctx, p, storeFlag, e.Prep)
	return err
}

// taken reads evolve.Taken from the store evolve promotes into (read
// only, when it exists).
func (r *Replayer) taken(ctx context.Context, p *pipeline.Pipeline, storeFlag string, prep *run.Prepared) (map[string]bool, []string, error) {
	dir, err := StoreOf(p, storeFlag)
	if err != nil {
		return nil, nil, err
	}
	var st *store.Store
	if _, err := os.Stat(dir); err == nil {
		if st, err = r.OpenStore(ctx, dir, Read, p); err != nil {
			return nil, nil, err
		}
		defer st.Close()
	}
	return evolve.Taken(ctx, st, p, prep.Strategy)
}
