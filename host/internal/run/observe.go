package run

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// StepEvent is one finished (or paused) step, as Config.OnStep sees it.
type StepEvent struct {
	Task string
	Node string
	Kind string // llm, expr, action, human, or "none" for a node without a step
	// Duration is the step's time on the run's clock.
	Duration time.Duration
	Tokens   int
	CostUSD  float64
	// Status is ok, failed or waiting.
	Status string
	// Result is the step's outcome in one line: its output (an LLM's reply,
	// an action's decision), its error, or the question it waits on.
	Result string
}

// Step statuses of StepEvent.
const (
	StepOK      = "ok"
	StepFailed  = "failed"
	StepWaiting = "waiting"
)

// observeStep logs the step at debug level and passes it to Config.OnStep.
func (e *exec) observeStep(ctx context.Context, node, kind string, start time.Time, res *stepResult, wait string) {
	log := e.r.cfg.Logger
	debug := log.Enabled(ctx, slog.LevelDebug)
	if e.r.cfg.OnStep == nil && !debug {
		return
	}
	ev := StepEvent{Task: e.task.ID, Node: node, Kind: kind, Duration: e.r.cfg.Clock().Sub(start), Status: StepOK}
	switch {
	case wait != "":
		ev.Status, ev.Result = StepWaiting, wait
	case res != nil:
		ev.Tokens, ev.CostUSD = res.Tokens, res.CostUSD
		if res.Err != "" {
			ev.Status, ev.Result = StepFailed, res.Err
		} else {
			ev.Result = outputLine(res.Outcome)
		}
	}
	if debug {
		log.Debug("step", "task", ev.Task, "node", ev.Node, "kind", ev.Kind, "status", ev.Status,
			"duration", ev.Duration, "tokens", ev.Tokens, "cost_usd", ev.CostUSD, "result", ev.Result)
	}
	if e.r.cfg.OnStep != nil {
		e.r.cfg.OnStep(ev)
	}
}

// outputLine renders a step's output compactly on one line.
func outputLine(o sdk.Outcome) string {
	if len(o.Output) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o.Output)) {
		v := o.Output[k]
		var s string
		switch v := v.(type) {
		case string:
			s = v
		default:
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			s = string(b)
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// logCall logs one provider call at debug level: who answered, the model,
// tokens, latency and whether a recording answered it.
func (e *exec) logCall(ctx context.Context, provider, model string, usage sdk.Usage, latency time.Duration, recorded bool, hash string) {
	log := e.r.cfg.Logger
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	log.Debug("provider call", "task", e.task.ID, "provider", provider, "model", model,
		"input_tokens", usage.InputTokens, "output_tokens", usage.OutputTokens, "latency", latency,
		"recording_hit", recorded, "request", short(hash))
}
