package cli

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// evolveOffline runs the offline adapter (evolve.Offline) and settles its
// candidate. Epochs are checkpointed in the pipeline's store, which is
// then also the replay source when the pipeline has no dataset.
func (a *app) evolveOffline(ctx context.Context, setup replay.Setup, prep *run.Prepared, f *replayFlags, er evolveRun) error {
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
		// Resuming is announced before the replays start.
		if n, ok := evolve.OfflineResumesAt(ctx, st, p.Name, base); ok {
			done := "epoch 1"
			if n > 2 {
				done = fmt.Sprintf("epochs 1–%d", n-1)
			}
			fmt.Fprintf(a.stdout, "resuming at epoch %d (%s checkpointed)\n", n, done)
		}
	}
	var rc replay.Config
	if st != nil && replay.DatasetOf(p, f.dataset) == "" {
		rc = setup.Config(st)
	} else {
		c, cleanup, err := a.replaySetup(ctx, setup, f)
		if err != nil {
			return err
		}
		defer cleanup()
		rc = c
	}
	metric := p.Evolve.Metric
	res, err := er.ev.Offline(ctx, rc, setup.Plugins, prep, st, func(ep evolve.Epoch) { a.printEpoch(ep, er.ev.Epochs, metric) })
	if err != nil {
		return err
	}
	a.printBaseline(base, res.Baseline, false)
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
		a.printDryRun(cands, metric, "the candidate did not pass its gates")
		return verdict(evolve.ExitCode((&evolve.RoundResult{Candidates: cands}).Ruling(metric)))
	}
	if err := evolve.ClearOffline(ctx, st, p.Name); err != nil {
		return err
	}
	return a.settle(ctx, st, loc, er, prep, cands, "the candidate did not pass its gates; archived")
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
