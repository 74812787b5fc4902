package evolve

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// AdapterOffline is the mutator name of candidates made by the offline
// adapter, as evidence and the candidate table show it.
const AdapterOffline = "offline"

// CollOfflineEpochs is the store collection holding the offline adapter's
// checkpoints: the epochs done and the operations they made.
const CollOfflineEpochs = "evolve-offline"

// OfflineConfig is the setup of the offline adapter.
type OfflineConfig struct {
	// Replay replays the recorded tasks; the adapter sets its Strategies.
	// Its OnMiss decides how prompts a candidate changed are answered:
	// "live" sends them to the pipeline's providers (the script provider's
	// rules offline).
	Replay   replay.Config
	Baseline *strategy.Strategy
	Gates    []GateSpec
	Options  Options
	Metric   string
	// Epochs is the number of passes over the recorded tasks (≥ 1).
	Epochs  int
	Hygiene strategy.Hygiene
	// NewCurator returns the curate mutator over an epoch's failures
	// (evolve.Curate with the pipeline's provider); nil curates nothing.
	NewCurator func(failures []Failure) (Mutator, error)
	// At is created_at of the candidates.
	At time.Time
	// Checkpoints, when set, keep each finished epoch under Key, so a
	// killed adapter resumes at the epoch it was in.
	Checkpoints *store.Store
	Key         string
	// Progress, when set, is told about each epoch as it ends.
	Progress func(Epoch)
}

// Epoch is what one epoch of the offline adapter did.
type Epoch struct {
	N int `json:"n"`
	// Rate is the metric of the strategy the epoch started from, on the
	// replayed tasks.
	Rate float64 `json:"rate"`
	// Ops are the delta operations the epoch made: TAGs counting cited
	// bullets, the curator's, hygiene's.
	Ops []strategy.Delta `json:"ops"`
	// Candidate is the epoch's candidate (baseline + every epoch's
	// operations so far), judged against the baseline; nil when the epoch
	// changed nothing.
	Candidate *Evaluated `json:"-"`
	// Rejected is the curator's reply when it was refused.
	Rejected string `json:"rejected,omitempty"`
	// Resumed is set for an epoch done before a restart.
	Resumed bool `json:"-"`
}

// offlineCheckpoint is the stored progress of one offline evolution.
type offlineCheckpoint struct {
	Baseline string  `json:"baseline"` // content hash
	Done     int     `json:"done"`     // epochs finished
	Epochs   []Epoch `json:"epochs"`
}

// OfflineResult is what the adapter found; nothing is promoted yet.
type OfflineResult struct {
	Baseline *Judgment
	Epochs   []Epoch
	// Candidates holds the final candidate (the baseline with every
	// epoch's operations), judged like any candidate; empty when no epoch
	// changed the playbook.
	Candidates []Evaluated
	// ResumedAt is the epoch a resumed adapter started at (0: fresh).
	ResumedAt int
}

// Offline runs the offline adapter (ACE's OfflineAdapter) for cfg.Epochs
// epochs over the recorded tasks. Each epoch replays the working strategy
// (the baseline, then the last epoch's candidate), counts the bullets each
// replay cited (TagCitations: helpful when the task succeeded, harmful when
// it failed), lets the curator reflect on the failed replays against their
// ground truth and propose operations, tidies the playbook (Hygiene, token
// budget), and makes the epoch's candidate: the baseline revised with every
// epoch's operations so far, so its parent is the baseline and its change
// log quotes each operation's evidence. The candidate is replayed against
// the baseline and judged by Judge with the gate chain, as sextant gate
// would. An epoch that changes nothing ends the adapter early.
//
// With Checkpoints set, each finished epoch is stored; a run with the same
// Key and baseline resumes after the last finished epoch (a kill in epoch 2
// starts again at epoch 2). Call ClearOffline once the result is settled.
func Offline(ctx context.Context, cfg OfflineConfig) (*OfflineResult, error) {
	if cfg.Epochs < 1 {
		return nil, fmt.Errorf("offline adapter: epochs %d: want at least 1", cfg.Epochs)
	}
	base := cfg.Baseline
	// The baseline's replay and every probe share one set of plugins per
	// worker (replay.Pool), opened once for the whole adapter run.
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
	cp := offlineCheckpoint{Baseline: base.Hash()}
	var coll *store.Collection[offlineCheckpoint]
	if cfg.Checkpoints != nil {
		var err error
		if coll, err = store.NewCollection[offlineCheckpoint](cfg.Checkpoints, CollOfflineEpochs); err != nil {
			return nil, err
		}
		switch old, err := coll.Get(ctx, cfg.Key); {
		case err == nil && old.Baseline == cp.Baseline:
			cp = old
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("offline adapter: checkpoint: %w", err)
		}
	}
	out := &OfflineResult{}
	if cp.Done > 0 {
		out.ResumedAt = cp.Done + 1
	}
	var all []strategy.Delta
	for i := range cp.Epochs {
		cp.Epochs[i].Resumed = true
		all = append(all, cp.Epochs[i].Ops...)
	}
	out.Epochs = append(out.Epochs, cp.Epochs...)
	candidateOf := func(ops []strategy.Delta) (*strategy.Strategy, error) {
		return base.Revise(strategy.Revision{By: createdBy(AdapterOffline), At: cfg.At, Playbook: ops})
	}
	working := base
	if len(all) > 0 {
		c, err := candidateOf(all)
		if err != nil {
			return nil, fmt.Errorf("offline adapter: resume after epoch %d: %w", cp.Done, err)
		}
		working = c
	}
	baseResults, err := replayOf(ctx, base)
	if err != nil {
		return nil, err
	}
	out.Baseline = Judge(ctx, baseResults, base, nil, nil, cfg.Options)
	workResults := baseResults
	if working != base {
		if workResults, err = replayOf(ctx, working); err != nil {
			return nil, err
		}
	}
	var last *Evaluated
	for n := cp.Done + 1; n <= cfg.Epochs; n++ {
		failpoint.Hit(failpoint.EvolveEpoch)
		ep := Epoch{N: n, Rate: successRate(workResults)}
		var uses []Use
		var failures []Failure
		for _, r := range workResults {
			if u, ok := UseOfReplay(r); ok {
				uses = append(uses, u)
			}
			if !r.Outcome.Success && !r.Skipped {
				failures = append(failures, failureOf(ctx, cfg.Replay, r))
			}
		}
		ops := TagCitations(uses, working.Playbook)
		tagged, err := working.Apply(ops...)
		if err != nil {
			return nil, fmt.Errorf("offline adapter: epoch %d: %w", n, err)
		}
		if cfg.NewCurator != nil && len(failures) > 0 {
			m, err := cfg.NewCurator(failures)
			if err != nil {
				return nil, err
			}
			proposed, err := m.Propose(ctx, tagged.Strategy, nil)
			switch {
			case errors.Is(err, ErrRejected):
				ep.Rejected = err.Error()
			case err != nil:
				return nil, fmt.Errorf("offline adapter: epoch %d: %w", n, err)
			case len(proposed) > 0:
				entry := proposed[0].ChangeLog[len(proposed[0].ChangeLog)-1]
				ops = append(ops, entry.Playbook...)
			}
		}
		cur, err := working.Apply(ops...)
		if err != nil {
			return nil, fmt.Errorf("offline adapter: epoch %d: %w", n, err)
		}
		ops = append(cur.Ops, cur.Strategy.Tidy(cfg.Hygiene)...)
		for i := range ops {
			ops[i].Reason = "epoch " + strconv.Itoa(n) + ": " + ops[i].Reason
		}
		ep.Ops = ops
		if len(ops) == 0 {
			out.Epochs = append(out.Epochs, ep)
			if cfg.Progress != nil {
				cfg.Progress(ep)
			}
			break // nothing changes: later epochs would see the same replays
		}
		all = append(all, ops...)
		cand, err := candidateOf(all)
		if err != nil {
			return nil, fmt.Errorf("offline adapter: epoch %d: %w", n, err)
		}
		if tokens, over := cand.OverBudget(); over {
			return nil, fmt.Errorf("offline adapter: epoch %d: the playbook is %d tokens, over max_playbook_tokens %d", n, tokens, cand.Evolution.MaxPlaybookTokens)
		}
		results, err := replayOf(ctx, base, cand)
		if err != nil {
			return nil, err
		}
		j := Judge(ctx, results, base, cand, cfg.Gates, cfg.Options)
		last = &Evaluated{Mutator: AdapterOffline, Strategy: cand, Comparison: j.Comparison, Result: Result{Ruling: j.Ruling, Gates: j.Chain.Gates}}
		ep.Candidate = last
		workResults = workResults[:0]
		for _, r := range results {
			if r.Hash == cand.Hash() {
				workResults = append(workResults, r)
			}
		}
		working = cand
		out.Epochs = append(out.Epochs, ep)
		if coll != nil {
			cp.Done = n
			cp.Epochs = append(cp.Epochs, ep)
			if err := coll.Put(ctx, cfg.Key, cp); err != nil {
				return nil, fmt.Errorf("offline adapter: checkpoint epoch %d: %w", n, err)
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(ep)
		}
	}
	if last == nil && len(all) > 0 {
		// Every epoch of this process was resumed or changed nothing: judge
		// the candidate the checkpointed epochs made.
		results, err := replayOf(ctx, base, working)
		if err != nil {
			return nil, err
		}
		j := Judge(ctx, results, base, working, cfg.Gates, cfg.Options)
		last = &Evaluated{Mutator: AdapterOffline, Strategy: working, Comparison: j.Comparison, Result: Result{Ruling: j.Ruling, Gates: j.Chain.Gates}}
	}
	if last != nil {
		out.Candidates = []Evaluated{*last}
	}
	return out, nil
}

// OfflineResumesAt reports the epoch an offline evolution of base under key
// would resume at, when a checkpoint holds finished epochs.
func OfflineResumesAt(ctx context.Context, st *store.Store, key string, base *strategy.Strategy) (int, bool) {
	coll, err := store.NewCollection[offlineCheckpoint](st, CollOfflineEpochs)
	if err != nil {
		return 0, false
	}
	cp, err := coll.Get(ctx, key)
	if err != nil || cp.Baseline != base.Hash() || cp.Done == 0 {
		return 0, false
	}
	return cp.Done + 1, true
}

// ClearOffline drops the offline adapter's checkpoint under key, once its
// result is settled: the next evolution starts at epoch 1.
func ClearOffline(ctx context.Context, st *store.Store, key string) error {
	coll, err := store.NewCollection[offlineCheckpoint](st, CollOfflineEpochs)
	if err != nil {
		return err
	}
	if err := coll.Delete(ctx, key); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// successRate is the success rate of results, skipped ones left out.
func successRate(rs []replay.Result) float64 {
	n, ok := 0, 0
	for _, r := range rs {
		if r.Skipped {
			continue
		}
		n++
		if r.Outcome.Success {
			ok++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(ok) / float64(n)
}
