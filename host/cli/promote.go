package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// The live strategy version of a pipeline (evolve.GetLive): what its runs
// use. sextant strategy live shows it, promote and rollback move it, and
// run, replay, gate, evolve and serve's runs follow it.

func (a *app) strategyLiveCommand() *cobra.Command {
	var asJSON bool
	var sf storeFlags
	c := &cobra.Command{
		Use:     "live PIPELINE",
		Short:   "Show the pipeline's live strategy version (what its runs use) and every move",
		Long:    help("strategy-live"),
		Example: help("strategy-live.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, loc, err := a.livePipeline(ctx, args[0], &sf)
			if err != nil {
				return err
			}
			l, err := layer.ShowLive(ctx, loc.Dir, p, layer.Options{Logger: a.logger, Command: a.command})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, l)
			}
			return l.WriteText(a.stdout, p)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	c.Flags().StringVar(&sf.dir, "store", "", storeHelp)
	return c
}

func (a *app) promoteCommand() *cobra.Command {
	return a.moveCommand(evolve.MovePromote, &cobra.Command{
		Use:     "promote PIPELINE VERSION",
		Short:   "Make a promoted strategy version the pipeline's live one",
		Long:    help("promote"),
		Example: `  sextant promote pipelines/email-triage/pipeline.toml 2.2.0 --reason "canary at 100% for a week"`,
		Args:    cobra.ExactArgs(2),
	})
}

func (a *app) rollbackCommand() *cobra.Command {
	return a.moveCommand(evolve.MoveRollback, &cobra.Command{
		Use:     "rollback PIPELINE [VERSION]",
		Short:   "Make an earlier strategy version the pipeline's live one",
		Long:    help("rollback"),
		Example: help("rollback.example"),
		Args:    cobra.RangeArgs(1, 2),
	})
}

// moveCommand completes promote or rollback.
func (a *app) moveCommand(action string, c *cobra.Command) *cobra.Command {
	var reason string
	var sf storeFlags
	c.RunE = func(cmd *cobra.Command, args []string) error {
		m := evolve.Move{Action: action, By: store.Operator(), Reason: reason, At: time.Now().UTC().Truncate(time.Second)}
		if len(args) > 1 {
			m.Version = args[1]
		}
		return a.move(cmd.Context(), args[0], &sf, m)
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded with the move)")
	c.Flags().StringVar(&sf.dir, "store", "", storeHelp)
	return c
}

// move moves the live version of the pipeline at path.
func (a *app) move(ctx context.Context, path string, sf *storeFlags, m evolve.Move) error {
	p, loc, err := a.livePipeline(ctx, path, sf)
	if err != nil {
		return err
	}
	o, err := a.appOptions()
	if err != nil {
		return err
	}
	return layer.MoveLive(ctx, a.stdout, loc.Dir, p, m, o)
}

// livePipeline loads the pipeline file (without plugins: no run) and
// finds its store.
func (a *app) livePipeline(ctx context.Context, path string, sf *storeFlags) (*pipeline.Pipeline, project.StoreLoc, error) {
	if err := needFile("pipeline", path); err != nil {
		return nil, project.StoreLoc{}, err
	}
	p, err := pipeline.Load(ctx, path, nil, pipeline.Options{})
	if err != nil {
		return nil, project.StoreLoc{}, err
	}
	loc, err := sf.locate(p)
	if err != nil {
		return nil, project.StoreLoc{}, err
	}
	return p, loc, nil
}

// followLiveLoaded switches loaded to the pipeline's live version
// (layer.FollowLiveLoaded) and returns the pipeline as configured.
func (a *app) followLiveLoaded(ctx context.Context, loaded *run.Loaded, dir string) (*pipeline.Pipeline, error) {
	return layer.FollowLiveLoaded(ctx, loaded, dir, a.logger, a.command)
}

// servePrepare is sextant serve's Options.Prepare: its runs follow each
// pipeline's live version in the store s it holds.
func (a *app) servePrepare(s *store.Store) func(ctx context.Context, path string) (*run.Prepared, error) {
	return layer.ServePrepare(s, a.prepare, layer.Options{Logger: a.logger})
}
