package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
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
	// configured is the pipeline as configured (evolve runs a copy that
	// follows its live version).
	configured *pipeline.Pipeline
}

func (a *app) evolve(ctx context.Context, path string, f *replayFlags, er evolveRun) error {
	if f.shard != "" {
		return usageErr(errors.New("--shard: an evolution round judges candidates on every task; it cannot be sharded"))
	}
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return err
	}
	loaded, err := run.Load(ctx, path, reg, a.logger)
	if err != nil {
		return err
	}
	defer loaded.Close(context.WithoutCancel(ctx))
	// Candidates derive from the live version, which the winner replaces.
	if er.configured, err = a.followLiveLoaded(ctx, loaded, f.store.dir); err != nil {
		return err
	}
	prep, err := loaded.Open(ctx, run.WithoutCredentials())
	if err != nil {
		return err
	}
	defer prep.Close(context.WithoutCancel(ctx))
	p := prep.Pipeline
	if p.Strategy.File == "" {
		return needStrategy(p, "evolve derives candidates from the pipeline's strategy")
	}
	setup, err := a.evolveSetup(loaded, reg, f, &er)
	if err != nil {
		return err
	}
	taken, err := a.takenVersions(ctx, p, f, prep.Strategy)
	if err != nil {
		return err
	}
	if er.ev.Adapter == evolve.AdapterOffline {
		return a.evolveOffline(ctx, setup, prep, f, er)
	}
	return a.evolveRound(ctx, setup, prep, f, er, taken)
}

// evolveSetup resolves the evolution and its replays' settings: [replay]
// with the flags, on-miss from [evolve] on_miss unless --on-miss says.
func (a *app) evolveSetup(loaded *run.Loaded, reg *plugin.Registry, f *replayFlags, er *evolveRun) (replay.Setup, error) {
	p := loaded.Pipeline
	settings, err := replay.NewSettings(p, f.overrides())
	if err != nil {
		return replay.Setup{}, usageErr(err)
	}
	if f.onMiss == "" && p.Evolve.OnMiss != "" {
		settings.OnMiss = p.Evolve.OnMiss
	}
	if err := er.ev.Resolve(p); err != nil {
		return replay.Setup{}, usageErr(err)
	}
	return a.replaySettings(loaded, reg, settings)
}

// evolveRound runs one round of the mutators and settles its candidates.
func (a *app) evolveRound(ctx context.Context, setup replay.Setup, prep *run.Prepared, f *replayFlags, er evolveRun, taken map[string]bool) error {
	p, base := prep.Pipeline, prep.Strategy
	rc, cleanup, err := a.replaySetup(ctx, setup, f)
	if err != nil {
		return err
	}
	defer cleanup()
	round, err := er.ev.Round(ctx, rc, setup.Plugins, prep, taken)
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
	loc, err := (&storeFlags{dir: f.store.dir}).locate(p)
	if err != nil {
		return err
	}
	st, err := a.openStoreWith(ctx, loc.dir, createStore, p)
	if err != nil {
		return err
	}
	defer st.Close()
	return a.settle(ctx, st, loc, er, prep, round.Candidates, "no candidate passed its gates; all archived")
}

// settle settles an evolution's candidates in st and says how.
func (a *app) settle(ctx context.Context, st *store.Store, loc storeLoc, er evolveRun, prep *run.Prepared, cands []evolve.Evaluated, none string) error {
	base := prep.Strategy
	settled, err := evolve.SettleInto(ctx, st, prep.Pipeline, cands, er.ev.At, a.logger)
	if err != nil {
		return err
	}
	settled.WriteText(a.stdout, loc.flag(), none)
	if settled.Winner != nil {
		if err := a.settleLive(ctx, st, er.configured, settled, base.Metadata.Version, er.ev.At); err != nil {
			return err
		}
	}
	return verdict(evolve.ExitCode(settled.Ruling()))
}

// takenVersions are the versions a candidate of base may not take
// (evolve.Taken), read from the store evolve promotes into (read only,
// when it exists); it says which were already promoted from base.
func (a *app) takenVersions(ctx context.Context, p *pipeline.Pipeline, f *replayFlags, base *strategy.Strategy) (map[string]bool, error) {
	loc, err := (&storeFlags{dir: f.store.dir}).locate(p)
	if err != nil {
		return nil, err
	}
	var st *store.Store
	if _, err := os.Stat(loc.dir); err == nil {
		if st, err = a.openStoreWith(ctx, loc.dir, readStore, p); err != nil {
			return nil, err
		}
		defer st.Close()
	}
	taken, promoted, err := evolve.Taken(ctx, st, p, base)
	for _, v := range promoted {
		fmt.Fprintf(a.stdout, "note: %s was already promoted from %s, which is live (sextant promote %s %s makes it live)\n",
			v, base.Metadata.Version, p.File, v)
	}
	return taken, err
}

// needStrategy is the error of a command that cannot work on a pipeline
// without a [strategy] block: exit 2, at the pipeline file.
func needStrategy(p *pipeline.Pipeline, why string) error {
	return sdk.Invalid(sdk.Problem{File: p.File, Line: 1, Element: "strategy",
		Message: why + `; add [strategy] file = "strategy.toml" (sextant init writes one)`})
}
