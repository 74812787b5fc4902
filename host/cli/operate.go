package cli

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/routine"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// What an operator does to runs, as Temporal's and Camunda's users do:
// cancel one, retry one stopped in an incident, change its variables. The
// backend that holds the task does it (layer.Open).

func (a *app) cancelCommand() *cobra.Command {
	var reason string
	var asJSON bool
	var sf storeFlags
	var tf temporalFlags
	c := &cobra.Command{
		Use:     "cancel TASK",
		Short:   "Cancel a run: a running one stops, a waiting one ends",
		Long:    help("cancel"),
		Example: help("cancel.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, _, err := a.openTasks(cmd.Context(), &sf, &tf)
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := b.Cancel(cmd.Context(), args[0], run.Cancelled{By: store.Operator(), Reason: reason})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			report.WriteCancelled(a.stdout, res)
			return nil
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringVar(&reason, "reason", "", "why the task is cancelled (recorded with it)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	tf.add(c, false)
	return c
}

// operateCommands are the operator's commands.
func (a *app) operateCommands() []*cobra.Command {
	return []*cobra.Command{a.cancelCommand(), a.incidentsCommand(), a.retryCommand(), a.setCommand()}
}

func (a *app) incidentsCommand() *cobra.Command {
	var pipe string
	var limit int
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "incidents",
		Short:   "List the runs stopped in an incident, waiting for a person",
		Long:    help("incidents"),
		Example: help("incidents.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := query(pipe, string(store.StatusIncident), "", limit)
			if err != nil {
				return err
			}
			return a.incidents(cmd.Context(), &sf, q, asJSON)
		},
	}
	c.Flags().StringVar(&pipe, "pipeline", "", "only tasks of this pipeline (by name)")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many tasks")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	sf.add(c, false)
	return c
}

// incidents lists the tasks of q, in an incident, with where each stopped.
func (a *app) incidents(ctx context.Context, sf *storeFlags, q store.Query, asJSON bool) error {
	s, loc, err := a.readTaskStore(ctx, sf)
	if err != nil {
		return err
	}
	defer s.Close()
	tasks, err := s.Tasks(ctx, q)
	damaged := err
	if err != nil && !errors.Is(err, store.ErrDamaged) {
		return err
	}
	if tasks == nil {
		tasks = []store.Task{} // [] in JSON
	}
	if err := a.emit(asJSON, tasks, func(w io.Writer) error { return report.WriteIncidentList(w, tasks, report.StoreFlag(loc)) }); err != nil {
		return err
	}
	return damaged
}

func (a *app) retryCommand() *cobra.Command {
	var sets []string
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "retry TASK",
		Short:   "Continue a run stopped in an incident, from the element that stopped it",
		Long:    help("retry"),
		Example: help("retry.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseOperatorSets(sets)
			if err != nil {
				return err
			}
			return a.continueTask(cmd.Context(), &sf, nil, asJSON, func(ctx context.Context, b layer.Backend) (*run.Result, error) {
				return b.Retry(ctx, args[0], vars)
			})
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().StringArrayVar(&sets, "set", nil, "assign variable NAME=VALUE before going on (repeatable)")
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	return c
}

func (a *app) setCommand() *cobra.Command {
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "set TASK NAME=VALUE...",
		Short:   "Change the variables of a waiting run, or of one stopped in an incident",
		Long:    help("set"),
		Example: `  sextant set 01JD3K… priority=2 'customer={"tier":"gold"}'`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			vars, err := parseOperatorSets(args[1:])
			if err != nil {
				return err
			}
			b, _, err := a.openTasks(cmd.Context(), &sf, nil)
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := b.Set(cmd.Context(), args[0], vars)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			report.WriteSet(a.stdout, res, slices.Sorted(maps.Keys(vars)))
			return nil
		},
	}
	c.ValidArgsFunction = a.completeTasks(&sf)
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable result")
	sf.add(c, true)
	return c
}

// parseOperatorSets parses an operator's NAME=VALUE assignments
// (routine.ParseStrictSets): a value that starts like JSON but is not is
// invalid input (exit 2), a missing NAME= a usage mistake.
func parseOperatorSets(sets []string) (map[string]any, error) {
	vars, err := routine.ParseStrictSets(sets)
	var bad *routine.BadJSONError
	if errors.As(err, &bad) {
		return nil, withInvalid(err)
	}
	if err != nil {
		return nil, usageErr(err)
	}
	return vars, nil
}
