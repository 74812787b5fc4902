package temporal

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// Pipelines gives a worker's steppers by pipeline name and strategy
// version. An error matching sdk.ErrInvalid is final (the run cannot go
// on on this worker); any other is retried.
type Pipelines interface {
	// Stepper returns the stepper of the named pipeline under the
	// strategy version ref (by its hash); a zero ref asks for the version
	// a run beginning now uses.
	Stepper(ctx context.Context, name string, ref store.StrategyRef) (*run.Stepper, error)
}

// PipelineMap is a fixed set of steppers by pipeline name, each under
// its one strategy (tests, benchmarks).
type PipelineMap map[string]*run.Stepper

// Stepper returns the stepper of the named pipeline when its strategy is
// ref's (or ref is zero).
func (m PipelineMap) Stepper(_ context.Context, name string, ref store.StrategyRef) (*run.Stepper, error) {
	s, ok := m[name]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeInvalid, "this worker has no pipeline %q", name)
	}
	if ref.Hash != "" && s.StrategyHash() != ref.Hash {
		return nil, strategyErr(name, s.StrategyHash(), ref)
	}
	return s, nil
}

func strategyErr(name, have string, want store.StrategyRef) error {
	return sdk.Errorf(sdk.CodeInvalid, "pipeline %q: this worker's strategy (%.12s…) is not the one the run was started with (%s %s, %.12s…)",
		name, have, want.Name, want.Version, want.Hash)
}

// LivePipelines are the pipelines a worker loaded (LoadPipelines), by
// name. A run begins under its pipeline's live strategy version, which
// the worker asks the store's holder for (Sink.Live) as the run begins,
// as a local run reads it from its store; the version is then in the
// run's snapshot, in the workflow's history, and the run keeps it
// whatever moves since (RATIONALE "Why runs follow a live version in the
// store, with `[strategy] file` as its default, not a pin").
type LivePipelines map[string]*livePipeline

// livePipeline is one loaded pipeline: its steppers by strategy hash,
// made as runs need them, all over the one set of plugins.
type livePipeline struct {
	prep *run.Prepared // as configured
	conf evolve.LiveVersion
	sink Sink
	rec  run.Recorder // the sink, through the pipeline's redactor
	cfg  run.Config

	mu sync.Mutex
	by map[string]*run.Stepper // by strategy hash
}

func newLivePipeline(prep *run.Prepared, sink Sink, rec run.Recorder, cfg run.Config) (*livePipeline, error) {
	lp := &livePipeline{prep: prep, sink: sink, rec: rec, cfg: cfg, by: map[string]*run.Stepper{}}
	if prep.Pipeline.Strategy.File != "" {
		conf, _, err := evolve.Configured(prep.Pipeline)
		if err != nil {
			return nil, err
		}
		lp.conf = conf
	}
	lp.by[prep.Strategy.Hash()] = prep.NewStepper(cfg, rec)
	return lp, nil
}

// Stepper returns the named pipeline's stepper under ref; a zero ref is
// the live version, asked of the sink.
func (m LivePipelines) Stepper(ctx context.Context, name string, ref store.StrategyRef) (*run.Stepper, error) {
	lp, ok := m[name]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeInvalid, "this worker has no pipeline %q", name)
	}
	if ref.Hash != "" {
		return lp.version(ref, "")
	}
	if lp.conf.File == "" {
		return lp.version(store.StrategyRef{Hash: lp.prep.Strategy.Hash()}, "")
	}
	l, err := lp.sink.Live(ctx, name, lp.conf, lp.prep.Pipeline.Strategy.Pin)
	if err != nil {
		return nil, fmt.Errorf("live strategy of %s: %w", name, err)
	}
	v := l.Runs
	return lp.version(store.StrategyRef{Name: v.Name, Version: v.Version, Hash: v.Hash}, v.File)
}

// version is the stepper under ref: made once from the first file that
// holds it, file (the live record's) or else the configured file or the
// promoted version beside it (NAME-VERSION.toml, as promote writes it).
// A worker without that version refuses the run.
func (lp *livePipeline) version(ref store.StrategyRef, file string) (*run.Stepper, error) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if s := lp.by[ref.Hash]; s != nil {
		return s, nil
	}
	p := lp.prep.Pipeline
	files := []string{file}
	if p.Strategy.File != "" && ref.Name != "" {
		files = append(files, filepath.Join(filepath.Dir(filepath.FromSlash(p.Strategy.File)), ref.Name+"-"+ref.Version+".toml"))
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		st, err := strategy.Load(p.Path(filepath.FromSlash(f)))
		if err == nil && st.Hash() != ref.Hash && f == file {
			return nil, sdk.Errorf(sdk.CodeInvalid, "live strategy of %s: %s changed since %s %s was made live; restore it, or promote a version", p.Name, f, ref.Name, ref.Version)
		}
		if err != nil || st.Hash() != ref.Hash {
			continue
		}
		cp, pp := *lp.prep, *p
		pp.Strategy.File = filepath.FromSlash(f)
		cp.Pipeline, cp.Strategy = &pp, st
		s := cp.NewStepper(lp.cfg, lp.rec)
		lp.by[ref.Hash] = s
		return s, nil
	}
	return nil, strategyErr(p.Name, lp.prep.Strategy.Hash(), ref)
}
