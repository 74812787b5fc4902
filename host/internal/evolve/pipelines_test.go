package evolve

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestJudgePipelinesSameStrategy: a candidate pipeline under the
// baseline's own strategy is compared with the baseline task by task (not
// with itself, as Judge would pair equal hashes): its regressions count,
// fidelity is the baseline's self-replays', and a task skipped by either
// side is left out.
func TestJudgePipelinesSameStrategy(t *testing.T) {
	st := baseline()
	var base, cand []replay.Result
	for i := range 6 {
		id := fmt.Sprintf("t%d", i)
		base = append(base, replay.Result{Task: id, Hash: st.Hash(), SelfReplay: true, Reproduced: true, OutputDigest: "a",
			Outcome: sdk.TaskResult{Success: true}})
		c := replay.Result{Task: id, Hash: st.Hash(), OutputDigest: "a", Outcome: sdk.TaskResult{Success: i != 2}, Skipped: i == 5}
		if i == 2 {
			c.OutputDigest, c.ToolCalls = "b", []run.ToolCall{{Source: "files", Tool: "read", Decision: "allowed"}}
		}
		cand = append(cand, c)
	}
	noReg := GateSpec{Name: "no-regression", Gate: mustBuiltin(t, GateNoRegression), Config: map[string]any{"metric": MetricSuccessRate, "confidence": 0.95, "tolerance": 0.0}}
	j := JudgePipelines(context.Background(), base, cand, st, st, []GateSpec{noReg}, Options{Seed: 1})
	if len(j.Comparison.Tasks) != 5 || !reflect.DeepEqual(j.Regressed, []string{"t2"}) || len(j.Improved) != 0 {
		t.Fatalf("pairs %d regressed %v improved %v", len(j.Comparison.Tasks), j.Regressed, j.Improved)
	}
	if j.Self.Counted != 6 || j.Self.Fidelity() != 1 || j.Own != nil || j.Candidate != st {
		t.Fatalf("self %+v own %v", j.Self, j.Own)
	}
	if !j.Facts["t2"].OutputDiffers() || j.Facts["t1"].OutputDiffers() || len(j.ToolCalls["t2"].Candidate) != 1 {
		t.Fatalf("facts %+v calls %+v", j.Facts, j.ToolCalls)
	}
	if j.Ruling != j.Chain.Ruling {
		t.Fatalf("ruling %s, chain %s", j.Ruling, j.Chain.Ruling)
	}
	// A diverged baseline fails the verdict whatever the gates say.
	base[0].Reproduced, base[0].Divergence = false, &replay.Divergence{Node: "n", Expected: "x", Got: "y"}
	if j := JudgePipelines(context.Background(), base, cand, st, st, nil, Options{}); j.Ruling != sdk.Fail {
		t.Fatalf("a diverged baseline: ruling %s", j.Ruling)
	}
}

// TestLiveOf: live calls are grouped by step and call, steps by name and
// the scoring's last, each with its tasks once.
func TestLiveOf(t *testing.T) {
	results := []replay.Result{
		{Task: "t1", Live: []replay.LiveCall{{Step: "reply", Kind: "chat", Provider: "default", Name: "big", CostUSD: 0.5},
			{Step: "classify", Kind: "chat", Provider: "default", Name: "big", CostUSD: 0.25},
			{Step: "classify", Kind: "chat", Provider: "default", Name: "big", CostUSD: 0.25}}},
		{Task: "t2", Live: []replay.LiveCall{{Kind: "chat", Provider: "judge", Name: "mini", CostUSD: 0.125},
			{Step: "classify", Kind: "tool", Name: "files.read"}}},
		{Task: "t3"},
	}
	got := LiveOf(results, 2, true)
	want := &report.Live{Calls: 5, CostUSD: 1.125, MaxCostUSD: 2, Recorded: true, Steps: []report.LiveStep{
		{Step: "classify", Call: "default big", Calls: 2, CostUSD: 0.5, Tasks: []string{"t1"}},
		{Step: "classify", Call: "tool files.read", Calls: 1, Tasks: []string{"t2"}},
		{Step: "reply", Call: "default big", Calls: 1, CostUSD: 0.5, Tasks: []string{"t1"}},
		{Step: "", Call: "judge mini", Calls: 1, CostUSD: 0.125, Tasks: []string{"t2"}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}
