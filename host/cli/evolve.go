package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func (a *app) evolveCommand() *cobra.Command {
	var f replayFlags
	var er layer.EvolveRun
	var at string
	c := &cobra.Command{
		Use:   "evolve PIPELINE",
		Short: "Propose candidate strategies, replay and gate them, promote the best",
		Long:  help("evolve"),
		Example: `  sextant evolve pipelines/email-triage/pipeline.toml --dry-run
  sextant evolve pipelines/email-triage/pipeline.toml --mutator greedy --mutator curate
  sextant evolve pipelines/answer-and-learn/pipeline.toml --adapter offline --epochs 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if er.Evolution.At, err = parseAt(at); err != nil {
				return err
			}
			if cmd.Flags().Changed("epochs") && er.Evolution.Epochs < 1 {
				return usageErr(fmt.Errorf("--epochs: %d: want at least 1", er.Evolution.Epochs))
			}
			if cmd.Flags().Changed("seed") {
				er.Evolution.Seed = &f.seed
			}
			return a.evolve(cmd.Context(), args[0], &f, &er)
		},
	}
	c.Flags().BoolVar(&er.DryRun, "dry-run", false, "evaluate candidates but promote, queue and archive nothing")
	c.Flags().StringArrayVar(&er.Evolution.Mutators, "mutator", nil, "mutators to run (default: [evolve] mutators, else all)")
	c.Flags().StringVar(&at, "at", "", "created_at of the candidates (RFC 3339; default now) — for reproducible runs")
	c.Flags().StringVar(&er.Evolution.Adapter, "adapter", "", "round (one round of the mutators) or offline (ACE epochs); default: [evolve] adapter")
	c.Flags().IntVar(&er.Evolution.Epochs, "epochs", 0, "offline adapter: passes over the recorded tasks (default: [evolve] epochs)")
	f.add(c)
	c.Flags().Lookup("seed").Usage = "seed of the sample, the bootstrap and every seeded mutator (default: [replay] seed for the sample and bootstrap, [evolve] seed for the mutators)"
	a.addTelemetryFlag(c)
	return c
}

// parseAt reads --at (RFC 3339), the candidates' created_at; "" is now.
func parseAt(at string) (time.Time, error) {
	if at == "" {
		return time.Now().UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, usageErr(fmt.Errorf("--at: %q is not an RFC 3339 time", at))
	}
	return t.UTC(), nil
}

// evolve loads the pipeline for the evolution (app.Replayer.Evolve),
// runs its adapter and settles its candidates
// (app.Replayer.RunEvolution).
func (a *app) evolve(ctx context.Context, path string, f *replayFlags, er *layer.EvolveRun) error {
	if f.shard != "" {
		return usageErr(errors.New("--shard: an evolution round judges candidates on every task; it cannot be sharded"))
	}
	e, err := a.replayer().Evolve(ctx, path, f.store.dir, &er.Evolution, f.overrides())
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	er.Dataset, er.Store, er.Stdout, er.Stderr = f.dataset, f.store.dir, a.stdout, a.stderr
	er.SettleStore = func(ctx context.Context, p *pipeline.Pipeline) (*store.Store, string, error) {
		loc, err := (&storeFlags{dir: f.store.dir}).locate(p)
		if err != nil {
			return nil, "", err
		}
		st, err := a.openStoreWith(ctx, loc.Dir, createStore, p)
		return st, report.StoreFlag(loc), err
	}
	code, err := a.replayer().RunEvolution(ctx, e, er)
	if errors.Is(err, evolve.ErrUnknownMutator) {
		return usageErr(err)
	}
	if err != nil {
		return err
	}
	return verdict(code)
}
