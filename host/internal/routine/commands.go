package routine

import (
	"context"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// Source is what routine validate and simulate work on: a pipeline's
// routine (with its navigator and decisions), or routine files read by
// Navigator with Decisions. Strategy is a strategy file whose values
// simulate's conditions see, in place of the pipeline's.
type Source struct {
	Pipeline  string
	Files     []string
	Navigator string
	Decisions []string
	Strategy  string
}

// Usage says what is wrong with a Source as command cmd's arguments
// (files says what it takes instead of a pipeline: "FILEs"): it must name
// a pipeline or files, not both, and a pipeline brings its own navigator
// and decisions. It is nil when nothing is.
func (s Source) Usage(cmd, files string) error {
	switch {
	case s.Pipeline == "" && len(s.Files) == 0:
		return fmt.Errorf("%s: name %s or --pipeline FILE", cmd, files)
	case s.Pipeline != "" && len(s.Files) > 0:
		return fmt.Errorf("%s: give %s or --pipeline, not both", cmd, files)
	case s.Pipeline != "" && (s.Navigator != "" || len(s.Decisions) > 0):
		return fmt.Errorf("%s: --navigator and --decisions come from the pipeline with --pipeline", cmd)
	}
	return nil
}

// Loader loads what the routine commands work on, finding plugins and
// files as the caller does.
type Loader interface {
	// Pipeline loads and validates a pipeline and its routine.
	Pipeline(ctx context.Context, path string) (*run.Loaded, error)
	// Prepare loads a pipeline ready to run, its navigator open.
	Prepare(ctx context.Context, path string) (*run.Prepared, error)
	// Routine loads a routine file with its navigator (see [Load]).
	Routine(ctx context.Context, path, navigator string, decisions []string) (*Loaded, error)
}

// Validate loads and checks src's routines in order, warning against the
// sample start input (nil: none); errs are the loads that failed.
func Validate(ctx context.Context, src Source, l Loader, input map[string]any) (results []Result, errs []error) {
	if src.Pipeline != "" {
		p, err := l.Pipeline(ctx, src.Pipeline)
		if err != nil {
			errs = append(errs, err)
			results = append(results, Check(src.Pipeline, nil, nil, input, err))
		} else {
			p.Close(context.WithoutCancel(ctx))
			results = append(results, Check(p.Pipeline.Path(p.Pipeline.Routine.File), p.Routine, p.Pipeline, input, nil))
		}
	}
	for _, path := range src.Files {
		r, err := l.Routine(ctx, path, src.Navigator, src.Decisions)
		if err != nil {
			errs = append(errs, err)
			results = append(results, Check(path, nil, nil, input, err))
			continue
		}
		r.Close(ctx)
		results = append(results, Check(path, r.Routine, nil, input, nil))
	}
	return results, errs
}

// Simulate walks src's routine (its first file, or the pipeline's) as
// [run.Simulate] does, running no step. Conditions see src.Strategy's
// values, else opts.Strategy, or when it is nil the pipeline's strategy.
// A strategy file that does not load is sdk.ErrInvalid.
func Simulate(ctx context.Context, src Source, l Loader, opts run.SimOptions) (*run.SimResult, error) {
	if src.Strategy != "" {
		st, err := strategy.Load(src.Strategy)
		if err != nil {
			return nil, err
		}
		opts.Strategy = st.Env()
	}
	if src.Pipeline != "" {
		prep, err := l.Prepare(ctx, src.Pipeline)
		if err != nil {
			return nil, err
		}
		defer prep.Close(context.WithoutCancel(ctx))
		if opts.Strategy == nil {
			opts.Strategy = prep.Strategy.Env()
		}
		opts.Routine = prep.Routine
		return run.Simulate(ctx, prep.Navigator, prep.Routine.Hash, opts)
	}
	if len(src.Files) == 0 {
		return nil, errors.New("simulate: no routine file")
	}
	r, err := l.Routine(ctx, src.Files[0], src.Navigator, src.Decisions)
	if err != nil {
		return nil, err
	}
	defer r.Close(ctx)
	opts.Routine = r.Routine
	return run.Simulate(ctx, r.Navigator, r.Routine.Hash, opts)
}
