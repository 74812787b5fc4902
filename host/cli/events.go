package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// clock is the time runs see: the wall clock, or the test-only fake clock
// of SEXTANT_TEST_CLOCK (host/internal/clock).
func (a *app) clock() (clock.Clock, error) {
	c, err := clock.FromEnv()
	if err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

func (a *app) sendCommand() *cobra.Command {
	var message, key string
	var sets []string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:   "send [TASK] --message NAME [--key KEY]",
		Short: "Deliver a message to a waiting task",
		Long: `send delivers a message to a task waiting for it (a BPMN message catch
event, receive task, message boundary event or event-based gateway), with
the message's variables (--set), and continues the run.

The message is correlated as Zeebe does: by its name and correlation key.
A subscription's key is its zeebe:subscription correlationKey, evaluated
when the token starts waiting, or else the task id. With TASK, the task
named receives the message (--key, if given, must match too); without it,
--key names the subscription: the oldest waiting task whose subscription
has that name and key receives it.

A message nothing waits for is refused (exit 2) with what the task waits
for. When a 'sextant run --wait' holds the store, the message is handed to
that process, which delivers it. The delivery is recorded, so a replay of
the task receives it too.`,
		Example: `  sextant send 01JD3K… --message approved --set approver=ann
  sextant send --message payment-received --key order-4711 --set amount=12.5`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if message == "" {
				return usageErr(errors.New("--message: name the message to send"))
			}
			var task string
			if len(args) == 1 {
				task = args[0]
			} else if key == "" {
				return usageErr(errors.New("name the TASK to send to, or its correlation --key"))
			}
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			d := run.Delivery{Kind: store.WaitMessage, Name: message, Vars: vars, Key: key}
			if tf.addr != "" {
				if task == "" {
					return usageErr(errors.New("with --temporal, name the TASK to send to"))
				}
				return a.sendOnTemporal(ctx, tf, task, d, asJSON)
			}
			loc, err := a.locateTask(ctx, &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(ctx, loc.dir, updateStore)
			if errors.Is(err, store.ErrLocked) {
				return a.askHolder(ctx, loc, deliverRequest{Delivery: d, Task: task}, err, asJSON)
			}
			if err != nil {
				return err
			}
			defer s.Close()
			clk, err := a.clock()
			if err != nil {
				return err
			}
			if task == "" {
				if task, err = correlate(ctx, s, d, ""); err != nil {
					return err
				}
			}
			res, err := a.deliverStored(ctx, s, clk, task, d)
			if err != nil {
				return notFound(err)
			}
			return a.report(res, asJSON, loc)
		},
	}
	c.Flags().StringVar(&message, "message", "", "message name (or the id of the event that waits for it)")
	c.Flags().StringVar(&key, "key", "", "correlation key (zeebe:subscription correlationKey; a task id by default)")
	c.Flags().StringArrayVar(&sets, "set", nil, "message variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, false)
	tf.add(c, true)
	a.addTelemetryFlag(c)
	return c
}

// correlate finds the oldest waiting task (other than skip) with a
// message subscription of d's name and key.
func correlate(ctx context.Context, s *store.Store, d run.Delivery, skip string) (string, error) {
	tasks, err := s.Tasks(ctx, store.Query{Status: store.StatusWaiting})
	if err != nil {
		return "", err
	}
	for i := len(tasks) - 1; i >= 0; i-- {
		if tasks[i].ID == skip {
			continue
		}
		for _, w := range tasks[i].Waits {
			if w.Kind == store.WaitMessage && (w.Name == d.Name || w.Event == d.Name) && w.Correlation == d.Key {
				return tasks[i].ID, nil
			}
		}
	}
	return "", withInvalid(fmt.Errorf("no waiting task has a subscription to message %q with correlation key %q", d.Name, d.Key))
}

// deliverStored delivers d to a task of the store s, preparing the
// pipeline the task was run with.
func (a *app) deliverStored(ctx context.Context, s *store.Store, clk clock.Clock, task string, d run.Delivery) (*run.Result, error) {
	pipe, err := run.PipelineOf(ctx, s, task)
	if err != nil {
		return nil, notFound(err)
	}
	prep, err := a.prepare(ctx, pipe)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	defer prep.Close(context.WithoutCancel(ctx))
	return prep.Runner(run.Config{Store: s, Logger: a.logger, Clock: clk.Now}).Deliver(ctx, task, d)
}

func (a *app) signalCommand() *cobra.Command {
	var pipeName string
	var sets []string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:   "signal NAME",
		Short: "Broadcast a signal to the waiting tasks that wait for it",
		Long: `signal delivers a signal to every waiting task (of one pipeline, with
--pipeline) that waits for a signal of that name, with the signal's
variables (--set), and continues each run. It reports how many tasks
received it; none is not an error, as a BPMN signal nobody catches is lost.
When a 'sextant run --wait' holds the store, the signal is handed to that
process, which delivers it to its own run and to the store's other tasks.

Exit status: 0 delivered (to any number of tasks), 1 a run it continued failed.`,
		Example: `  sextant signal go --pipeline email-triage --set reason=deploy`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			if tf.addr != "" {
				return a.signalOnTemporal(ctx, tf, pipeName, run.Delivery{Kind: store.WaitSignal, Name: args[0], Vars: vars}, asJSON)
			}
			clk, err := a.clock()
			if err != nil {
				return err
			}
			loc, err := a.locateTask(ctx, &sf)
			if err != nil {
				return err
			}
			d := run.Delivery{Kind: store.WaitSignal, Name: args[0], Vars: vars}
			s, err := a.openStore(ctx, loc.dir, updateStore)
			if errors.Is(err, store.ErrLocked) {
				return a.askHolder(ctx, loc, deliverRequest{Delivery: d, Pipeline: pipeName}, err, asJSON)
			}
			if err != nil {
				return err
			}
			defer s.Close()
			results, err := a.broadcast(ctx, s, clk, d, pipeName, "")
			if err != nil {
				return err
			}
			return a.reportSignal(args[0], results, asJSON)
		},
	}
	c.Flags().StringVar(&pipeName, "pipeline", "", "only tasks of this pipeline (by name)")
	c.Flags().StringArrayVar(&sets, "set", nil, "signal variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, false)
	tf.add(c, true)
	return c
}

// broadcast delivers signal d to every waiting task of s (of pipeline
// pipeName when set; not skip) that waits for it, oldest first.
func (a *app) broadcast(ctx context.Context, s *store.Store, clk clock.Clock, d run.Delivery, pipeName, skip string) ([]*run.Result, error) {
	tasks, err := s.Tasks(ctx, store.Query{Pipeline: pipeName, Status: store.StatusWaiting})
	if err != nil {
		return nil, err
	}
	preps := map[string]*run.Prepared{}
	defer func() {
		for _, p := range preps {
			p.Close(context.WithoutCancel(ctx))
		}
	}()
	var results []*run.Result
	// Oldest first: the order tasks started in.
	for i := len(tasks) - 1; i >= 0; i-- {
		t := tasks[i]
		if t.ID == skip || !waitsForSignal(t.Waits, d.Name) {
			continue
		}
		pipe, err := run.PipelineOf(ctx, s, t.ID)
		if err != nil {
			return results, err
		}
		prep := preps[pipe]
		if prep == nil {
			if prep, err = a.prepare(ctx, pipe); err != nil {
				return results, fmt.Errorf("task %s: %w", t.ID, err)
			}
			preps[pipe] = prep
		}
		res, err := prep.Runner(run.Config{Store: s, Logger: a.logger, Clock: clk.Now}).Deliver(ctx, t.ID, d)
		if err != nil {
			return results, fmt.Errorf("task %s: %w", t.ID, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// reportSignal prints who received a signal; a run it continued that
// failed is exit 1.
func (a *app) reportSignal(name string, results []*run.Result, asJSON bool) error {
	failed := 0
	for _, res := range results {
		if res.Status == store.StatusFailed {
			failed++
		}
	}
	if asJSON {
		if results == nil {
			results = []*run.Result{}
		}
		if err := writeJSON(a.stdout, map[string]any{"signal": name, "received": len(results), "tasks": results}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "signal %q received by %d task(s)\n", name, len(results))
		for _, res := range results {
			if res.Status == store.StatusRunning {
				fmt.Fprintf(a.stdout, "task %s running (in the process that holds the store)\n", res.Task)
				continue
			}
			fmt.Fprintf(a.stdout, "task %s %s after %d steps\n", res.Task, res.Status, res.Steps)
		}
	}
	if failed > 0 {
		return withCode(ExitFailed, fmt.Errorf("%d run(s) failed after the signal", failed))
	}
	return nil
}

func waitsForSignal(ws []store.Wait, name string) bool {
	for _, w := range ws {
		if w.Kind == store.WaitSignal && w.Name == name {
			return true
		}
	}
	return false
}

// printWaits prints what a waiting run waits for besides people (who are
// printed as questions), and when the next timer is due.
func (a *app) printWaits(ws []store.Wait) {
	var next time.Time
	for _, w := range ws {
		if w.Kind == store.WaitHuman {
			continue
		}
		fmt.Fprintf(a.stdout, "waiting for %s\n", w)
		if !w.Due.IsZero() && w.Error == "" && (next.IsZero() || w.Due.Before(next)) {
			next = w.Due
		}
	}
	if !next.IsZero() {
		fmt.Fprintf(a.stdout, "next timer due %s (sextant resume TASK fires it then)\n", next.UTC().Format(time.RFC3339Nano))
	}
}
