package cli

import (
	"context"
	"errors"
	"fmt"
	layer "github.com/sextant-dev/sextant/host/internal/app"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
)

func (a *app) evolveCommand() *cobra.Command {
	var f replayFlags
	var er evolveRun
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
			if er.ev.At, err = parseAt(at); err != nil {
				return err
			}
			if cmd.Flags().Changed("epochs") && er.ev.Epochs < 1 {
				return usageErr(fmt.Errorf("--epochs: %d: want at least 1", er.ev.Epochs))
			}
			if cmd.Flags().Changed("seed") {
				er.ev.Seed = &f.seed
			}
			return a.evolve(cmd.Context(), args[0], &f, er)
		},
	}
	c.Flags().BoolVar(&er.dryRun, "dry-run", false, "evaluate candidates but promote, queue and archive nothing")
	c.Flags().StringArrayVar(&er.ev.Mutators, "mutator", nil, "mutators to run (default: [evolve] mutators, else all)")
	c.Flags().StringVar(&at, "at", "", "created_at of the candidates (RFC 3339; default now) — for reproducible runs")
	c.Flags().StringVar(&er.ev.Adapter, "adapter", "", "round (one round of the mutators) or offline (ACE epochs); default: [evolve] adapter")
	c.Flags().IntVar(&er.ev.Epochs, "epochs", 0, "offline adapter: passes over the recorded tasks (default: [evolve] epochs)")
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

// evolveRun is what one sextant evolve was asked to do.
type evolveRun struct {
	dryRun bool
	ev     evolve.Evolution
}

// evolve loads the pipeline for the evolution (app.Replayer.Evolve) and
// runs its adapter.
func (a *app) evolve(ctx context.Context, path string, f *replayFlags, er evolveRun) error {
	if f.shard != "" {
		return usageErr(errors.New("--shard: an evolution round judges candidates on every task; it cannot be sharded"))
	}
	e, err := a.replayer().Evolve(ctx, path, f.store.dir, &er.ev, f.overrides())
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	base := e.Prep.Strategy
	for _, v := range e.Promoted {
		fmt.Fprintf(a.stdout, "note: %s was already promoted from %s, which is live (sextant promote %s %s makes it live)\n",
			v, base.Metadata.Version, e.Prep.Pipeline.File, v)
	}
	if er.ev.Adapter == evolve.AdapterOffline {
		return a.evolveOffline(ctx, e, f, er)
	}
	return a.evolveRound(ctx, e, f, er)
}

// evolveRound runs one round of the mutators and settles its candidates.
func (a *app) evolveRound(ctx context.Context, e *layer.Evolving, f *replayFlags, er evolveRun) error {
	p, base := e.Prep.Pipeline, e.Prep.Strategy
	rc, cleanup, err := a.replayer().Source(ctx, e.Setup, f.dataset, f.store.dir)
	if err != nil {
		return err
	}
	defer cleanup()
	round, err := er.ev.Round(ctx, rc, e.Setup.Plugins, e.Prep, e.Taken)
	if errors.Is(err, evolve.ErrUnknownMutator) {
		return usageErr(err)
	}
	if err != nil {
		return err
	}
	if !round.WriteText(a.stdout, a.stderr, base, p.Evolve.Metric) {
		return nil
	}
	if er.dryRun {
		evolve.WriteDryRun(a.stdout, round.Candidates, p.Evolve.Metric, "no candidate passed its gates")
		return verdict(evolve.ExitCode(round.Ruling(p.Evolve.Metric)))
	}
	cleanup() // the source may be the pipeline's own store, opened read-only
	st, loc, err := a.evolveStore(ctx, p, f)
	if err != nil {
		return err
	}
	defer st.Close()
	return a.settle(ctx, st, loc, er, e, round.Candidates, "no candidate passed its gates; all archived")
}

// evolveStore opens the store an evolution settles its candidates in,
// creating it.
func (a *app) evolveStore(ctx context.Context, p *pipeline.Pipeline, f *replayFlags) (*store.Store, storeLoc, error) {
	loc, err := (&storeFlags{dir: f.store.dir}).locate(p)
	if err != nil {
		return nil, loc, err
	}
	st, err := a.openStoreWith(ctx, loc.dir, createStore, p)
	return st, loc, err
}

// settle settles an evolution's candidates in st and says how.
func (a *app) settle(ctx context.Context, st *store.Store, loc storeLoc, er evolveRun, e *layer.Evolving, cands []evolve.Evaluated, none string) error {
	settled, err := evolve.SettleInto(ctx, st, e.Prep.Pipeline, cands, er.ev.At, a.logger)
	if err != nil {
		return err
	}
	settled.WriteText(a.stdout, loc.flag(), none)
	if settled.Winner != nil {
		if err := a.settleLive(ctx, st, e.Configured, settled, e.Prep.Strategy.Metadata.Version, er.ev.At); err != nil {
			return err
		}
	}
	return verdict(evolve.ExitCode(settled.Ruling()))
}
