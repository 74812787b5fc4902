package evolve

import (
	"context"
	"encoding/json"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// MaxKeptOutputs bounds the replay outputs (and tool calls) a Kept keeps
// for a stored verdict.
const MaxKeptOutputs = 20000

// Kept is what a replay keeps of its results to judge them: each result
// without its output, tags and tool calls, so that 100 000 tasks fit in a
// bounded heap; and, when a candidate is compared, the outputs (clipped)
// and tool calls the stored verdict and the reports show for flipped
// tasks, up to MaxKeptOutputs.
type Kept struct {
	// Results are the results kept, unless Discard is set.
	Results []replay.Result
	// Discard keeps no result (a shard, which writes them instead).
	Discard bool
	// Tasks counts the distinct tasks seen.
	Tasks   int
	seen    map[string]struct{}
	outputs map[string]json.RawMessage // task \x00 strategy hash → output
	calls   map[string][]run.ToolCall  // task \x00 strategy hash → tool calls
}

// Add keeps r; compared says whether a candidate is replayed too.
func (k *Kept) Add(r replay.Result, compared bool) {
	if k.seen == nil {
		k.seen, k.outputs, k.calls = map[string]struct{}{}, map[string]json.RawMessage{}, map[string][]run.ToolCall{}
	}
	if _, ok := k.seen[r.Task]; !ok {
		k.seen[r.Task] = struct{}{}
		k.Tasks++
	}
	key := r.Task + "\x00" + r.Hash
	if compared && len(k.outputs) < MaxKeptOutputs {
		if b, ok := ClipOutput(r.Output); ok {
			k.outputs[key] = b
		}
	}
	if compared && len(r.ToolCalls) > 0 && len(k.calls) < MaxKeptOutputs {
		k.calls[key] = r.ToolCalls
	}
	r.Output, r.Tags, r.ToolCalls = nil, nil, nil
	if !k.Discard {
		k.Results = append(k.Results, r)
	}
}

// Output is the output kept of task under the strategy of hash.
func (k *Kept) Output(task, hash string) (json.RawMessage, bool) {
	b, ok := k.outputs[task+"\x00"+hash]
	return b, ok
}

// ToolCalls are the tool calls kept of task under the strategy of hash.
func (k *Kept) ToolCalls(task, hash string) []run.ToolCall {
	return k.calls[task+"\x00"+hash]
}

// JudgeReplay judges the results of a replay of p as sextant replay, gate
// and merge do: fidelity always; with a candidate (strategies[1]) also the
// comparison and p's gate chain. kept, when not nil, gives the flipped
// tasks' tool calls. It returns the judgment and its report.
func JudgeReplay(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, strategies []*strategy.Strategy,
	results []replay.Result, seed int64, kept *Kept) (*Judgment, *report.Report, error) {
	opts := Options{Seed: uint64(seed), MinFidelity: p.Replay.MinFidelity}
	var cand *strategy.Strategy
	var gates []GateSpec
	if len(strategies) > 1 {
		cand = strategies[1]
		var closeGates func()
		var err error
		if gates, closeGates, err = GateChain(ctx, reg, p, opts); err != nil {
			return nil, nil, err
		}
		defer closeGates()
	}
	j := Judge(ctx, results, strategies[0], cand, gates, opts)
	if kept != nil && kept.calls != nil {
		j.SetToolCalls(kept.ToolCalls)
	}
	r := j.Report(p.Name)
	if cand == nil {
		for _, g := range p.Gates {
			r.GatesNotRun = append(r.GatesNotRun, g.Use)
		}
	}
	return j, r, nil
}
