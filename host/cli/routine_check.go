package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/routine"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// routineLoader loads routines and pipelines for the routine commands as
// the other commands do: file hints, plugins beside the file.
type routineLoader struct{ a *app }

var _ routine.Loader = routineLoader{}

func (l routineLoader) Pipeline(ctx context.Context, path string) (*run.Loaded, error) {
	if err := needFile("pipeline", path); err != nil {
		return nil, err
	}
	reg, err := l.a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return run.Load(ctx, path, reg, l.a.logger)
}

func (l routineLoader) Prepare(ctx context.Context, path string) (*run.Prepared, error) {
	return l.a.prepare(ctx, path)
}

// Routine loads a routine file; a navigator it cannot tell or that is no
// navigator is a usage mistake.
func (l routineLoader) Routine(ctx context.Context, path, navigator string, decisions []string) (*routine.Loaded, error) {
	reg, err := l.a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	r, err := routine.Load(ctx, reg, path, navigator, decisions)
	var ne *routine.NavigatorError
	if errors.As(err, &ne) {
		return nil, usageErr(err)
	}
	return r, err
}

// printChecked prints routine validate's results: ok lines on stdout,
// warnings on stderr, and errs as the error (exit 2), or a refusal when
// strict and there were warnings.
func (a *app) printChecked(results []routine.Result, errs []error, strict bool) error {
	warned := false
	for _, res := range results {
		warned = warned || len(res.Warnings) > 0
		if !res.OK {
			continue
		}
		fmt.Fprintf(a.stdout, "%s: ok (%d nodes)\n", res.File, res.Nodes)
		printWarnings(a.stderr, res.Warnings)
		if res.Unchecked != "" {
			fmt.Fprintf(a.stderr, "%s: names not checked against --input: %s\n", res.File, res.Unchecked)
		}
	}
	if len(errs) > 0 {
		return withInvalid(errors.Join(errs...))
	}
	if strict && warned {
		return withInvalid(errors.New("validate --strict: the routine has warnings"))
	}
	return nil
}

// simOptions reads routine simulate's variables, input, gateway choices
// and strategy.
func (a *app) simOptions(sets, chooses []string, inputFile, strategyFile string) (run.SimOptions, error) {
	var o run.SimOptions
	var err error
	if o.Vars, err = parseSets(sets); err != nil {
		return o, err
	}
	if o.Input, err = a.readInput(inputFile, nil); err != nil {
		return o, err
	}
	if o.Choose, err = routine.ParseChoices(chooses); err != nil {
		return o, usageErr(fmt.Errorf("--choose %w", err))
	}
	if strategyFile != "" {
		st, err := strategy.Load(strategyFile)
		if err != nil {
			return o, withInvalid(err)
		}
		o.Strategy = st.Env()
	}
	return o, nil
}

// printWarnings writes warnings to w, one per line, as problems are
// written, with "warning: " before the message.
func printWarnings(w io.Writer, warns []sdk.Problem) {
	for _, p := range warns {
		p.Message = "warning: " + p.Message
		fmt.Fprintln(w, p.String())
	}
}
