package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// RoundConfig is the setup of one evolution round.
type RoundConfig struct {
	// Replay replays the recorded tasks; the round sets its Strategies.
	Replay replay.Config
	// Baseline is the strategy the round tries to improve on.
	Baseline *strategy.Strategy
	// Gates judge every candidate, as sextant gate would.
	Gates   []GateSpec
	Options Options
	// Metric is what the mutators improve and Select ranks by.
	Metric string
	// Mutators names the mutators to run, in order.
	Mutators []string
	// NewMutator builds a named mutator. failures are the baseline's
	// failed replays, for mutators that reflect on them (curate).
	NewMutator func(name string, failures []Failure) (Mutator, error)
	// Taken reports the versions already in use (TakenVersions); each
	// candidate gets the first minor bump of the baseline that is neither
	// taken nor given to an earlier candidate of the round. nil: only the
	// round's own candidates count.
	Taken func(version string) bool
}

// Rejection is a mutator that proposed nothing, and why (its Err says;
// ErrRejected or ErrNothingProposed match it).
type Rejection struct {
	Mutator string
	Err     error
}

// RoundResult is what a round found, before anything is promoted.
type RoundResult struct {
	// Baseline is the judgment of the baseline's own replays (fidelity).
	Baseline *Judgment
	// Candidates are the proposed candidates with their verdicts, in the
	// order the mutators proposed them (each strategy once).
	Candidates []Evaluated
	// Rejected are the mutators that proposed nothing.
	Rejected []Rejection
}

// Ruling is the round's verdict before settlement: pass when a candidate
// can be promoted or none was proposed, else review when one waits for a
// person, else fail.
func (r *RoundResult) Ruling(metric string) sdk.Ruling {
	if len(r.Candidates) == 0 {
		return sdk.Pass
	}
	if w, _ := Select(r.Candidates, metric); w != nil {
		return sdk.Pass
	}
	return roundWaiting(r.Candidates)
}

// Ruling is the verdict of a settled round: pass when a candidate was
// promoted, review when candidates were queued for a person, else fail.
func (s *Settlement) Ruling() sdk.Ruling {
	switch {
	case s.Winner != nil:
		return sdk.Pass
	case len(s.Reviews) > 0:
		return sdk.Review
	}
	return sdk.Fail
}

func roundWaiting(cands []Evaluated) sdk.Ruling {
	for _, c := range cands {
		if c.Result.Ruling == sdk.Review {
			return sdk.Review
		}
	}
	return sdk.Fail
}

// Round runs one evolution round (DESIGN §7): it replays the baseline,
// lets each mutator propose candidates (probing them by replay), and judges
// every candidate with Judge on the same tasks, so a candidate's verdict is
// the one sextant gate gives it. It promotes nothing: call Settle (or, for
// a dry run, Select) on the result.
func Round(ctx context.Context, cfg RoundConfig) (*RoundResult, error) {
	base := cfg.Baseline
	// The baseline's replay and every probe share one set of plugins per
	// worker (replay.Pool), opened once for the whole round.
	pool := cfg.Replay.Pool
	if pool == nil && cfg.Replay.Prepare != nil {
		pool = replay.NewPool(cfg.Replay.Prepare)
		defer pool.Close(context.WithoutCancel(ctx))
	}
	replayOf := func(ctx context.Context, strategies ...*strategy.Strategy) ([]replay.Result, error) {
		rc := cfg.Replay
		rc.Strategies, rc.Pool = strategies, pool
		var out []replay.Result
		err := replay.Run(ctx, rc, func(r replay.Result) error { out = append(out, r); return nil })
		return out, err
	}
	baseResults, err := replayOf(ctx, base)
	if err != nil {
		return nil, err
	}
	out := &RoundResult{Baseline: Judge(ctx, baseResults, base, nil, nil, cfg.Options)}
	var failures []Failure
	for _, r := range baseResults {
		if !r.Outcome.Success && !r.Skipped {
			failures = append(failures, failureOf(ctx, cfg.Replay, r))
		}
	}
	judge := func(ctx context.Context, cand *strategy.Strategy, gates []GateSpec) (*Judgment, error) {
		results, err := replayOf(ctx, base, cand)
		if err != nil {
			return nil, err
		}
		return Judge(ctx, results, base, cand, gates, cfg.Options), nil
	}
	probe := MemoProbe(func(ctx context.Context, cand *strategy.Strategy) (*sdk.Comparison, error) {
		j, err := judge(ctx, cand, nil)
		if err != nil {
			return nil, err
		}
		return j.Comparison, nil
	})
	seen := map[string]bool{}
	used := map[string]bool{} // versions given to this round's candidates
	for _, name := range cfg.Mutators {
		m, err := cfg.NewMutator(name, failures)
		if err != nil {
			return nil, err
		}
		proposed, err := m.Propose(ctx, base, probe)
		if errors.Is(err, ErrRejected) || errors.Is(err, ErrNothingProposed) {
			out.Rejected = append(out.Rejected, Rejection{Mutator: name, Err: err})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("mutator %s: %w", name, err)
		}
		if len(proposed) == 0 {
			out.Rejected = append(out.Rejected, Rejection{Mutator: name, Err: nothingProposed(name, "it gave no reason")})
			continue
		}
		fresh := 0
		for _, cand := range proposed {
			// Two mutators may propose the same change; the version is
			// left out of the comparison, as it is chosen below.
			key := sameChange(cand)
			if seen[key] {
				continue
			}
			seen[key] = true
			fresh++
			v, err := nextFree(base.Metadata.Version, func(v string) bool { return used[v] || (cfg.Taken != nil && cfg.Taken(v)) })
			if err != nil {
				return nil, fmt.Errorf("mutator %s: %w", name, err)
			}
			if v != cand.Metadata.Version {
				if cand, err = cand.Renumber(v); err != nil {
					return nil, fmt.Errorf("mutator %s: %w", name, err)
				}
			}
			used[v] = true
			j, err := judge(ctx, cand, cfg.Gates)
			if err != nil {
				return nil, err
			}
			out.Candidates = append(out.Candidates, Evaluated{Mutator: m.Name(), Strategy: cand, Comparison: j.Comparison,
				Result: Result{Ruling: j.Ruling, Gates: j.Chain.Gates}})
		}
		if fresh == 0 {
			out.Rejected = append(out.Rejected, Rejection{Mutator: name, Err: nothingProposed(name, "every candidate it proposed was already proposed in this round")})
		}
	}
	return out, nil
}

// sameChange is what two candidates share when they make the same change:
// their content hash under one fixed version.
func sameChange(s *strategy.Strategy) string {
	c := s.Clone()
	for i := range c.ChangeLog {
		if c.ChangeLog[i].Version == c.Metadata.Version {
			c.ChangeLog[i].Version = "0.0.0"
		}
	}
	c.Metadata.Version = "0.0.0"
	return c.Hash()
}

// failureOf renders a failed baseline replay for the reflector.
func failureOf(ctx context.Context, rc replay.Config, r replay.Result) Failure {
	f := Failure{Task: r.Task, Error: r.Error}
	if rc.Source != nil {
		if t, err := rc.Source.Task(ctx, r.Task); err == nil {
			f.Input, f.Truth = string(t.Input), string(t.Truth)
		}
	}
	if r.Output != nil {
		if b, err := json.Marshal(r.Output); err == nil {
			f.Output = string(b)
		}
	}
	return f
}
