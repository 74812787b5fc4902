package evolve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// PipelineCandidate is a candidate that is a whole pipeline (gate
// --candidate-pipeline): a model swap, a prompt edit, a provider or a
// routine change, replayed over the gated pipeline's recorded tasks.
type PipelineCandidate struct {
	// Base replays the gated pipeline, Cand the candidate pipeline: both
	// without strategies, over the same source, sample and shard. Cand's
	// OnMiss and MaxLiveCostUSD are the candidate's: its changed calls miss
	// their recordings and, under "live", are made, kept in Cand.Record.
	Base, Cand replay.Config
	// Baseline is the gated pipeline's strategy, Strategy the candidate
	// pipeline's (the same one unless the candidate names another).
	Baseline, Strategy *strategy.Strategy
	// Pipeline is the candidate pipeline, File the file it was given as.
	Pipeline *pipeline.Pipeline
	File     string
	// OnResult, when set, is given each result whole, the baseline's
	// then the candidate pipeline's (candidate set); its error stops the
	// replay.
	OnResult func(r replay.Result, candidate bool) error
}

// GatePipeline replays the baseline and the candidate pipeline over the
// same tasks (ReplayPipelines) and judges them with gates
// (PipelineReplays.Judge). The candidate's replay fails with
// replay.ErrLiveCost once its live calls cost more than its cap.
func GatePipeline(ctx context.Context, c PipelineCandidate, gates []GateSpec, opts Options) (*Judgment, error) {
	p, err := ReplayPipelines(ctx, c)
	if err != nil {
		return nil, err
	}
	return p.Judge(ctx, c.Ref(), gates, opts), nil
}

// Ref is what a judgment of c's replays names: its strategies, the
// candidate pipeline, and how its calls could go live.
func (c PipelineCandidate) Ref() PipelineRef {
	return PipelineRef{Baseline: c.Baseline, Strategy: c.Strategy,
		Candidate: report.CandidatePipeline{File: c.File, Overlay: c.Pipeline.Overlay != "", Digest: c.Pipeline.Digest()},
		OnMiss:    c.Cand.OnMiss, MaxLiveCostUSD: c.Cand.MaxLiveCostUSD, Recorded: c.Cand.Record != nil}
}

// ReplayPipelines replays the baseline, then the candidate pipeline, over
// the same tasks.
func ReplayPipelines(ctx context.Context, c PipelineCandidate) (*PipelineReplays, error) {
	p := &PipelineReplays{}
	collect := func(cfg replay.Config, st *strategy.Strategy, candidate bool) error {
		cfg.Strategies = []*strategy.Strategy{st}
		return replay.Run(ctx, cfg, func(r replay.Result) error {
			if c.OnResult != nil {
				if err := c.OnResult(r, candidate); err != nil {
					return err
				}
			}
			p.Add(r, candidate)
			return nil
		})
	}
	if err := collect(c.Base, c.Baseline, false); err != nil {
		return nil, fmt.Errorf("replay the baseline: %w", err)
	}
	cand := c.Cand
	cand.Pipeline = c.Base.Pipeline // the gated pipeline's tasks, whatever the candidate is called
	cand.Candidate = true           // it changed what they were recorded with on purpose
	if err := collect(cand, c.Strategy, true); err != nil {
		return nil, fmt.Errorf("replay the candidate pipeline %s: %w", c.File, err)
	}
	return p, nil
}

// PipelineReplays are the results of a candidate pipeline's gate: the
// baseline's and the candidate pipeline's, each in task order, without
// their outputs but those of the first MaxKeptOutputs tasks, clipped, for
// the flipped tasks of the stored verdict.
type PipelineReplays struct {
	Base, Cand       []replay.Result
	baseOut, candOut map[string]json.RawMessage
}

// Add adds a result of the baseline's replay, or of the candidate
// pipeline's (candidate set), in task order: one replay's, or a merge's
// of its shards.
func (p *PipelineReplays) Add(r replay.Result, candidate bool) {
	list, outputs := &p.Base, &p.baseOut
	if candidate {
		list, outputs = &p.Cand, &p.candOut
	}
	if *outputs == nil {
		*outputs = map[string]json.RawMessage{}
	}
	if b, ok := ClipOutput(r.Output); ok && len(*outputs) < MaxKeptOutputs {
		(*outputs)[r.Task] = b
	}
	r.Output = nil // its digest stays: results of many tasks stay small
	*list = append(*list, r)
}

// PipelineRef is what the judgment of a candidate pipeline names beside
// its results: the strategies (Baseline the gated pipeline's, Strategy
// the candidate's), the candidate pipeline, and how its calls could go
// live: its on_miss and max_live_cost_usd, and whether their answers were
// recorded.
type PipelineRef struct {
	Baseline, Strategy *strategy.Strategy
	Candidate          report.CandidatePipeline
	OnMiss             string
	MaxLiveCostUSD     float64
	Recorded           bool
}

// Judge judges the replays of the candidate pipeline ref names
// (JudgePipelines) with gates, with its identity, the calls it made live
// and the flipped tasks' outputs.
func (p *PipelineReplays) Judge(ctx context.Context, ref PipelineRef, gates []GateSpec, opts Options) *Judgment {
	j := JudgePipelines(ctx, p.Base, p.Cand, ref.Baseline, ref.Strategy, gates, opts)
	cp := ref.Candidate
	j.CandidatePipeline = &cp
	if ref.OnMiss == replay.MissLive {
		j.Live = LiveOf(p.Cand, ref.MaxLiveCostUSD, ref.Recorded)
	}
	for _, t := range slices.Concat(j.Regressed, j.Improved) {
		if j.Outputs == nil {
			j.Outputs = map[string]FlipOutputs{}
		}
		j.Outputs[t] = FlipOutputs{Baseline: p.baseOut[t], Candidate: p.candOut[t]}
	}
	return j
}

// FlipOutputs are a flipped task's outputs (clipped, ClipOutput) under the
// baseline and the candidate.
type FlipOutputs struct {
	Baseline, Candidate json.RawMessage
}

// JudgePipelines judges a candidate pipeline: base are the baseline's
// results, cand the candidate pipeline's on the same tasks. It is Judge
// with the two replays told apart by where they come from, not by their
// strategies' hashes, which are equal when only the pipeline changed:
// fidelity is the baseline's own (the candidate changed what its tasks
// were recorded with, so none of its replays is a self-replay), tasks pair
// by id, and a task either skipped is left out.
func JudgePipelines(ctx context.Context, base, cand []replay.Result, bs, cs *strategy.Strategy, gates []GateSpec, opts Options) *Judgment {
	j := Judge(ctx, base, bs, nil, nil, opts)
	byTask := make(map[string]replay.Result, len(cand))
	for _, r := range cand {
		byTask[r.Task] = r
	}
	var pairs []sdk.TaskOutcome
	facts := map[string]PairFacts{}
	calls := map[string]FlipCalls{}
	sorted := append([]replay.Result(nil), base...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Task < sorted[b].Task })
	for _, b := range sorted {
		c, ok := byTask[b.Task]
		if !ok || b.Skipped || c.Skipped {
			continue
		}
		pairs = append(pairs, sdk.TaskOutcome{Task: b.Task, Baseline: b.Outcome, Candidate: c.Outcome})
		facts[b.Task] = PairFacts{Baseline: runFacts(b), Candidate: runFacts(c)}
		if len(b.ToolCalls) > 0 || len(c.ToolCalls) > 0 {
			calls[b.Task] = FlipCalls{Baseline: b.ToolCalls, Candidate: c.ToolCalls}
		}
	}
	j.Candidate, j.Own = cs, nil
	j.Comparison = Compare(bs, cs, pairs, j.Self.Fidelity(), opts)
	j.Chain = Evaluate(ctx, j.Comparison, gates)
	j.Ruling = combine(j.Chain.Ruling, j.Ruling) // a fidelity below the minimum fails whatever the gates say
	j.Regressed, j.Improved = Flips(j.Comparison.Tasks)
	j.Facts = facts
	for _, tasks := range [][]string{j.Regressed, j.Improved} {
		for _, t := range tasks {
			if fc, ok := calls[t]; ok {
				if j.ToolCalls == nil {
					j.ToolCalls = map[string]FlipCalls{}
				}
				j.ToolCalls[t] = fc
			}
		}
	}
	return j
}

// LiveOf sums up the calls results made live, by step and call, under
// the cap maxUSD (0: none); recorded says their answers were kept.
func LiveOf(results []replay.Result, maxUSD float64, recorded bool) *report.Live {
	l := &report.Live{MaxCostUSD: maxUSD, Recorded: recorded}
	type key struct{ step, call string }
	at := map[key]int{}
	seen := map[key]map[string]bool{}
	for _, r := range results {
		for _, c := range r.Live {
			call := c.Provider + " " + c.Name
			if c.Kind == "tool" {
				call = "tool " + c.Name
			}
			k := key{c.Step, call}
			i, ok := at[k]
			if !ok {
				i = len(l.Steps)
				at[k], seen[k] = i, map[string]bool{}
				l.Steps = append(l.Steps, report.LiveStep{Step: c.Step, Call: call})
			}
			s := &l.Steps[i]
			s.Calls++
			s.CostUSD += c.CostUSD
			if !seen[k][r.Task] {
				seen[k][r.Task] = true
				s.Tasks = append(s.Tasks, r.Task)
			}
			l.Calls++
			l.CostUSD += c.CostUSD
		}
	}
	sort.SliceStable(l.Steps, func(a, b int) bool {
		if sa, sb := l.Steps[a].Step, l.Steps[b].Step; sa != sb {
			return sb == "" || (sa != "" && sa < sb) // steps by name, the scoring ("") last
		}
		return l.Steps[a].Call < l.Steps[b].Call
	})
	return l
}
