package evolve

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// The metrics Compare reports, in the order it reports them.
const (
	MetricSuccessRate   = "success_rate"        // share of tasks that succeeded (binary)
	MetricViolationFree = "violation_free_rate" // share of tasks with no constraint violation (binary)
	MetricReward        = "reward"              // mean reward per task
	MetricViolations    = "violations"          // mean constraint violations per task
	MetricConfirmations = "confirmations"       // mean confirmations asked per task
	MetricSteps         = "steps"               // mean steps per task
	MetricTokens        = "tokens"              // mean tokens per task
	MetricCostUSD       = "cost_usd"            // mean cost per task, in USD
	// MetricRewardPrefix names the metrics of named reward dimensions:
	// "reward.safety" is the mean of the tasks' safety rewards (a task
	// without one counts 0, neutral). Compare reports one per dimension
	// any task has, after the others, by name.
	MetricRewardPrefix = "reward."
)

// The metric kinds of sdk.Metric.Kind.
const (
	KindBinary     = "binary"
	KindContinuous = "continuous"
)

type metricDef struct {
	name           string
	binary         bool
	higherIsBetter bool
	value          func(sdk.TaskResult) float64
	decimals       int // shown in reasons
}

var metricDefs = []metricDef{
	{MetricSuccessRate, true, true, func(r sdk.TaskResult) float64 { return indicator(r.Success) }, 3},
	{MetricViolationFree, true, true, func(r sdk.TaskResult) float64 { return indicator(r.Violations == 0) }, 3},
	{MetricReward, false, true, func(r sdk.TaskResult) float64 { return r.Reward }, 3},
	{MetricViolations, false, false, func(r sdk.TaskResult) float64 { return float64(r.Violations) }, 2},
	{MetricConfirmations, false, false, func(r sdk.TaskResult) float64 { return float64(r.Confirmations) }, 2},
	{MetricSteps, false, false, func(r sdk.TaskResult) float64 { return float64(r.Steps) }, 2},
	{MetricTokens, false, false, func(r sdk.TaskResult) float64 { return float64(r.Tokens) }, 2},
	{MetricCostUSD, false, false, func(r sdk.TaskResult) float64 { return r.CostUSD }, 4},
}

// MetricNames returns the names of the metrics Compare reports, in order.
func MetricNames() []string {
	out := make([]string, len(metricDefs))
	for i, d := range metricDefs {
		out[i] = d.name
	}
	return out
}

func lookupMetric(name string) (metricDef, bool) {
	for _, d := range metricDefs {
		if d.name == name {
			return d, true
		}
	}
	if dim, ok := strings.CutPrefix(name, MetricRewardPrefix); ok && dim != "" {
		return dimensionDef(dim), true
	}
	return metricDef{}, false
}

// dimensionDef is the metric of a named reward dimension.
func dimensionDef(dim string) metricDef {
	return metricDef{MetricRewardPrefix + dim, false, true, func(r sdk.TaskResult) float64 { return r.Rewards[dim] }, 3}
}

// withDimensions returns metricDefs and the metric of every named reward
// dimension in tasks, by name.
func withDimensions(tasks []sdk.TaskOutcome) []metricDef {
	seen := map[string]bool{}
	for _, t := range tasks {
		for name := range t.Baseline.Rewards {
			seen[name] = true
		}
		for name := range t.Candidate.Rewards {
			seen[name] = true
		}
	}
	if len(seen) == 0 {
		return metricDefs
	}
	defs := slices.Clip(metricDefs)
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		defs = append(defs, dimensionDef(name))
	}
	return defs
}

// Compare builds the comparison gates judge: both strategies' refs, their
// diff, every metric of MetricNames in that order (then one per named
// reward dimension, MetricRewardPrefix), and the tasks sorted by
// id. fidelity is the share of self-replays that reproduced their trace.
// Config is left empty; Evaluate fills it per gate.
//
// The tasks are sorted by id (stably) before resampling, so the result does
// not depend on the order replay workers finished in. Compare panics if
// opts.Validate fails.
func Compare(baseline, candidate *strategy.Strategy, tasks []sdk.TaskOutcome, fidelity float64, opts Options) *sdk.Comparison {
	opts = opts.withDefaults()
	sorted := sortTasks(tasks)
	return &sdk.Comparison{
		Baseline:  baseline.Ref(),
		Candidate: candidate.Ref(),
		Diff:      strategy.Diff(baseline, candidate).SDK(),
		Metrics:   computeMetrics(sorted, withDimensions(sorted), opts),
		Tasks:     sorted,
		Fidelity:  fidelity,
	}
}

func sortTasks(tasks []sdk.TaskOutcome) []sdk.TaskOutcome {
	out := slices.Clone(tasks)
	slices.SortStableFunc(out, func(a, b sdk.TaskOutcome) int { return cmp.Compare(a.Task, b.Task) })
	return out
}

// computeMetrics compares defs over tasks (already in their final order),
// sharing one set of bootstrap resamples.
func computeMetrics(tasks []sdk.TaskOutcome, defs []metricDef, opts Options) []sdk.Metric {
	n, m := len(tasks), len(defs)
	d := make([]float64, n*m)
	sumBase := make([]float64, m)
	sumCand := make([]float64, m)
	for i, t := range tasks {
		for k, def := range defs {
			b, c := def.value(t.Baseline), def.value(t.Candidate)
			d[i*m+k] = c - b
			sumBase[k] += b
			sumCand[k] += c
		}
	}
	reps := bootstrap(d, n, m, opts)
	out := make([]sdk.Metric, m)
	for k, def := range defs {
		e := summarize(d, n, m, k, sumBase[k], sumCand[k], reps[k], opts.Confidence)
		kind := KindContinuous
		if def.binary {
			kind = KindBinary
			var lost, gained int
			for i := range n {
				switch d[i*m+k] {
				case -1:
					lost++
				case 1:
					gained++
				}
			}
			e.P = McNemar(lost, gained)
		}
		out[k] = sdk.Metric{
			Name: def.name, Kind: kind,
			Baseline: e.Baseline, Candidate: e.Candidate, Effect: e.Effect,
			CILow: e.CILow, CIHigh: e.CIHigh, Confidence: e.Confidence, P: e.P, N: e.N,
			HigherIsBetter: def.higherIsBetter,
		}
	}
	return out
}
