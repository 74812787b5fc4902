package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/routine"
	"github.com/sextant-dev/sextant/host/internal/run"
)

func (a *app) routineCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "routine",
		Short: "Validate and simulate routines (BPMN, DAG, chain)",
		Example: `  sextant routine validate pipelines/email-triage/email-triage.bpmn
  sextant routine simulate order.bpmn --set amount=120 --trigger paymentReceived`,
	}
	c.AddCommand(a.routineValidateCommand(), a.routineSimulateCommand())
	return c
}

func (a *app) routineValidateCommand() *cobra.Command {
	var navigator, pipelineFile, inputFile string
	var decisions []string
	var asJSON, strict bool
	c := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check routines and print every problem with its position",
		Long: `validate loads each routine with its navigator (BPMN by extension; DAG or chain
by the tables the TOML declares; --navigator to choose) and prints every
problem as FILE:LINE: ELEMENT: MESSAGE. Exit status 2 when any file has one.
--decisions names the DMN files a BPMN routine's business rule tasks call;
--pipeline checks the pipeline's routine with its navigator and decisions.

It also warns, on stderr as FILE:LINE: ELEMENT: warning: MESSAGE, about a
function an expression calls that does not exist and, given a sample start
input (--input), about a name an expression reads that neither the input nor
a step, script task, business rule task or mapping writes (a misspelt
variable). What steps write comes from --pipeline: an expr step its set keys,
an action step its action, decision, reason and confidence; an llm step with
json output or a human step may write anything, and then names are not
checked. Warnings leave the exit status 0 unless --strict.`,
		Example: `  sextant routine validate order.bpmn
  sextant routine validate --decisions rules.dmn order.bpmn
  sextant routine validate --pipeline pipeline.toml --input inputs/big.json --strict
  sextant routine validate --navigator dag research.toml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			src := routine.Source{Pipeline: pipelineFile, Files: args, Navigator: navigator, Decisions: decisions}
			if err := src.Usage("validate", "routine FILEs"); err != nil {
				return usageErr(err)
			}
			var input map[string]any
			if inputFile != "" {
				var err error
				if input, err = a.readInput(inputFile, nil); err != nil {
					return err
				}
			}
			results, errs := routine.Validate(cmd.Context(), src, routineLoader{a}, input)
			if !asJSON {
				return a.printChecked(results, errs, strict)
			}
			if err := writeJSON(a.stdout, results); err != nil {
				return err
			}
			for _, res := range results {
				if !res.OK || strict && len(res.Warnings) > 0 {
					return withCode(ExitInvalid, errSilent)
				}
			}
			return nil
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
		Use:   "simulate [FILE]",
		Short: "Walk a routine without running steps, printing enter/exit events",
		Long: `simulate walks a routine as the host would, without running steps: tasks
complete at once; receive tasks, catch events, event-based gateways and
boundary events wait until --trigger'ed (in the order given); a --trigger naming
a start event starts an instance there. --choose fixes the flows a gateway
without conditions takes. --set values are JSON when they parse, else strings.

Conditions see vars (--set), input (--input, a JSON object) and strategy
(--strategy, a strategy file: strategy.parameters.NAME). --pipeline takes
the routine, its navigator and the strategy from a pipeline file instead of
FILE; --strategy then replaces the pipeline's strategy. --decisions names
the DMN files a BPMN routine's business rule tasks call (a pipeline's own
[routine] decisions with --pipeline).

It prints enter:<id> each time a token arrives at a node and exit:<id> each
time one leaves it, then completed, waiting:<id>,... or error:<message>.
Exit status: 0 completed or waiting, 1 error, 2 invalid routine, pipeline
or strategy.`,
		Example: `  sextant routine simulate order.bpmn --set amount=120 --set vip=true
  sextant routine simulate order.bpmn --choose gw_check=flow_ok --trigger msg_paid --json
  sextant routine simulate --pipeline pipelines/email-triage/pipeline.toml --set 'classify={"confidence":0.9}'
  sextant routine simulate email-triage.bpmn --strategy strategies/email-handler.toml --input inputs/invoice.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.simulate(cmd.Context(), args, &f) },
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

// simulate runs routine simulate: parse, routine.Simulate, print.
func (a *app) simulate(ctx context.Context, args []string, f *simFlags) error {
	src := routine.Source{Pipeline: f.pipelineFile, Files: args, Navigator: f.navigator, Decisions: f.decisions}
	if err := src.Usage("simulate", "a routine FILE"); err != nil {
		return usageErr(err)
	}
	opts, err := a.simOptions(f.sets, f.chooses, f.inputFile, f.strategyFile)
	if err != nil {
		return err
	}
	opts.Triggers, opts.MaxSteps = f.triggers, f.maxSteps
	res, err := routine.Simulate(ctx, src, routineLoader{a}, opts)
	if err != nil {
		return err
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

// parseSets parses NAME=VALUE assignments (--set); a value is JSON when
// it parses, else a string.
func parseSets(sets []string) (map[string]any, error) {
	vars, err := routine.ParseSets(sets, routine.Native)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--set %w", err))
	}
	return vars, nil
}

func sortStrings(s []string) { sort.Strings(s) }
