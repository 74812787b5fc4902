package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/routine"
	"github.com/sextant-dev/sextant/host/internal/run"
)

func (a *app) routineCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "routine",
		Short:   "Validate and simulate routines (BPMN, DAG, chain)",
		Example: help("routine.example"),
	}
	c.AddCommand(a.routineValidateCommand(), a.routineSimulateCommand())
	return c
}

func (a *app) routineValidateCommand() *cobra.Command {
	var navigator, pipelineFile, inputFile string
	var decisions []string
	var asJSON, strict bool
	c := &cobra.Command{
		Use:     "validate FILE...",
		Short:   "Check routines and print every problem with its position",
		Long:    help("routine-validate"),
		Example: help("routine-validate.example"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := routine.Source{Pipeline: pipelineFile, Files: args, Navigator: navigator, Decisions: decisions}
			return a.validateRoutines(cmd.Context(), src, inputFile, asJSON, strict)
		},
	}
	c.Flags().StringVar(&navigator, "navigator", "", "navigator plugin to load the routine with (default: by file type)")
	c.Flags().StringSliceVar(&decisions, "decisions", nil, "DMN files the routine's business rule tasks call (repeatable, or comma-separated)")
	c.Flags().StringVar(&pipelineFile, "pipeline", "", "check this pipeline's routine, with its navigator, decisions and steps")
	c.Flags().StringVar(&inputFile, "input", "", "a sample start input (a JSON object file, or - for stdin): warn about names nothing writes")
	c.Flags().BoolVar(&strict, "strict", false, "exit 2 when there are warnings")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return c
}

func (a *app) routineSimulateCommand() *cobra.Command {
	var f simFlags
	c := &cobra.Command{
		Use:     "simulate [FILE]",
		Short:   "Walk a routine without running steps, printing enter/exit events",
		Long:    help("routine-simulate"),
		Example: help("routine-simulate.example"),
		Args:    cobra.MaximumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return a.simulate(cmd.Context(), args, &f) },
	}
	f.add(c)
	return c
}

// simFlags are routine simulate's flags.
type simFlags struct {
	navigator, strategyFile, pipelineFile, inputFile string
	sets, chooses, triggers, decisions               []string
	asJSON                                           bool
	maxSteps                                         int
}

func (f *simFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.navigator, "navigator", "", "navigator plugin to load the routine with (default: by file type)")
	c.Flags().StringSliceVar(&f.decisions, "decisions", nil, "DMN files the routine's business rule tasks call (repeatable, or comma-separated)")
	c.Flags().StringVar(&f.strategyFile, "strategy", "", "strategy file whose values conditions see as strategy.*")
	c.Flags().StringVar(&f.pipelineFile, "pipeline", "", "take the routine, navigator and strategy from this pipeline")
	c.Flags().StringVar(&f.inputFile, "input", "", "JSON object conditions see as input.* (a file, or - for stdin)")
	c.Flags().StringArrayVar(&f.sets, "set", nil, "variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().StringArrayVar(&f.chooses, "choose", nil, "GATEWAY=FLOW[,FLOW]: flows a gateway without conditions takes (repeatable)")
	c.Flags().StringArrayVar(&f.triggers, "trigger", nil, "event, receive task or start event to fire, in order (repeatable)")
	c.Flags().IntVar(&f.maxSteps, "max-steps", 0, "bound on navigator calls (default 10000)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "machine-readable trace")
}

// validateRoutines runs routine validate: routine.Validate, then ok
// lines and warnings (or JSON), and exit 2 on a problem or, strict, a
// warning.
func (a *app) validateRoutines(ctx context.Context, src routine.Source, inputFile string, asJSON, strict bool) error {
	if err := src.Usage("validate", "routine FILEs"); err != nil {
		return usageErr(err)
	}
	var input map[string]any
	if inputFile != "" {
		var err error
		if input, err = run.ReadInput(inputFile, a.stdin); err != nil {
			return err
		}
	}
	results, errs := routine.Validate(ctx, src, a.routineFiles(), input)
	if asJSON {
		if err := writeJSON(a.stdout, results); err != nil {
			return err
		}
		if routine.Failed(results, strict) {
			return withCode(ExitInvalid, errSilent)
		}
		return nil
	}
	warned := routine.WriteResults(a.stdout, a.stderr, results)
	if len(errs) > 0 {
		return withInvalid(navigatorUsage(errors.Join(errs...)))
	}
	if strict && warned {
		return withInvalid(errors.New("validate --strict: the routine has warnings"))
	}
	return nil
}

// simulate runs routine simulate: parse, routine.Simulate, print.
func (a *app) simulate(ctx context.Context, args []string, f *simFlags) error {
	src := routine.Source{Pipeline: f.pipelineFile, Files: args, Navigator: f.navigator, Decisions: f.decisions, Strategy: f.strategyFile}
	if err := src.Usage("simulate", "a routine FILE"); err != nil {
		return usageErr(err)
	}
	opts := run.SimOptions{Triggers: f.triggers, MaxSteps: f.maxSteps}
	var err error
	if opts.Vars, err = parseSets(f.sets); err != nil {
		return err
	}
	if opts.Input, err = run.ReadInput(f.inputFile, a.stdin); err != nil {
		return err
	}
	if opts.Choose, err = routine.ParseChoices(f.chooses); err != nil {
		return usageErr(fmt.Errorf("--choose %w", err))
	}
	res, err := routine.Simulate(ctx, src, a.routineFiles(), opts)
	if err != nil {
		return navigatorUsage(err)
	}
	if f.asJSON {
		err = writeJSON(a.stdout, res)
	} else {
		_, err = fmt.Fprint(a.stdout, res.Text())
	}
	if err == nil && res.Status == run.SimError {
		return withCode(ExitFailed, errSilent)
	}
	return err
}

// routineFiles loads routines and pipelines for the routine commands as
// the other commands do: plugins beside the file, then the search path,
// and a missing pipeline named with the nearest file.
func (a *app) routineFiles() routine.Files {
	return routine.Files{Registry: a.registry, Logger: a.logger, Need: needFile}
}

// navigatorUsage makes a navigator the routine commands cannot tell, or
// a --navigator that is no navigator, a usage mistake.
func navigatorUsage(err error) error {
	var ne *routine.NavigatorError
	if errors.As(err, &ne) {
		return usageErr(err)
	}
	return err
}

// parseSets parses NAME=VALUE assignments (--set); a value is JSON when
// it parses, else a string.
func parseSets(sets []string) (map[string]any, error) {
	vars, err := routine.ParseSets(sets, routine.Native)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--set %w", err))
	}
	return vars, nil
}
