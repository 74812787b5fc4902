package cli

import (
	"context"
	"fmt"
	layer "github.com/sextant-dev/sextant/host/internal/app"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// evolveOffline runs the offline adapter (evolve.Offline) and settles its
// candidate. Epochs are checkpointed in the pipeline's store, which is
// then also the replay source when the pipeline has no dataset.
func (a *app) evolveOffline(ctx context.Context, e *layer.Evolving, f *replayFlags, er evolveRun) error {
	p, base := e.Prep.Pipeline, e.Prep.Strategy
	var st *store.Store
	var loc storeLoc
	if !er.dryRun {
		var err error
		if st, loc, err = a.evolveStore(ctx, p, f); err != nil {
			return err
		}
		defer st.Close()
		// Resuming is announced before the replays start.
		if n, ok := evolve.OfflineResumesAt(ctx, st, p.Name, base); ok {
			fmt.Fprintln(a.stdout, evolve.ResumingNote(n))
		}
	}
	var rc replay.Config
	if st != nil && replay.DatasetOf(p, f.dataset) == "" {
		rc = e.Setup.Config(st)
	} else {
		c, cleanup, err := a.replayer().Source(ctx, e.Setup, f.dataset, f.store.dir)
		if err != nil {
			return err
		}
		defer cleanup()
		rc = c
	}
	metric := p.Evolve.Metric
	res, err := er.ev.Offline(ctx, rc, e.Setup.Plugins, e.Prep, st, a.epochPrinter(er.ev.Epochs, metric))
	if err != nil {
		return err
	}
	res.Baseline.WriteBaseline(a.stdout, base, false)
	cands := res.Candidates
	evolve.WriteCandidates(a.stdout, cands, metric)
	if len(cands) == 0 {
		fmt.Fprintln(a.stdout, "no epoch changed the playbook")
		if st != nil {
			return evolve.ClearOffline(ctx, st, p.Name)
		}
		return nil
	}
	if er.dryRun {
		evolve.WriteDryRun(a.stdout, cands, metric, "the candidate did not pass its gates")
		return verdict(evolve.ExitCode((&evolve.RoundResult{Candidates: cands}).Ruling(metric)))
	}
	if err := evolve.ClearOffline(ctx, st, p.Name); err != nil {
		return err
	}
	return a.settle(ctx, st, loc, er, e, cands, "the candidate did not pass its gates; archived")
}

// epochPrinter prints one line per epoch, and the curator's refusals on
// stderr.
func (a *app) epochPrinter(epochs int, metric string) func(evolve.Epoch) {
	return func(ep evolve.Epoch) {
		ep.WriteText(a.stdout, epochs, metric)
		if ep.Rejected != "" {
			fmt.Fprintf(a.stderr, "epoch %d: curator proposed nothing: %s\n", ep.N, ep.Rejected)
		}
	}
}
