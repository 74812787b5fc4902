package app

import (
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/sextant-dev/sextant/host/internal/routine"
	"github.com/sextant-dev/sextant/host/internal/run"
)

// RunArgs are what sextant run is given before it opens a store.
type RunArgs struct {
	Pipeline  string    // the pipeline file
	InputFile string    // --input: a JSON file, or - for Stdin
	Sets      []string  // --set k=v input fields, over the input file's
	TruthFile string    // --truth: inline JSON or a JSON file
	TaskID    string    // --id ("" = generated)
	Message   string    // --message: the message start event to start at
	Tags      []string  // --tag
	Stdin     io.Reader // what --input - and --truth - read
}

// PrepareRun reads and checks a run's input and prepares its pipeline
// (with prepare), so that bad input is found before a store is opened or
// made. The caller closes the Prepared.
func PrepareRun(ctx context.Context, a RunArgs, prepare func(context.Context, string) (*run.Prepared, error)) (*run.Prepared, run.Input, error) {
	input, err := run.ReadInput(a.InputFile, a.Stdin)
	if err != nil {
		return nil, run.Input{}, err
	}
	extra, err := routine.ParseSets(a.Sets, routine.Native)
	if err != nil {
		return nil, run.Input{}, &UsageError{fmt.Errorf("--set %w", err)}
	}
	maps.Copy(input, extra)
	truth, err := run.ReadTruth(a.TruthFile, a.Stdin)
	if err != nil {
		return nil, run.Input{}, err
	}
	prep, err := prepare(ctx, a.Pipeline)
	if err != nil {
		return nil, run.Input{}, err
	}
	in := run.Input{ID: a.TaskID, Input: input, Truth: truth, Tags: a.Tags}
	if in.Start, err = run.MessageStart(prep.Routine, a.Message); err == nil {
		err = prep.CheckInput(ctx, run.Input{Input: input, Start: in.Start})
	}
	if err != nil {
		prep.Close(context.WithoutCancel(ctx))
		return nil, run.Input{}, err
	}
	return prep, in, nil
}
