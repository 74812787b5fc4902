package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// The evolve adapters ([evolve] adapter, --adapter).
const (
	adapterRound   = "round"
	adapterOffline = "offline"
)

// evolveOffline runs the offline adapter (evolve.Offline) and settles its
// candidate. Epochs are checkpointed in the pipeline's store, which is
// then also the replay source when the pipeline has no dataset.
func (a *app) evolveOffline(ctx context.Context, loaded *run.Loaded, reg *plugin.Registry, prep *run.Prepared, f *replayFlags,
	cfg effective, prepOpts []run.PrepareOption, er evolveRun) error {
	p, base := prep.Pipeline, prep.Strategy
	var st *store.Store
	var loc storeLoc
	if !er.dryRun {
		var err error
		if loc, err = (&storeFlags{dir: f.store.dir}).locate(p); err != nil {
			return err
		}
		if st, err = a.openStoreWith(ctx, loc.dir, createStore, p); err != nil {
			return err
		}
		defer st.Close()
	}
	var rc replay.Config
	if st != nil && f.dataset == "" && p.Replay.Dataset == "" {
		rc = a.replayOver(st, loaded, reg, cfg, prepOpts)
	} else {
		c, cleanup, err := a.replaySetup(ctx, loaded, reg, f, cfg, prepOpts)
		if err != nil {
			return err
		}
		defer cleanup()
		rc = c
	}
	opts := evolve.Options{Seed: uint64(cfg.Seed), MinFidelity: p.Replay.MinFidelity}
	gates, closeGates, err := evolve.GateChain(ctx, reg, p, opts)
	if err != nil {
		return err
	}
	defer closeGates()
	metric := p.Evolve.Metric
	mo := evolve.MutateOptions{At: er.at, Metric: metric, Seed: er.mutatorSeed(p)}
	oc := evolve.OfflineConfig{Replay: rc, Baseline: base, Gates: gates, Options: opts, Metric: metric, Epochs: er.epochs,
		Hygiene: strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold},
		At:      er.at, Checkpoints: st, Key: p.Name,
		NewCurator: func(failures []evolve.Failure) (evolve.Mutator, error) {
			return a.mutator(evolve.MutatorCurate, mo, prep, failures)
		},
		Progress: func(ep evolve.Epoch) { a.printEpoch(ep, er.epochs, metric) },
	}
	if st != nil {
		// Resuming is announced before the replays start.
		if n, ok := evolve.OfflineResumesAt(ctx, st, p.Name, base); ok {
			done := "epoch 1"
			if n > 2 {
				done = fmt.Sprintf("epochs 1–%d", n-1)
			}
			fmt.Fprintf(a.stdout, "resuming at epoch %d (%s checkpointed)\n", n, done)
		}
	}
	res, err := evolve.Offline(ctx, oc)
	if err != nil {
		return err
	}
	self := res.Baseline.Self
	fmt.Fprintf(a.stdout, "baseline %s: %d tasks replayed, fidelity %.1f%%\n", base.Metadata.Version, res.Baseline.Tasks, 100*self.Fidelity())
	for _, r := range res.Baseline.Reasons {
		fmt.Fprintf(a.stdout, "  %s\n", r)
	}
	cands := res.Candidates
	a.printCandidates(cands, metric)
	if len(cands) == 0 {
		fmt.Fprintln(a.stdout, "no epoch changed the playbook")
		if st != nil {
			return evolve.ClearOffline(ctx, st, p.Name)
		}
		return nil
	}
	if er.dryRun {
		if winner, _ := evolve.Select(cands, metric); winner != nil {
			fmt.Fprintf(a.stdout, "dry run: would promote %s %s (%s)\n", winner.Strategy.Metadata.Version, winner.ID(), winner.Mutator)
		} else {
			fmt.Fprintln(a.stdout, "dry run: the candidate did not pass its gates")
		}
		return verdict(evolve.ExitCode((&evolve.RoundResult{Candidates: cands}).Ruling(metric)))
	}
	dir := filepath.Dir(p.Path(p.Strategy.File))
	settled, err := evolve.Settle(ctx, st, dir, p.Name, cands, metric, er.at)
	if err != nil {
		return err
	}
	if err := evolve.ClearOffline(ctx, st, p.Name); err != nil {
		return err
	}
	switch {
	case settled.Winner != nil:
		fmt.Fprintf(a.stdout, "promoted %s %s (%s) → %s\n", settled.Winner.Strategy.Metadata.Name, settled.Winner.Strategy.Metadata.Version,
			settled.Winner.Mutator, settled.Path)
		if err := a.settleLive(ctx, st, er.configured, settled, base.Metadata.Version, er.at); err != nil {
			return err
		}
	case len(settled.Reviews) > 0:
		for _, rv := range settled.Reviews {
			fmt.Fprintf(a.stdout, "awaiting review: %s (%s) — sextant review show %s%s\n", rv.ID, rv.Mutator, rv.ID, loc.flag())
		}
	default:
		fmt.Fprintln(a.stdout, "the candidate did not pass its gates; archived")
	}
	return verdict(evolve.ExitCode(settled.Ruling()))
}

// printEpoch prints one line per epoch: the working strategy's metric, the
// operations made, the candidate's verdict.
func (a *app) printEpoch(ep evolve.Epoch, epochs int, metric string) {
	line := fmt.Sprintf("epoch %d/%d: %s %.3f", ep.N, epochs, metric, ep.Rate)
	if ops := evolve.OpCounts(ep.Ops); ops == "" {
		line += "; nothing to change"
	} else {
		line += "; " + ops
	}
	if c := ep.Candidate; c != nil {
		line += fmt.Sprintf(" → candidate %s %s", c.Strategy.Metadata.Version, c.ID())
		for _, m := range c.Comparison.Metrics {
			if m.Name == metric {
				line += fmt.Sprintf(" %+.3f", m.Effect)
			}
		}
		line += " " + string(c.Result.Ruling)
	}
	fmt.Fprintln(a.stdout, line)
	if ep.Rejected != "" {
		fmt.Fprintf(a.stderr, "epoch %d: curator proposed nothing: %s\n", ep.N, ep.Rejected)
	}
}
