package evolve

import (
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// RunFacts are what the comparison matrix shows of one replay beyond its
// sdk.TaskResult.
type RunFacts struct {
	// Error is why the replay did not complete ("" when it did).
	Error     string  `json:"error,omitempty"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
	// Output is a digest of the replay's output (its JSON with sorted
	// keys), "" without one: equal digests, equal outputs.
	Output string `json:"output,omitempty"`
}

// PairFacts are a task's RunFacts under the baseline and the candidate.
type PairFacts struct {
	Baseline, Candidate RunFacts
}

// OutputDiffers says the two replays ended with different outputs.
func (p PairFacts) OutputDiffers() bool { return p.Baseline.Output != p.Candidate.Output }

// runFacts are the facts of r.
func runFacts(r replay.Result) RunFacts {
	f := RunFacts{Error: r.Error, LatencyMS: r.LatencyMS, Output: r.OutputDigest}
	if f.Output == "" {
		f.Output = replay.OutputDigest(r.Output) // a result made without replay.Run
	}
	return f
}

// pairFacts are the facts of each task's baseline and candidate results,
// by task, as Pair pairs them.
func pairFacts(results []replay.Result, base, cand *strategy.Strategy) map[string]PairFacts {
	bh, ch := base.Hash(), cand.Hash()
	out := map[string]PairFacts{}
	for _, r := range results {
		p := out[r.Task]
		switch r.Hash {
		case bh:
			p.Baseline = runFacts(r)
			if bh == ch {
				p.Candidate = p.Baseline
			}
		case ch:
			p.Candidate = runFacts(r)
		}
		out[r.Task] = p
	}
	return out
}

// matrix is the comparison matrix of the judgment: every compared task
// under both strategies.
func (j *Judgment) matrix() []report.TaskRow {
	if j.Comparison == nil {
		return nil
	}
	rows := make([]report.TaskRow, len(j.Comparison.Tasks))
	for i, t := range j.Comparison.Tasks {
		f := j.Facts[t.Task]
		rows[i] = report.TaskRow{Task: t.Task, OutputDiffers: f.OutputDiffers(),
			Baseline: taskCell(t.Baseline, f.Baseline), Candidate: taskCell(t.Candidate, f.Candidate)}
	}
	return rows
}

func taskCell(r sdk.TaskResult, f RunFacts) report.TaskCell {
	return report.TaskCell{Pass: r.Success, Score: r.Reward, CostUSD: r.CostUSD, LatencyMS: f.LatencyMS, Error: f.Error, Output: f.Output}
}
