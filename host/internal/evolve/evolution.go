package evolve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// AdapterRound is the adapter ([evolve] adapter) that runs one round of
// the mutators (Round); AdapterOffline runs ACE's epochs.
const AdapterRound = "round"

// Evolution is one sextant evolve: what it was asked, resolved against the
// pipeline's [evolve] table by Resolve.
type Evolution struct {
	// Adapter is AdapterRound or AdapterOffline ("": [evolve] adapter).
	Adapter string
	// Mutators are the round's mutators (none: [evolve] mutators, else
	// all); the offline adapter runs none.
	Mutators []string
	// Epochs are the offline adapter's passes (0: [evolve] epochs, at
	// least 1).
	Epochs int
	// At is created_at of the candidates.
	At time.Time
	// Seed, when set, seeds the seeded mutators (else [evolve] seed).
	Seed *int64
}

// Resolve fills what e leaves to p's [evolve] table and checks that the
// parts fit. Its errors are the command line's.
func (e *Evolution) Resolve(p *pipeline.Pipeline) error {
	if e.Adapter == "" {
		e.Adapter = p.Evolve.Adapter
	}
	switch e.Adapter {
	case "", AdapterRound:
		e.Adapter = AdapterRound
		if e.Epochs != 0 {
			return errors.New("--epochs: only the offline adapter has epochs (add --adapter offline)")
		}
		if len(e.Mutators) == 0 {
			e.Mutators = p.Evolve.Mutators
		}
		if len(e.Mutators) == 0 {
			e.Mutators = []string{MutatorGreedy, MutatorConservative, MutatorExploratory, MutatorCurate}
		}
	case AdapterOffline:
		if len(e.Mutators) > 0 {
			return errors.New("--mutator: the offline adapter curates; it runs no mutators")
		}
		if e.Epochs == 0 {
			e.Epochs = max(p.Evolve.Epochs, 1)
		}
	default:
		return fmt.Errorf("--adapter: %q is not round or offline", e.Adapter)
	}
	return nil
}

// mutateOptions are the options of e's mutators over p.
func (e *Evolution) mutateOptions(p *pipeline.Pipeline) MutateOptions {
	seed := uint64(p.Evolve.Seed)
	if e.Seed != nil {
		seed = uint64(*e.Seed)
	}
	return MutateOptions{At: e.At, Metric: p.Evolve.Metric, Seed: seed}
}

// ErrUnknownMutator matches a mutator name NewMutator does not know.
var ErrUnknownMutator = errors.New("unknown mutator")

// NewMutator builds the named mutator; curate talks to prep's default
// provider (through the run's provider settings: model and config).
func NewMutator(name string, mo MutateOptions, prep *run.Prepared, failures []Failure) (Mutator, error) {
	switch name {
	case MutatorGreedy:
		return Greedy(mo)
	case MutatorConservative:
		return Conservative(mo)
	case MutatorExploratory:
		return Exploratory(mo)
	case MutatorCurate:
		pr, ok := prep.Providers.Get("default")
		if !ok {
			return nil, sdk.Invalid(sdk.Problem{File: prep.Pipeline.File, Message: "the curate mutator needs [providers.default]"})
		}
		return Curate(pr.Plugin, failures, CurateOptions{At: mo.At, Model: pr.Model, Config: pr.Config})
	}
	return nil, fmt.Errorf("%w %q (want greedy, conservative, exploratory or curate)", ErrUnknownMutator, name)
}

// Taken are the versions of base's name a candidate may not take:
// recorded in st (nil: no store yet) or written beside p's strategy file;
// promoted are the versions already promoted from base itself.
func Taken(ctx context.Context, st *store.Store, p *pipeline.Pipeline, base *strategy.Strategy) (taken map[string]bool, promoted []string, err error) {
	name := base.Metadata.Name
	if taken, err = TakenVersions(ctx, st, strategyDir(p), name); err != nil || st == nil {
		return taken, nil, err
	}
	log, err := st.StrategyLog(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	for _, r := range log {
		if r.Parent == base.Metadata.Version {
			promoted = append(promoted, r.Version)
		}
	}
	return taken, promoted, nil
}

// Round runs one round of e's mutators against prep's strategy over the
// replays of rc, judging every candidate with p's gate chain; taken are
// the versions candidates may not take (Taken).
func (e *Evolution) Round(ctx context.Context, rc replay.Config, reg *plugin.Registry, prep *run.Prepared, taken map[string]bool) (*RoundResult, error) {
	p := prep.Pipeline
	opts, gates, closeGates, err := gatesOf(ctx, reg, p, rc.Seed)
	if err != nil {
		return nil, err
	}
	defer closeGates()
	mo := e.mutateOptions(p)
	return Round(ctx, RoundConfig{Replay: rc, Baseline: prep.Strategy, Gates: gates, Options: opts,
		Metric: p.Evolve.Metric, Mutators: e.Mutators, Taken: func(v string) bool { return taken[v] },
		NewMutator: func(name string, failures []Failure) (Mutator, error) {
			return NewMutator(name, mo, prep, failures)
		}})
}

// Offline runs the offline adapter (Offline) against prep's strategy over
// the replays of rc, checkpointing its epochs in st (nil: none) and
// telling progress of each.
func (e *Evolution) Offline(ctx context.Context, rc replay.Config, reg *plugin.Registry, prep *run.Prepared, st *store.Store, progress func(Epoch)) (*OfflineResult, error) {
	p := prep.Pipeline
	opts, gates, closeGates, err := gatesOf(ctx, reg, p, rc.Seed)
	if err != nil {
		return nil, err
	}
	defer closeGates()
	mo := e.mutateOptions(p)
	oc := OfflineConfig{Replay: rc, Baseline: prep.Strategy, Gates: gates, Options: opts, Metric: p.Evolve.Metric, Epochs: e.Epochs,
		Hygiene: strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold},
		At:      e.At, Checkpoints: st, Key: p.Name, Progress: progress,
		NewCurator: func(failures []Failure) (Mutator, error) {
			return NewMutator(MutatorCurate, mo, prep, failures)
		},
	}
	return Offline(ctx, oc)
}

// gatesOf are the judging options of an evolution of p replayed with
// seed, and p's gate chain under them (GateChain), with what closes it.
func gatesOf(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, seed int64) (Options, []GateSpec, func(), error) {
	opts := Options{Seed: uint64(seed), MinFidelity: p.Replay.MinFidelity}
	gates, closeGates, err := GateChain(ctx, reg, p, opts)
	return opts, gates, closeGates, err
}

// SettleInto settles an evolution's candidates in st (Settle: the winner
// promoted beside p's strategy, or reviews queued, the rest archived) and
// keeps every candidate's comparison there for sextant serve to show (one
// that cannot be kept is logged, not fatal).
func SettleInto(ctx context.Context, st *store.Store, p *pipeline.Pipeline, cands []Evaluated, at time.Time, logger *slog.Logger) (*Settlement, error) {
	settled, err := Settle(ctx, st, strategyDir(p), p.Name, cands, p.Evolve.Metric, at)
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		v, err := CandidateVerdict(c, p.Name, st.NewID(), st.Now())
		if err == nil {
			err = SaveVerdict(ctx, st, v)
		}
		if err != nil && logger != nil {
			logger.Warn("a candidate's comparison is not recorded in the store", "candidate", c.ID(), "err", err)
		}
	}
	return settled, nil
}
