package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/telemetry"
	"github.com/sextant-dev/sextant/sdk"
)

func (a *app) runCommand() *cobra.Command {
	var inputFile, truthFile, taskID, message string
	var sets, tags []string
	var asJSON, wait, progress bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:   "run PIPELINE",
		Short: "Run a pipeline on one input and record it",
		Long: `run loads the pipeline (every problem is reported at once and nothing runs
when there is any), creates a task from the input, walks the routine with its
navigator and runs the steps, checkpointing after every step.

With [evolve] online = true (experimental strategies only), the run uses the
newest version the online adapter recorded, and once it completes with a
[score] verdict it learns: the playbook bullets its replies cited are counted
helpful or harmful, its curator's delta ([evolve] delta) is applied, and the
result is recorded as the next strategy version (printed on stderr).

With --wait, the run stays in the foreground until it ends or waits for a
person: it sleeps until its timers and retry delays are due, and takes the
messages and signals that sextant send and sextant signal, run meanwhile,
hand to it (this process holds the store, so it delivers them).

With --message NAME, the run starts at the routine's message start event
for that message, as a published message starts a Zeebe process instance;
the input (--input, --set) is the message's variables.

On a terminal (or with --progress) each step is shown on stderr as it
finishes: node, kind, duration, tokens and its result in one line. The
final output (what [score] reads as output) is printed when the run
completes. --log-level debug traces plugin loading, every step and every
provider call (model, tokens, latency, recording hit).

SIGINT or SIGTERM cancels the run (status cancelled, reason "interrupted by
signal"); a second signal ends the process at once, leaving the run
interrupted for sextant resume.

Exit status: 0 completed, 1 failed or cancelled, 2 invalid pipeline or input,
3 waiting for a person (continue with sextant resume TASK --set answer=…), a
timer or retry (sextant resume TASK once due), a message (sextant send) or a
signal (sextant signal), or stopped in an incident (sextant retry TASK).`,
		Example: `  sextant run pipelines/email-triage/pipeline.toml --input pipelines/email-triage/inputs/invoice.json
  echo '{"subject":"hi"}' | sextant run pipeline.toml --input - --tag smoke --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			input, err := a.readInput(inputFile, sets)
			if err != nil {
				return err
			}
			truth, err := a.readTruth(truthFile)
			if err != nil {
				return err
			}
			prep, err := a.prepare(ctx, args[0])
			if err != nil {
				return err
			}
			defer prep.Close(context.WithoutCancel(ctx))
			start, err := messageStart(prep.Routine, message)
			if err != nil {
				return err
			}
			// Bad input is found before a store is opened or made.
			if err := prep.CheckInput(ctx, run.Input{Input: input, Start: start}); err != nil {
				return err
			}
			if tf.addr != "" {
				return a.runOnTemporal(ctx, tf, prep, run.Input{ID: taskID, Input: input, Truth: truth, Tags: tags, Start: start}, wait, asJSON)
			}
			loc, err := sf.locate(prep.Pipeline)
			if err != nil {
				return err
			}
			s, err := a.openStoreWith(ctx, loc.dir, createStore, prep.Pipeline)
			if err != nil {
				// A server holds the store: it runs the pipeline, if it
				// serves this very file (not an online one, which learns
				// as it runs and needs the store to itself).
				if prep.Pipeline.Evolve.Online {
					return err
				}
				srv, err := serve.ViaServer(loc.dir, err)
				if err != nil {
					return err
				}
				file, err := filepath.Abs(prep.Pipeline.File)
				if err != nil {
					return err
				}
				res, err := srv.Run(ctx, serve.RunRequest{Pipeline: prep.Pipeline.Name, File: file, ID: taskID, Input: input, Truth: truth, Tags: tags})
				if err != nil {
					return apiErr(fmt.Errorf("run through sextant serve at %s: %w", srv.URL(), err))
				}
				return a.report(res, asJSON, loc)
			}
			defer s.Close()
			ctx, stopOperate := a.operated(ctx, s)
			defer stopOperate()
			clk, err := a.clock()
			if err != nil {
				return err
			}
			exp, err := a.telemetry(ctx, s)
			if err != nil {
				return err
			}
			defer a.shutdownTelemetry(ctx, exp)
			cfg := run.Config{Store: s, Logger: a.logger, Clock: clk.Now, OnSpans: exp.Spans}
			if wait {
				// The run waits here for its timers, and for messages and
				// signals that send and signal hand to this process.
				cfg.Sleep = clk.Sleep
				if taskID == "" {
					taskID = s.NewID()
				}
				inbox, ended := make(chan run.Inbound), make(chan struct{})
				cfg.Inbox = inbox
				h := &holder{a: a, s: s, clk: clk, own: taskID, pipeline: prep.Pipeline.Name, inbox: inbox, ended: ended}
				s.Handle(deliverOp, h.serve)
				defer func() { s.Handle(deliverOp, nil) }()
				defer close(ended)
			}
			if err := a.followLive(ctx, s, prep); err != nil {
				return err
			}
			online := prep.Pipeline.Evolve.Online
			base := prep.Strategy
			if online {
				if base, err = a.onlineHead(ctx, s, prep); err != nil {
					return err
				}
			}
			if progress || (!cmd.Flags().Changed("progress") && isTerminal(a.stderr)) {
				cfg.OnStep = a.stepPrinter()
			}
			res, err := prep.Runner(cfg).Start(ctx, run.Input{ID: taskID, Input: input, Truth: truth, Tags: tags, Start: start})
			if err != nil {
				return err
			}
			if online {
				if err := a.learnOnline(ctx, s, prep, base, res, input, truth); err != nil {
					return err
				}
			}
			return a.report(res, asJSON, loc)
		},
	}
	c.Flags().StringVar(&inputFile, "input", "", "JSON input file, or - for stdin")
	c.Flags().StringArrayVar(&sets, "set", nil, "input field k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().StringArrayVar(&tags, "tag", nil, "tag the task (repeatable)")
	c.Flags().StringVar(&truthFile, "truth", "", `ground truth for scoring: inline JSON (starting with {, [ or ") or a JSON file`)
	c.Flags().StringVar(&taskID, "id", "", "task id (default: generated)")
	c.Flags().StringVar(&message, "message", "", "start at the message start event of this message (BPMN); the input is the message's variables")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	c.Flags().BoolVar(&progress, "progress", false, "show each step on stderr as it finishes (default: when stderr is a terminal; --progress=false turns it off)")
	c.Flags().BoolVar(&wait, "wait", false, "stay in the foreground through timers, retry delays, messages and signals until the run ends or waits for a person")
	sf.add(c, false)
	tf.add(c, true)
	a.addTelemetryFlag(c)
	return c
}

func (a *app) resumeCommand() *cobra.Command {
	var sets []string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:   "resume TASK",
		Short: "Continue a paused or interrupted run from its last checkpoint",
		Long: `resume continues a task: a run paused at a human step (give the answer with
--set), one waiting for timers or retry delays (those due fire; otherwise it
says when the next is due), or one that was killed. Steps completed before the interruption are not
run again, and provider calls answered before it are served from their recordings.`,
		Example: `  sextant resume 01JD3K… --set answer=yes
  sextant resume 01JD3K… --store pipelines/email-triage/.sextant`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			answers, err := parseSets(sets)
			if err != nil {
				return err
			}
			if len(sets) == 0 {
				answers = nil
			}
			if tf.addr != "" {
				return a.resumeOnTemporal(ctx, tf, args[0], answers, asJSON)
			}
			tr, err := a.openTaskRun(ctx, &sf, args[0])
			if err != nil {
				return err
			}
			defer tr.close(ctx)
			if tr.via != nil {
				res, err := tr.via.Resume(ctx, args[0], answers)
				if err != nil {
					return apiErr(err)
				}
				return a.report(res, asJSON, tr.loc)
			}
			ctx, stopOperate := a.operated(ctx, tr.s)
			defer stopOperate()
			res, err := tr.runner.Resume(ctx, args[0], answers)
			if err != nil {
				return notFound(err)
			}
			if err := a.learnResumed(ctx, tr, res); err != nil {
				return err
			}
			return a.report(res, asJSON, tr.loc)
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

// taskRun is what resume and send need to continue one recorded task: its
// store, opened for update, and a runner over the task's own pipeline.
type taskRun struct {
	loc storeLoc
	// via is the server that holds the store, when one does: the command
	// goes through its API and the other fields are nil.
	via    *serve.Client
	s      *store.Store
	prep   *run.Prepared
	runner *run.Runner
	exp    *telemetry.Exporter
	a      *app
}

// openTaskRun locates the store that holds task (the one store rule),
// opens it for update and prepares the pipeline the task was run with.
func (a *app) openTaskRun(ctx context.Context, sf *storeFlags, task string) (*taskRun, error) {
	clk, err := a.clock()
	if err != nil {
		return nil, err
	}
	loc, err := a.locateTask(ctx, sf)
	if err != nil {
		return nil, err
	}
	s, err := a.openStore(ctx, loc.dir, updateStore)
	if err != nil {
		srv, err := serve.ViaServer(loc.dir, err)
		if err != nil {
			return nil, err
		}
		return &taskRun{loc: loc, via: srv}, nil
	}
	pipe, err := run.PipelineOf(ctx, s, task)
	if err != nil {
		s.Close()
		return nil, notFound(err)
	}
	prep, err := a.prepare(ctx, pipe)
	if err != nil {
		s.Close()
		return nil, err
	}
	a.onlineTaskStrategy(ctx, s, prep, task)
	a.taskStrategy(ctx, s, prep, task)
	exp, err := a.telemetry(ctx, s)
	if err != nil {
		prep.Close(context.WithoutCancel(ctx))
		s.Close()
		return nil, err
	}
	return &taskRun{loc: loc, s: s, prep: prep, exp: exp, a: a,
		runner: prep.Runner(run.Config{Store: s, Logger: a.logger, Clock: clk.Now, OnSpans: exp.Spans})}, nil
}

// close flushes live telemetry, releases the pipeline's plugins, then the
// store.
func (t *taskRun) close(ctx context.Context) {
	if t.via != nil {
		return
	}
	t.a.shutdownTelemetry(ctx, t.exp)
	t.prep.Close(context.WithoutCancel(ctx))
	t.s.Close()
}

// apiErr is an error answer of a server the command went through: bad
// input and unknown ids exit 2, as they do without a server.
func apiErr(err error) error {
	var ae *serve.APIError
	if errors.As(err, &ae) && (ae.Status == 400 || ae.Status == 404) {
		return withInvalid(err)
	}
	return err
}

// resumeSet is the --set a waiting step asks for: first is the first
// choice ("confirm=yes"), rest the others as a note ("  (or confirm=no)").
type resumeSet struct{ first, rest string }

// resumeHint is how the run engine ends a question with the answer it
// wants ("… — resume with --set answer=…", "--set confirm=yes|no").
const resumeHint = " — resume with --set "

// splitHint separates a waiting question from the answer it asks for.
func splitHint(q string) (string, resumeSet) {
	set := "answer=…"
	if i := strings.LastIndex(q, resumeHint); i >= 0 {
		q, set = q[:i], q[i+len(resumeHint):]
	}
	k, v, _ := strings.Cut(set, "=")
	opts := strings.Split(v, "|")
	rs := resumeSet{first: shellQuote(k + "=" + opts[0])}
	if len(opts) > 1 {
		var alt []string
		for _, o := range opts[1:] {
			alt = append(alt, k+"="+o)
		}
		rs.rest = "   (or " + strings.Join(alt, ", ") + ")"
	}
	return q, rs
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

// readTruth reads --truth: inline JSON when it starts like a JSON object,
// array or string, else the JSON file it names.
func (a *app) readTruth(arg string) (json.RawMessage, error) {
	if arg == "" {
		return nil, nil
	}
	b := []byte(arg)
	if t := strings.TrimSpace(arg); t == "" || !strings.ContainsAny(t[:1], `{["`) {
		var err error
		if b, err = a.readNamed("--truth", arg, readfile.MaxInput); err != nil {
			return nil, err
		}
		var v any
		if err := decodeJSON("--truth", arg, b, &v, "JSON"); err != nil {
			return nil, err
		}
	} else if !json.Valid(b) {
		return nil, withInvalid(errors.New("--truth: not valid JSON"))
	}
	return json.RawMessage(strings.TrimSpace(string(b))), nil
}

// readInput reads --input (a file or - for stdin) and applies --set fields.
func (a *app) readInput(file string, sets []string) (map[string]any, error) {
	input := map[string]any{}
	if file != "" {
		data, err := a.readNamed("--input", file, readfile.MaxInput)
		if err != nil {
			return nil, err
		}
		name := file
		if file == "-" {
			name = "stdin"
		}
		if err := decodeJSON("--input", name, data, &input, "a JSON object"); err != nil {
			return nil, err
		}
		if input == nil { // null
			return nil, withInvalid(fmt.Errorf("%s: --input: want a JSON object, got null", name))
		}
	}
	extra, err := parseSets(sets)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		input[k] = v
	}
	return input, nil
}

// report prints a run result and turns its status into the exit code. A
// waiting run is followed by the command that continues it, with the
// --store a command run from here needs (loc.flag).
func (a *app) report(res *run.Result, asJSON bool, loc storeLoc) error {
	if asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "task %s %s after %d steps (%d tokens, $%.4f)\n", res.Task, res.Status, res.Steps, res.Tokens, res.CostUSD)
		for _, act := range res.Actions {
			fmt.Fprintf(a.stdout, "action %s: %s (%s)\n", act.Action, act.Decision, act.Reason)
		}
		if res.Status == store.StatusCompleted && len(res.Output) > 0 {
			if b, err := json.Marshal(res.Output); err == nil {
				fmt.Fprintf(a.stdout, "output: %s\n", b)
			}
		}
		for _, q := range res.Waiting {
			question, set := splitHint(q.Question)
			fmt.Fprintf(a.stdout, "waiting at %s: %s\n", q.Node, question)
			fmt.Fprintf(a.stdout, "  continue: sextant resume %s --set %s%s%s\n", shellQuote(res.Task), set.first, loc.flag(), set.rest)
		}
		a.printWaits(res.Waits)
	}
	return a.reportStatus(res, loc)
}

// messageStart finds the start event of routine r that message starts
// (its message name, or its id); "" for no message.
func messageStart(r *sdk.Routine, message string) (string, error) {
	if message == "" {
		return "", nil
	}
	var names []string
	for _, id := range r.Starts {
		for _, n := range r.Nodes {
			if n.ID != id || n.Event == nil || n.Event.Type != sdk.EventMessage {
				continue
			}
			if n.Event.Name == message || n.ID == message {
				return n.ID, nil
			}
			names = append(names, fmt.Sprintf("%q", n.Event.Name))
		}
	}
	if len(names) == 0 {
		return "", withInvalid(fmt.Errorf("--message %q: the routine has no message start event", message))
	}
	return "", withInvalid(fmt.Errorf("--message %q: no message start event for it (the routine starts on %s)", message, strings.Join(names, ", ")))
}

// stepPrinter returns a run.Config.OnStep that prints one line per step on
// stderr: node, kind, duration, tokens, status and the result in one line.
func (a *app) stepPrinter() func(run.StepEvent) {
	var mu sync.Mutex // steps of one batch finish on their own goroutines
	return func(ev run.StepEvent) {
		mu.Lock()
		defer mu.Unlock()
		status := ""
		if ev.Status != run.StepOK {
			status = ev.Status + ": "
		}
		fmt.Fprintf(a.stderr, "  %-16s %-6s %8s %6d tok  %s%s\n", ev.Node, ev.Kind, ev.Duration.Round(time.Millisecond), ev.Tokens, status, clip(ev.Result, 100))
	}
}
