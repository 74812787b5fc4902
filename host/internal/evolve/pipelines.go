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
	// without strategies, over the same source and sample. Cand's OnMiss
	// and MaxLiveCostUSD are the candidate's: its changed calls miss their
	// recordings and, under "live", are made, kept in Cand.Record.
	Base, Cand replay.Config
	// Baseline is the gated pipeline's strategy, Strategy the candidate
	// pipeline's (the same one unless the candidate names another).
	Baseline, Strategy *strategy.Strategy
	// Pipeline is the candidate pipeline, File the file it was given as.
	Pipeline *pipeline.Pipeline
	File     string
	// OnResult, when set, is told of each result, baseline's then the
	// candidate's (progress).
	OnResult func(replay.Result)
}

// GatePipeline replays the baseline and the candidate pipeline over the
// same tasks and judges them (JudgePipelines) with gates. The candidate's
// replay fails with replay.ErrLiveCost once its live calls cost more than
// its cap.
func GatePipeline(ctx context.Context, c PipelineCandidate, gates []GateSpec, opts Options) (*Judgment, error) {
	collect := func(cfg replay.Config, st *strategy.Strategy, outputs map[string]json.RawMessage) ([]replay.Result, error) {
		cfg.Strategies = []*strategy.Strategy{st}
		var out []replay.Result
		err := replay.Run(ctx, cfg, func(r replay.Result) error {
			if c.OnResult != nil {
				c.OnResult(r)
			}
			if b, ok := ClipOutput(r.Output); ok && len(outputs) < MaxKeptOutputs {
				outputs[r.Task] = b // for the flipped tasks of the stored verdict
			}
			r.Output = nil // its digest stays: results of many tasks stay small
			out = append(out, r)
			return nil
		})
		return out, err
	}
	baseOut, candOut := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	base, err := collect(c.Base, c.Baseline, baseOut)
	if err != nil {
		return nil, fmt.Errorf("replay the baseline: %w", err)
	}
	cand := c.Cand
	cand.Pipeline = c.Base.Pipeline // the gated pipeline's tasks, whatever the candidate is called
	cand.Candidate = true           // it changed what they were recorded with on purpose
	results, err := collect(cand, c.Strategy, candOut)
	if err != nil {
		return nil, fmt.Errorf("replay the candidate pipeline %s: %w", c.File, err)
	}
	j := JudgePipelines(ctx, base, results, c.Baseline, c.Strategy, gates, opts)
	j.CandidatePipeline = &report.CandidatePipeline{File: c.File, Overlay: c.Pipeline.Overlay != "", Digest: c.Pipeline.Digest()}
	if cand.OnMiss == replay.MissLive {
		j.Live = LiveOf(results, cand.MaxLiveCostUSD, cand.Record != nil)
	}
	for _, t := range slices.Concat(j.Regressed, j.Improved) {
		if j.Outputs == nil {
			j.Outputs = map[string]FlipOutputs{}
		}
		j.Outputs[t] = FlipOutputs{Baseline: baseOut[t], Candidate: candOut[t]}
	}
	return j, nil
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
