package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
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

// guessNavigator picks the navigator for a routine file: BPMN by extension,
// DAG or chain by the tables a TOML file declares.
func guessNavigator(path string, data []byte) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bpmn", ".xml":
		return "bpmn", nil
	case ".toml":
		for _, line := range strings.Split(string(data), "\n") {
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(t, "[tasks"):
				return "dag", nil
			case strings.HasPrefix(t, "[[steps"):
				return "chain", nil
			}
		}
	}
	return "", usageErr(fmt.Errorf("%s: cannot tell which navigator reads this file; pass --navigator", path))
}

// loadRoutine opens the navigator and loads the routine at path, with the
// decision files its business rule tasks call.
func (a *app) loadRoutine(ctx context.Context, path, navigator string, decisions []string) (sdk.Navigator, *sdk.Routine, func(), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, withInvalid(fmt.Errorf("%s: %w", path, errors.Unwrap(err)))
	}
	var files []sdk.File
	for _, d := range decisions {
		b, err := readfile.Read(d, readfile.MaxRoutine)
		if err != nil {
			return nil, nil, nil, withInvalid(fmt.Errorf("--decisions: %s: %w", d, errors.Unwrap(err)))
		}
		files = append(files, sdk.File{Name: d, Data: b})
	}
	if navigator == "" {
		if navigator, err = guessNavigator(path, data); err != nil {
			return nil, nil, nil, err
		}
	}
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := reg.Open(ctx, navigator, plugin.Grant{})
	if err != nil {
		return nil, nil, nil, err
	}
	closer := func() { h.Close(context.WithoutCancel(ctx)) }
	nav, ok := h.Plugin.(sdk.Navigator)
	if !ok {
		closer()
		return nil, nil, nil, usageErr(fmt.Errorf("--navigator: plugin %q is a %s, not a navigator", navigator, h.Entry.Kind))
	}
	r, err := nav.Load(ctx, &sdk.LoadRequest{Name: path, Routine: data, Decisions: files})
	if err != nil {
		closer()
		return nil, nil, nil, err
	}
	return nav, r, closer, nil
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
			switch {
			case pipelineFile == "" && len(args) == 0:
				return usageErr(fmt.Errorf("validate: name routine FILEs or --pipeline FILE"))
			case pipelineFile != "" && len(args) > 0:
				return usageErr(fmt.Errorf("validate: give routine FILEs or --pipeline, not both"))
			case pipelineFile != "" && (navigator != "" || len(decisions) > 0):
				return usageErr(fmt.Errorf("validate: --navigator and --decisions come from the pipeline with --pipeline"))
			}
			var input map[string]any
			if inputFile != "" {
				var err error
				if input, err = a.readInput(inputFile, nil); err != nil {
					return err
				}
			}
			type result struct {
				File  string `json:"file"`
				OK    bool   `json:"ok"`
				Nodes int    `json:"nodes,omitempty"`
				// Reads is what the navigator says the routine reads of a
				// run's variables (absent: any of them).
				Reads    *sdk.Reads    `json:"reads,omitempty"`
				Problems []sdk.Problem `json:"problems,omitempty"`
				Warnings []sdk.Problem `json:"warnings,omitempty"`
				// Unchecked says why names were not checked against --input.
				Unchecked string `json:"unchecked,omitempty"`
			}
			var results []result
			var errs []error
			warned := false
			check := func(path string, r *sdk.Routine, p *pipeline.Pipeline, err error) {
				if err != nil {
					errs = append(errs, err)
					res := result{File: path}
					var e *sdk.Error
					if errors.As(err, &e) {
						res.Problems = e.Problems
					}
					if len(res.Problems) == 0 {
						res.Problems = []sdk.Problem{{File: path, Message: err.Error()}}
					}
					results = append(results, res)
					return
				}
				warns, unchecked := routineWarnings(r, path, p, input)
				warned = warned || len(warns) > 0
				results = append(results, result{File: path, OK: true, Nodes: len(r.Nodes), Reads: r.Reads, Warnings: warns, Unchecked: unchecked})
				if !asJSON {
					fmt.Fprintf(a.stdout, "%s: ok (%d nodes)\n", path, len(r.Nodes))
					printWarnings(a.stderr, warns)
					if unchecked != "" {
						fmt.Fprintf(a.stderr, "%s: names not checked against --input: %s\n", path, unchecked)
					}
				}
			}
			if pipelineFile != "" {
				l, err := a.loadPipeline(cmd.Context(), pipelineFile)
				if err != nil {
					check(pipelineFile, nil, nil, err)
				} else {
					l.Close(context.WithoutCancel(cmd.Context()))
					check(l.Pipeline.Path(l.Pipeline.Routine.File), l.Routine, l.Pipeline, nil)
				}
			}
			for _, path := range args {
				_, r, closer, err := a.loadRoutine(cmd.Context(), path, navigator, decisions)
				if err == nil {
					closer()
				}
				check(path, r, nil, err)
			}
			if asJSON {
				if err := writeJSON(a.stdout, results); err != nil {
					return err
				}
				if len(errs) > 0 || strict && warned {
					return withCode(ExitInvalid, errSilent)
				}
				return nil
			}
			if len(errs) > 0 {
				return withInvalid(errors.Join(errs...))
			}
			if strict && warned {
				return withInvalid(errors.New("validate --strict: the routine has warnings"))
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

// loadPipeline loads and validates the pipeline at path and its routine,
// opening no provider.
func (a *app) loadPipeline(ctx context.Context, path string) (*run.Loaded, error) {
	if err := needFile("pipeline", path); err != nil {
		return nil, err
	}
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return run.Load(ctx, path, reg, a.logger)
}

func (a *app) routineSimulateCommand() *cobra.Command {
	var navigator, strategyFile, pipelineFile, inputFile string
	var sets, chooses, triggers, decisions []string
	var asJSON bool
	var maxSteps int
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
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case pipelineFile == "" && len(args) == 0:
				return usageErr(fmt.Errorf("simulate: name a routine FILE or --pipeline FILE"))
			case pipelineFile != "" && len(args) > 0:
				return usageErr(fmt.Errorf("simulate: give a routine FILE or --pipeline, not both"))
			case pipelineFile != "" && (navigator != "" || len(decisions) > 0):
				return usageErr(fmt.Errorf("simulate: --navigator and --decisions come from the pipeline with --pipeline"))
			}
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			input, err := a.readInput(inputFile, nil)
			if err != nil {
				return err
			}
			choose := map[string][]string{}
			for _, c := range chooses {
				gw, flows, ok := strings.Cut(c, "=")
				if !ok || gw == "" || flows == "" {
					return usageErr(fmt.Errorf("--choose %q: want GATEWAY=FLOW[,FLOW]", c))
				}
				choose[gw] = append(choose[gw], strings.Split(flows, ",")...)
			}
			var strat map[string]any
			if strategyFile != "" {
				st, err := strategy.Load(strategyFile)
				if err != nil {
					return withInvalid(err)
				}
				strat = st.Env()
			}
			var nav sdk.Navigator
			var r *sdk.Routine
			if pipelineFile != "" {
				prep, err := a.prepare(cmd.Context(), pipelineFile)
				if err != nil {
					return err
				}
				defer prep.Close(context.WithoutCancel(cmd.Context()))
				nav, r = prep.Navigator, prep.Routine
				if strat == nil {
					strat = prep.Strategy.Env()
				}
			} else {
				var closer func()
				if nav, r, closer, err = a.loadRoutine(cmd.Context(), args[0], navigator, decisions); err != nil {
					return err
				}
				defer closer()
			}
			res, err := run.Simulate(cmd.Context(), nav, r.Hash, run.SimOptions{Vars: vars, Input: input, Strategy: strat,
				Choose: choose, Triggers: triggers, MaxSteps: maxSteps, Routine: r})
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(a.stdout, res); err != nil {
					return err
				}
			} else {
				fmt.Fprint(a.stdout, res.Text())
			}
			if res.Status == run.SimError {
				return withCode(ExitFailed, errSilent)
			}
			return nil
		},
	}
	c.Flags().StringVar(&navigator, "navigator", "", "navigator plugin to load the routine with (default: by file type)")
	c.Flags().StringSliceVar(&decisions, "decisions", nil, "DMN files the routine's business rule tasks call (repeatable, or comma-separated)")
	c.Flags().StringVar(&strategyFile, "strategy", "", "strategy file whose values conditions see as strategy.*")
	c.Flags().StringVar(&pipelineFile, "pipeline", "", "take the routine, navigator and strategy from this pipeline")
	c.Flags().StringVar(&inputFile, "input", "", "JSON object conditions see as input.* (a file, or - for stdin)")
	c.Flags().StringArrayVar(&sets, "set", nil, "variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().StringArrayVar(&chooses, "choose", nil, "GATEWAY=FLOW[,FLOW]: flows a gateway without conditions takes (repeatable)")
	c.Flags().StringArrayVar(&triggers, "trigger", nil, "event, receive task or start event to fire, in order (repeatable)")
	c.Flags().IntVar(&maxSteps, "max-steps", 0, "bound on navigator calls (default 10000)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable trace")
	return c
}

// parseSets parses k=v pairs; v is JSON when it parses, else a string.
func parseSets(sets []string) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("--set %q: want NAME=VALUE", s))
		}
		var val any
		dec := json.NewDecoder(bytes.NewReader([]byte(v)))
		dec.UseNumber()
		if err := dec.Decode(&val); err == nil && !dec.More() {
			out[k] = normalizeNumbers(val)
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// normalizeNumbers turns json.Number into int64 or float64.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

func sortStrings(s []string) { sort.Strings(s) }
