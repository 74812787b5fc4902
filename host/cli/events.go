package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/store"
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
	var message string
	var sets []string
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "send TASK --message NAME",
		Short: "Deliver a message to a waiting task",
		Long: `send delivers a message to a task waiting for it (a BPMN message catch
event, receive task, message boundary event or event-based gateway), with
the message's variables (--set), and continues the run. The message is
correlated by task id: the task named is the one that receives it.

A message the task does not wait for is refused (exit 2) with what the task
waits for. The delivery is recorded, so a replay of the task receives it too.`,
		Example: `  sextant send 01JD3K… --message approved --set approver=ann`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if message == "" {
				return usageErr(errors.New("--message: name the message to send"))
			}
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			tr, err := a.openTaskRun(ctx, &sf, args[0])
			if err != nil {
				return err
			}
			defer tr.close(ctx)
			res, err := tr.runner.Deliver(ctx, args[0], run.Delivery{Kind: store.WaitMessage, Name: message, Vars: vars})
			if err != nil {
				return notFound(err)
			}
			return a.report(res, asJSON, tr.loc)
		},
	}
	c.Flags().StringVar(&message, "message", "", "message name (or the id of the event that waits for it)")
	c.Flags().StringArrayVar(&sets, "set", nil, "message variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, false)
	return c
}

func (a *app) signalCommand() *cobra.Command {
	var pipeName string
	var sets []string
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:   "signal NAME",
		Short: "Broadcast a signal to the waiting tasks that wait for it",
		Long: `signal delivers a signal to every waiting task (of one pipeline, with
--pipeline) that waits for a signal of that name, with the signal's
variables (--set), and continues each run. It reports how many tasks
received it; none is not an error, as a BPMN signal nobody catches is lost.

Exit status: 0 delivered (to any number of tasks), 1 a run it continued failed.`,
		Example: `  sextant signal go --pipeline email-triage --set reason=deploy`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			clk, err := a.clock()
			if err != nil {
				return err
			}
			loc, err := a.locateTask(ctx, &sf)
			if err != nil {
				return err
			}
			s, err := a.openStore(ctx, loc.dir, updateStore)
			if err != nil {
				return err
			}
			defer s.Close()
			tasks, err := s.Tasks(ctx, store.Query{Pipeline: pipeName, Status: store.StatusWaiting})
			if err != nil {
				return err
			}
			preps := map[string]*run.Prepared{}
			defer func() {
				for _, p := range preps {
					p.Close(context.WithoutCancel(ctx))
				}
			}()
			var results []*run.Result
			failed := 0
			// Oldest first: the order tasks started in.
			for i := len(tasks) - 1; i >= 0; i-- {
				t := tasks[i]
				if !waitsForSignal(t.Waits, args[0]) {
					continue
				}
				pipe, err := run.PipelineOf(ctx, s, t.ID)
				if err != nil {
					return err
				}
				prep := preps[pipe]
				if prep == nil {
					if prep, err = a.prepare(ctx, pipe); err != nil {
						return fmt.Errorf("task %s: %w", t.ID, err)
					}
					preps[pipe] = prep
				}
				res, err := prep.Runner(run.Config{Store: s, Logger: a.logger, Clock: clk.Now}).
					Deliver(ctx, t.ID, run.Delivery{Kind: store.WaitSignal, Name: args[0], Vars: vars})
				if err != nil {
					return fmt.Errorf("task %s: %w", t.ID, err)
				}
				if res.Status == store.StatusFailed {
					failed++
				}
				results = append(results, res)
			}
			if asJSON {
				if results == nil {
					results = []*run.Result{}
				}
				if err := writeJSON(a.stdout, map[string]any{"signal": args[0], "received": len(results), "tasks": results}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "signal %q received by %d task(s)\n", args[0], len(results))
				for _, res := range results {
					fmt.Fprintf(a.stdout, "task %s %s after %d steps\n", res.Task, res.Status, res.Steps)
				}
			}
			if failed > 0 {
				return withCode(ExitFailed, fmt.Errorf("%d run(s) failed after the signal", failed))
			}
			return nil
		},
	}
	c.Flags().StringVar(&pipeName, "pipeline", "", "only tasks of this pipeline (by name)")
	c.Flags().StringArrayVar(&sets, "set", nil, "signal variable k=v (JSON when it parses, else a string; repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, false)
	return c
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
