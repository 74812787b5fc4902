package app

import (
	"context"
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/termtext"
)

// EvolveRun is what one sextant evolve was asked to do, and where it
// says how it went.
type EvolveRun struct {
	Evolution evolve.Evolution
	// DryRun evaluates the candidates but promotes, queues and archives
	// nothing.
	DryRun bool
	// Dataset and Store are --dataset and --store.
	Dataset, Store string
	// SettleStore opens (creating it) the store the candidates settle in,
	// and returns the --store text that names it in the next commands.
	SettleStore func(ctx context.Context, p *pipeline.Pipeline) (*store.Store, string, error)
	// Stdout takes the report, Stderr the diagnostics.
	Stdout, Stderr io.Writer
}

// RunEvolution runs e's adapter (a round of the mutators, or the offline
// epochs), prints its candidates and settles them, and returns the exit
// code of the verdict printed. A mutator the pipeline lacks is an
// evolve.ErrUnknownMutator.
func (r *Replayer) RunEvolution(ctx context.Context, e *Evolving, er *EvolveRun) (int, error) {
	base := e.Prep.Strategy
	for _, v := range e.Promoted {
		fmt.Fprintf(er.Stdout, "note: %s was already promoted from %s, which is live (sextant promote %s %s makes it live)\n",
			v, base.Metadata.Version, e.Prep.Pipeline.File, v)
	}
	if er.Evolution.Adapter == evolve.AdapterOffline {
		return r.evolveOffline(ctx, e, er)
	}
	return r.evolveRound(ctx, e, er)
}

// evolveRound runs one round of the mutators and settles its candidates.
func (r *Replayer) evolveRound(ctx context.Context, e *Evolving, er *EvolveRun) (int, error) {
	p, base := e.Prep.Pipeline, e.Prep.Strategy
	rc, cleanup, err := r.Source(ctx, e.Setup, er.Dataset, er.Store)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	round, err := er.Evolution.Round(ctx, rc, e.Setup.Plugins, e.Prep, e.Taken)
	if err != nil {
		return 0, err
	}
	if !round.WriteText(er.Stdout, er.Stderr, base, p.Evolve.Metric) {
		return 0, nil
	}
	if er.DryRun {
		evolve.WriteDryRun(er.Stdout, round.Candidates, p.Evolve.Metric, "no candidate passed its gates")
		return evolve.ExitCode(round.Ruling(p.Evolve.Metric)), nil
	}
	cleanup() // the source may be the pipeline's own store, opened read-only
	st, flag, err := er.SettleStore(ctx, p)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return r.settle(ctx, st, flag, er, e, round.Candidates, "no candidate passed its gates; all archived")
}

// evolveOffline runs the offline adapter (evolve.Offline) and settles its
// candidate. Epochs are checkpointed in the pipeline's store, which is
// then also the replay source when the pipeline has no dataset.
func (r *Replayer) evolveOffline(ctx context.Context, e *Evolving, er *EvolveRun) (int, error) {
	p, base := e.Prep.Pipeline, e.Prep.Strategy
	var st *store.Store
	var flag string
	if !er.DryRun {
		var err error
		if st, flag, err = er.SettleStore(ctx, p); err != nil {
			return 0, err
		}
		defer st.Close()
		// Resuming is announced before the replays start.
		if n, ok := evolve.OfflineResumesAt(ctx, st, p.Name, base); ok {
			fmt.Fprintln(er.Stdout, evolve.ResumingNote(n))
		}
	}
	rc, cleanup, err := r.offlineSource(ctx, e, er, st)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	metric := p.Evolve.Metric
	res, err := er.Evolution.Offline(ctx, rc, e.Setup.Plugins, e.Prep, st, er.epochPrinter(metric))
	if err != nil {
		return 0, err
	}
	res.Baseline.WriteBaseline(er.Stdout, base, false)
	cands := res.Candidates
	evolve.WriteCandidates(er.Stdout, cands, metric)
	if len(cands) == 0 {
		fmt.Fprintln(er.Stdout, "no epoch changed the playbook")
		if st != nil {
			return 0, evolve.ClearOffline(ctx, st, p.Name)
		}
		return 0, nil
	}
	if er.DryRun {
		evolve.WriteDryRun(er.Stdout, cands, metric, "the candidate did not pass its gates")
		return evolve.ExitCode((&evolve.RoundResult{Candidates: cands}).Ruling(metric)), nil
	}
	if err := evolve.ClearOffline(ctx, st, p.Name); err != nil {
		return 0, err
	}
	return r.settle(ctx, st, flag, er, e, cands, "the candidate did not pass its gates; archived")
}

// offlineSource is what the offline epochs replay: the settling store st
// when the pipeline has no dataset, else the usual source.
func (r *Replayer) offlineSource(ctx context.Context, e *Evolving, er *EvolveRun, st *store.Store) (replay.Config, func(), error) {
	if st != nil && replay.DatasetOf(e.Prep.Pipeline, er.Dataset) == "" {
		return e.Setup.Config(st), func() {}, nil
	}
	return r.Source(ctx, e.Setup, er.Dataset, er.Store)
}

// epochPrinter prints one line per epoch, and the curator's refusals on
// stderr.
func (er *EvolveRun) epochPrinter(metric string) func(evolve.Epoch) {
	return func(ep evolve.Epoch) {
		ep.WriteText(er.Stdout, er.Evolution.Epochs, metric)
		if ep.Rejected != "" {
			// The curator's reply is a model's text: shown, never obeyed.
			fmt.Fprintf(er.Stderr, "epoch %d: curator proposed nothing: %s\n", ep.N, termtext.Escape(ep.Rejected))
		}
	}
}

// settle settles an evolution's candidates in st, says how, moves the
// live version to a winner, and returns the verdict's exit code.
func (r *Replayer) settle(ctx context.Context, st *store.Store, flag string, er *EvolveRun, e *Evolving, cands []evolve.Evaluated, none string) (int, error) {
	settled, err := evolve.SettleInto(ctx, st, e.Prep.Pipeline, cands, er.Evolution.At, r.Logger)
	if err != nil {
		return 0, err
	}
	settled.WriteText(er.Stdout, flag, none)
	if settled.Winner != nil {
		if err := evolve.SettleLive(ctx, er.Stdout, st, e.Configured, settled, e.Prep.Strategy.Metadata.Version, er.Evolution.At); err != nil {
			return 0, err
		}
	}
	return evolve.ExitCode(settled.Ruling()), nil
}
