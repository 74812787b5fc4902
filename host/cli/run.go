package cli

import (
	"context"
	"errors"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// runFlags are sextant run's flags.
type runFlags struct {
	inputFile, truthFile, taskID, message string
	sets, tags                            []string
	asJSON, wait, progress                bool
	sf                                    storeFlags
	tf                                    temporalFlags
}

func (a *app) runCommand() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:     "run PIPELINE",
		Short:   "Run a pipeline on one input and record it",
		Long:    help("run"),
		Example: help("run.example"),
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return a.run(cmd, args[0], &f) },
	}
	c.Flags().StringVar(&f.inputFile, "input", "", "JSON input file, or - for stdin")
	c.Flags().StringArrayVar(&f.sets, "set", nil, "input field k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().StringArrayVar(&f.tags, "tag", nil, "tag the task (repeatable)")
	c.Flags().StringVar(&f.truthFile, "truth", "", `ground truth for scoring: inline JSON (starting with {, [ or ") or a JSON file`)
	c.Flags().StringVar(&f.taskID, "id", "", "task id (default: generated)")
	c.Flags().StringVar(&f.message, "message", "", "start at the message start event of this message (BPMN); the input is the message's variables")
	c.Flags().BoolVar(&f.asJSON, "json", false, "machine-readable result")
	c.Flags().BoolVar(&f.progress, "progress", false, "show each step on stderr as it finishes (default: when stderr is a terminal; --progress=false turns it off)")
	c.Flags().BoolVar(&f.wait, "wait", false, "stay in the foreground through timers, retry delays, messages and signals until the run ends or waits for a person")
	f.sf.add(c, false)
	f.tf.add(c, true)
	a.addTelemetryFlag(c)
	return c
}

// run is sextant run: bad input is found before a store is opened or made.
func (a *app) run(cmd *cobra.Command, path string, f *runFlags) error {
	ctx := cmd.Context()
	prep, in, err := layer.PrepareRun(ctx, layer.RunArgs{Pipeline: path, InputFile: f.inputFile, Sets: f.sets,
		TruthFile: f.truthFile, TaskID: f.taskID, Message: f.message, Tags: f.tags, Stdin: a.stdin}, a.prepare)
	if err != nil {
		return err
	}
	defer prep.Close(context.WithoutCancel(ctx))
	loc := temporalLoc
	if f.tf.addr == "" {
		if loc, err = f.sf.locate(prep.Pipeline); err != nil {
			return err
		}
	}
	b, err := a.open(ctx, layer.Target{Store: loc.Dir, Create: true, Pipeline: prep.Pipeline, Temporal: f.tf.target()})
	if err != nil {
		return err
	}
	defer b.Close()
	req := layer.RunRequest{Prep: prep, Input: in, Wait: f.wait}
	if f.progress || (!cmd.Flags().Changed("progress") && isTerminal(a.stderr)) {
		req.OnStep = report.StepPrinter(a.stderr)
	}
	ctx, stop := layer.Interruptible(ctx, b)
	defer stop()
	res, err := b.Run(ctx, req)
	if err != nil {
		return err
	}
	return a.report(res, f.asJSON, loc)
}

// appOptions are what the app layer needs of this command line.
func (a *app) appOptions() (layer.Options, error) {
	clk, err := a.clock()
	if err != nil {
		return layer.Options{}, err
	}
	// The online adapter ([evolve] online) says what it learned on stderr
	// and dates versions by the command's clock.
	return layer.Options{Logger: a.logger, Clock: clk, Prepare: a.prepare, OTLPEndpoint: a.otlpEndpoint,
		Learner: &evolve.Online{Clock: clk, Out: a.stderr}, Command: a.command}, nil
}

// open is layer.Open with this command line's options.
func (a *app) open(ctx context.Context, t layer.Target) (layer.Backend, error) {
	o, err := a.appOptions()
	if err != nil {
		return nil, err
	}
	return layer.Open(ctx, t, o)
}

// openTasks opens the backend of a command about recorded tasks: the
// Temporal cluster of --temporal, else the store the one store rule finds.
func (a *app) openTasks(ctx context.Context, sf *storeFlags, tf *temporalFlags) (layer.Backend, project.StoreLoc, error) {
	if tf != nil && tf.addr != "" {
		b, err := a.open(ctx, layer.Target{Temporal: tf.target()})
		return b, temporalLoc, err
	}
	loc, err := a.locateTask(ctx, sf)
	if err != nil {
		return nil, project.StoreLoc{}, err
	}
	b, err := a.open(ctx, layer.Target{Store: loc.Dir})
	return b, loc, err
}

func (a *app) resumeCommand() *cobra.Command {
	var sets []string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:     "resume TASK",
		Short:   "Continue a paused or interrupted run from its last checkpoint",
		Long:    help("resume"),
		Example: help("resume.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			answers, err := parseSets(sets)
			if err != nil {
				return err
			}
			if len(sets) == 0 {
				answers = nil
			}
			return a.continueTask(cmd.Context(), &sf, &tf, asJSON, func(ctx context.Context, b layer.Backend) (*run.Result, error) {
				return b.Resume(ctx, args[0], answers)
			})
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringArrayVar(&sets, "set", nil, "answer k=v for the waiting step (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	tf.add(c, true)
	a.addTelemetryFlag(c)
	return c
}

// continueTask opens the backend of a recorded task, does what goes on
// with its run (resume, send, retry) and reports the result.
func (a *app) continueTask(ctx context.Context, sf *storeFlags, tf *temporalFlags, asJSON bool, do func(context.Context, layer.Backend) (*run.Result, error)) error {
	b, loc, err := a.openTasks(ctx, sf, tf)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, stop := layer.Interruptible(ctx, b)
	defer stop()
	res, err := do(ctx, b)
	if err != nil {
		return err
	}
	return a.report(res, asJSON, loc)
}

// notFound makes an unknown task an invalid-input error (exit 2).
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return withInvalid(err)
	}
	return err
}

func (a *app) prepare(ctx context.Context, path string) (*run.Prepared, error) {
	if err := needFile("pipeline", path); err != nil {
		return nil, err
	}
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return run.Prepare(ctx, path, reg, a.logger)
}

// report prints a run result and turns its status into the exit code. A
// waiting run is followed by the command that continues it, with the
// --store a command run from here needs (report.StoreFlag).
func (a *app) report(res *run.Result, asJSON bool, loc project.StoreLoc) error {
	if err := a.emit(asJSON, res, func(w io.Writer) error {
		report.WriteResult(w, res, report.StoreFlag(loc))
		return nil
	}); err != nil {
		return err
	}
	return reportStatus(res)
}

// reportStatus turns a run's status into the exit code (see the README's
// run status table): 1 failed or cancelled, 3 waiting or in an incident.
func reportStatus(res *run.Result) error {
	switch res.Status {
	case store.StatusFailed:
		return withCode(ExitFailed, errors.New("run failed: "+res.Error))
	case store.StatusCancelled:
		return withCode(ExitFailed, errors.New("run "+res.Error))
	case store.StatusWaiting:
		return withCode(ExitWaiting, errSilent)
	case store.StatusIncident:
		return withCode(ExitWaiting, errors.New("incident: "+res.Error))
	}
	return nil
}
