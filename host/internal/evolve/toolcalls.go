package evolve

import (
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
)

// FlipCalls are a flipped task's tool calls under the baseline and the
// candidate, in the order each replay made them: beside each other they
// say what the candidate's strategy changed (a call blocked, declined,
// made with other arguments, or not made).
type FlipCalls struct {
	Baseline  []run.ToolCall `json:"baseline,omitempty"`
	Candidate []run.ToolCall `json:"candidate,omitempty"`
}

// SetToolCalls keeps the flipped tasks' tool calls, which calls gives by
// task and strategy content hash (nil when it kept none); a task that made
// none under either strategy is left out. Judge sets them from the replay
// results; a caller that dropped them from the results to keep them small
// sets them again from where it kept them.
func (j *Judgment) SetToolCalls(calls func(task, hash string) []run.ToolCall) {
	if j.Comparison == nil || j.Candidate == nil {
		return
	}
	bh, ch := j.Comparison.Baseline.Hash, j.Comparison.Candidate.Hash
	for _, tasks := range [][]string{j.Regressed, j.Improved} {
		for _, t := range tasks {
			fc := FlipCalls{Baseline: calls(t, bh), Candidate: calls(t, ch)}
			if len(fc.Baseline) == 0 && len(fc.Candidate) == 0 {
				continue
			}
			if j.ToolCalls == nil {
				j.ToolCalls = map[string]FlipCalls{}
			}
			j.ToolCalls[t] = fc
		}
	}
}

// toolCallsOf looks the tool calls of results up by task and strategy
// hash.
func toolCallsOf(results []replay.Result) func(task, hash string) []run.ToolCall {
	by := map[[2]string][]run.ToolCall{}
	for _, r := range results {
		if len(r.ToolCalls) > 0 {
			by[[2]string{r.Task, r.Hash}] = r.ToolCalls
		}
	}
	return func(task, hash string) []run.ToolCall { return by[[2]string{task, hash}] }
}

// reportCalls is calls as a report shows them.
func reportCalls(calls []run.ToolCall) []report.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]report.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = report.ToolCall(c)
	}
	return out
}
