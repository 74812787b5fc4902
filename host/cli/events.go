package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/report"
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
		Use:     "send [TASK] --message NAME [--key KEY]",
		Short:   "Deliver a message to a waiting task",
		Long:    help("send"),
		Example: help("send.example"),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var task string
			if len(args) == 1 {
				task = args[0]
			}
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			d, err := layer.MessageDelivery(task, message, key, tf.addr != "", vars)
			if err != nil {
				return err
			}
			return a.send(cmd.Context(), &sf, &tf, task, d, asJSON)
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

// send delivers message d and reports the run it continued; a run that
// goes on in the process holding the store is reported as delivered.
func (a *app) send(ctx context.Context, sf *storeFlags, tf *temporalFlags, task string, d run.Delivery, asJSON bool) error {
	b, loc, err := a.openTasks(ctx, sf, tf)
	if err != nil {
		return err
	}
	defer b.Close()
	res, err := b.Send(ctx, task, d)
	if err != nil {
		return err
	}
	if res.Status == store.StatusRunning {
		if asJSON {
			return writeJSON(a.stdout, res)
		}
		report.WriteDelivered(a.stdout, d.Name, res)
		return nil
	}
	return a.report(res, asJSON, loc)
}

func (a *app) signalCommand() *cobra.Command {
	var pipeName string
	var sets []string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:     "signal NAME",
		Short:   "Broadcast a signal to the waiting tasks that wait for it",
		Long:    help("signal"),
		Example: `  sextant signal go --pipeline email-triage --set reason=deploy`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			vars, err := parseSets(sets)
			if err != nil {
				return err
			}
			b, _, err := a.openTasks(ctx, &sf, &tf)
			if err != nil {
				return err
			}
			defer b.Close()
			results, err := b.Signal(ctx, pipeName, run.Delivery{Kind: store.WaitSignal, Name: args[0], Vars: vars})
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

// reportSignal prints who received a signal; a run it continued that
// failed is exit 1.
func (a *app) reportSignal(name string, results []*run.Result, asJSON bool) error {
	sig := report.NewSignalled(name, results)
	if err := a.emit(asJSON, sig, func(w io.Writer) error {
		report.WriteSignal(w, name, sig.Tasks)
		return nil
	}); err != nil {
		return err
	}
	if n := sig.Failed(); n > 0 {
		return withCode(ExitFailed, fmt.Errorf("%d run(s) failed after the signal", n))
	}
	return nil
}

// temporalLoc is where follow-up hints of a run on Temporal point: the
// store is the workers'.
var temporalLoc = project.StoreLoc{From: project.FromEnv}

// target is the Temporal cluster the flags name (none without --temporal).
func (f *temporalFlags) target() layer.TemporalTarget {
	return layer.TemporalTarget{Addr: f.addr, Namespace: f.namespace, Queue: f.queue, LocalSteps: f.localSteps, QueryTimeout: f.queryTimeout}
}
