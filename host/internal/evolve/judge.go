package evolve

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// SelfReplays sums up the self-replays among replay results: the results of
// tasks replayed under the strategy they were recorded with.
//
// # Notes
//
//   - A self-replay skipped by on_miss = "skip" is counted in Skipped and
//     left out of the fidelity, as it is left out of the comparison: it was
//     not replayed to the end, so it neither reproduced nor diverged.
//   - Fidelity is 0 when no self-replay counts, so a min-fidelity gate
//     fails closed.
type SelfReplays struct {
	// Counted is the number of self-replays that count; Reproduced how many
	// of them reproduced their recorded trace.
	Counted, Reproduced int
	// Skipped is the number of self-replays skipped by on_miss = "skip".
	Skipped int
	// Divergences are the counted self-replays that did not reproduce,
	// in task order.
	Divergences []report.Divergence
}

// Fidelity is Reproduced / Counted, or 0 without a counted self-replay.
func (s SelfReplays) Fidelity() float64 {
	if s.Counted == 0 {
		return 0
	}
	return float64(s.Reproduced) / float64(s.Counted)
}

// CountSelfReplays sums up the self-replays among results.
func CountSelfReplays(results []replay.Result) SelfReplays {
	var s SelfReplays
	for _, r := range results {
		switch {
		case !r.SelfReplay:
		case r.Skipped:
			s.Skipped++
		default:
			s.Counted++
			if r.Reproduced {
				s.Reproduced++
			} else if r.Divergence != nil {
				s.Divergences = append(s.Divergences, report.Divergence{Task: r.Task, Node: r.Divergence.Node,
					Expected: r.Divergence.Expected, Got: r.Divergence.Got})
			} else {
				got := r.Error
				if got == "" {
					got = string(r.Status)
				}
				s.Divergences = append(s.Divergences, report.Divergence{Task: r.Task, Expected: "a completed run", Got: got})
			}
		}
	}
	sort.SliceStable(s.Divergences, func(i, j int) bool { return s.Divergences[i].Task < s.Divergences[j].Task })
	return s
}

// Pair pairs each task's baseline and candidate results, in task order,
// leaving out tasks that either strategy skipped or did not replay.
func Pair(results []replay.Result, base, cand *strategy.Strategy) []sdk.TaskOutcome {
	bh, ch := base.Hash(), cand.Hash()
	type pair struct {
		b, c     replay.Result
		okb, okc bool
	}
	byTask := map[string]*pair{}
	for _, r := range results {
		p := byTask[r.Task]
		if p == nil {
			p = &pair{}
			byTask[r.Task] = p
		}
		switch r.Hash {
		case bh:
			p.b, p.okb = r, true
		case ch:
			p.c, p.okc = r, true
		}
	}
	ids := make([]string, 0, len(byTask))
	for id, p := range byTask {
		ids = append(ids, id)
		if bh == ch { // the candidate is the baseline: each result pairs with itself
			p.c, p.okc = p.b, p.okb
		}
	}
	sort.Strings(ids)
	var out []sdk.TaskOutcome
	for _, id := range ids {
		p := byTask[id]
		if !p.okb || !p.okc || p.b.Skipped || p.c.Skipped {
			continue
		}
		out = append(out, sdk.TaskOutcome{Task: id, Baseline: p.b.Outcome, Candidate: p.c.Outcome})
	}
	return out
}

// Judgment is the verdict on replay results: the self-replays' fidelity,
// and with a candidate the paired comparison and the gate chain's result.
type Judgment struct {
	Baseline, Candidate *strategy.Strategy
	// Tasks is the number of distinct tasks replayed.
	Tasks int
	Self  SelfReplays
	// Comparison and Chain are nil and empty without a candidate.
	Comparison *sdk.Comparison
	Chain      Result
	// Ruling is the verdict: the chain's ruling, made fail when a counted
	// self-replay diverged (a broken determinism is a regression whatever
	// the gates say).
	Ruling sdk.Ruling
	// Regressed and Improved are the tasks whose success flipped.
	Regressed, Improved []string
	// ToolCalls are the flipped tasks' tool calls, by task (see
	// SetToolCalls); nil when no flipped task made one.
	ToolCalls map[string]FlipCalls
	// Facts are each compared task's error, latency and output digest
	// under both strategies, by task: the comparison matrix's cells beyond
	// the sdk.TaskResult.
	Facts map[string]PairFacts
	// Own are the baseline's own metrics when there is no candidate (a
	// self-replay).
	Own []sdk.Metric
	// MinFidelity is the least fidelity the verdict accepts.
	MinFidelity float64
	// Reasons say why the verdict is what it is beyond the gates: a
	// fidelity below MinFidelity with the first divergences, or why no
	// self-replay could measure it.
	Reasons []string
	// CandidatePipeline and Live are set when the candidate is a
	// pipeline (GatePipeline): its identity, and the calls its replay
	// made live.
	CandidatePipeline *report.CandidatePipeline
	Live              *report.Live
	// Outputs are the flipped tasks' outputs by task, set when the two
	// replays cannot be told apart by strategy hash (GatePipeline: a model
	// swap keeps it); NewVerdict takes them before its output function.
	Outputs map[string]FlipOutputs
}

// ExitCode is the process exit code of the verdict (DESIGN §7).
func (j *Judgment) ExitCode() int { return ExitCode(j.Ruling) }

// Judge is the one judge of sextant: gate, replay, merge and evolve all
// reach their verdicts through it. results are the replays of base (and of
// cand, when not nil) on the same tasks; gates is the chain to run on the
// comparison (not run without a candidate).
func Judge(ctx context.Context, results []replay.Result, base, cand *strategy.Strategy, gates []GateSpec, opts Options) *Judgment {
	j := &Judgment{Baseline: base, Candidate: cand, Self: CountSelfReplays(results), Ruling: sdk.Pass}
	tasks := map[string]struct{}{}
	for _, r := range results {
		tasks[r.Task] = struct{}{}
	}
	j.Tasks = len(tasks)
	if cand != nil {
		j.Comparison = Compare(base, cand, Pair(results, base, cand), j.Self.Fidelity(), opts)
		j.Chain = Evaluate(ctx, j.Comparison, gates)
		j.Ruling = j.Chain.Ruling
		j.Regressed, j.Improved = Flips(j.Comparison.Tasks)
		j.SetToolCalls(toolCallsOf(results))
		j.Facts = pairFacts(results, base, cand)
	} else if base != nil {
		if own := Pair(results, base, base); len(own) > 0 {
			j.Own = Compare(base, base, own, j.Self.Fidelity(), opts).Metrics
		}
	}
	j.MinFidelity = opts.minFidelity()
	switch {
	case j.Self.Counted > 0 && j.Self.Fidelity() < j.MinFidelity:
		// A broken determinism is a regression whatever the gates say.
		j.Ruling = combine(j.Ruling, sdk.Fail)
		j.Reasons = fidelityReasons(j.Self, fmt.Sprintf("is below min_fidelity %s", percent(j.MinFidelity)))
	case j.Self.Counted > 0 && len(j.Self.Divergences) > 0:
		j.Reasons = fidelityReasons(j.Self, fmt.Sprintf("meets min_fidelity %s", percent(j.MinFidelity)))
	case j.Self.Counted == 0 && base != nil && j.Tasks > 0:
		what := "fidelity not measured"
		if cand != nil {
			what += " (a min-fidelity gate fails closed)"
		}
		why := fmt.Sprintf("none of the %d tasks was recorded under %s %s (hash %s…)", j.Tasks, base.Metadata.Name, base.Metadata.Version, shortHash(base.Hash()))
		if j.Self.Skipped > 0 {
			why = fmt.Sprintf("all %d were skipped by on_miss = skip (a call had no recording)", j.Self.Skipped)
		}
		j.Reasons = []string{fmt.Sprintf("no self-replay counted: %s, so %s", why, what)}
	}
	return j
}

// maxReasonDivergences is how many tasks' first divergences a fidelity
// reason names.
const maxReasonDivergences = 3

// fidelityReasons are a fidelity's summary (verdict says how it compares
// with the minimum) and the first divergences of the first unfaithful
// tasks, in the manner of Temporal's non-determinism error.
func fidelityReasons(s SelfReplays, verdict string) []string {
	bad := s.Counted - s.Reproduced
	out := []string{fmt.Sprintf("fidelity %s %s: %d of %d self-replays left their recorded trace",
		percent(s.Fidelity()), verdict, bad, s.Counted)}
	for i, d := range s.Divergences {
		if i == maxReasonDivergences {
			out = append(out, fmt.Sprintf("… and %d more", len(s.Divergences)-i))
			break
		}
		at := ""
		if d.Node != "" {
			at = " at step " + d.Node
		}
		out = append(out, fmt.Sprintf("task %s%s: expected %s, got %s", d.Task, at, oneLine(d.Expected), oneLine(d.Got)))
	}
	return out
}

// percent writes a share as a percentage with one decimal, or more when
// one would round a share below 1 up to 100%.
func percent(f float64) string {
	s := strconv.FormatFloat(100*f, 'f', 1, 64)
	if f < 1 && s == "100.0" {
		s = strconv.FormatFloat(100*f, 'f', -1, 64)
	}
	return s + "%"
}

// Report renders the judgment as a report of pipeline.
func (j *Judgment) Report(pipeline string) *report.Report {
	r := &report.Report{Pipeline: pipeline, Baseline: strategyRef(j.Baseline), Tasks: j.Tasks,
		Fidelity: j.Self.Fidelity(), Skipped: j.Self.Skipped, Divergences: j.Self.Divergences,
		SelfReplays: j.Self.Counted, MinFidelity: j.MinFidelity, Reasons: j.Reasons,
		Ruling: j.Ruling, ExitCode: j.ExitCode()}
	if j.Candidate == nil {
		r.Own = j.Own
		return r
	}
	r.Candidate = strategyRef(j.Candidate)
	r.CandidatePipeline, r.Live = j.CandidatePipeline, j.Live
	r.Metrics = j.Comparison.Metrics
	for _, g := range j.Chain.Gates {
		r.Gates = append(r.Gates, report.GateResult{Name: g.Name, Ruling: g.Ruling, Reasons: g.Reasons, Metrics: g.Metrics})
	}
	r.Regressed = j.Regressed
	r.Matrix = j.matrix()
	for _, t := range j.Regressed {
		fc := j.ToolCalls[t]
		r.Flipped = append(r.Flipped, report.Flip{Task: t, Metric: MetricSuccessRate, From: "pass", To: "fail",
			Baseline: reportCalls(fc.Baseline), Candidate: reportCalls(fc.Candidate)})
	}
	for _, t := range j.Improved {
		fc := j.ToolCalls[t]
		r.Flipped = append(r.Flipped, report.Flip{Task: t, Metric: MetricSuccessRate, From: "fail", To: "pass",
			Baseline: reportCalls(fc.Baseline), Candidate: reportCalls(fc.Candidate)})
	}
	return r
}

func strategyRef(s *strategy.Strategy) report.Strategy {
	if s == nil {
		return report.Strategy{}
	}
	return report.Strategy{Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash()}
}

// GateChain builds a pipeline's gate chain: built-in gates, and gate
// plugins opened through reg with the pipeline's grants. The returned func
// closes the plugins.
func GateChain(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, opts Options) ([]GateSpec, func(), error) {
	var gates []GateSpec
	var handles []*plugin.Handle
	closeAll := func() {
		for _, h := range handles {
			h.Close(context.WithoutCancel(ctx))
		}
	}
	for _, g := range p.Gates {
		var gate sdk.Gate
		if _, builtin := pipeline.BuiltinGates[g.Use]; builtin {
			var err error
			if gate, err = Builtin(g.Use, opts); err != nil {
				closeAll()
				return nil, nil, err
			}
		} else {
			h, err := reg.Open(ctx, g.Use, grant(p, g.Use))
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			handles = append(handles, h)
			var ok bool
			if gate, ok = h.Plugin.(sdk.Gate); !ok {
				closeAll()
				return nil, nil, &sdk.Error{Code: sdk.CodeInvalid, Message: fmt.Sprintf("plugin %q is not a gate", g.Use)}
			}
		}
		gates = append(gates, GateSpec{Name: g.Use, Gate: gate, Config: g.Config})
	}
	return gates, closeAll, nil
}

func grant(p *pipeline.Pipeline, name string) plugin.Grant {
	g, ok := p.Plugins[name]
	if !ok {
		return plugin.Grant{}
	}
	mem, _ := plugin.ParseSize(g.Memory)
	return plugin.Grant{AllowHTTP: g.AllowHTTP, Timeout: g.Timeout.Std(), Memory: mem, Pool: g.Pool}
}
