package evolve

import (
	"context"
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestJudgeToolCalls: the flipped tasks' tool calls go from the replay
// results to the judgment, the report's flips and the stored verdict, and
// a task that did not flip, or made no call, carries none. A caller that
// dropped them from the results sets them again with SetToolCalls.
func TestJudgeToolCalls(t *testing.T) {
	ctx := context.Background()
	base := baseline()
	cand := candidate(base, t0, map[string]float64{"user_confirmation": 0.55})
	get := run.ToolCall{Source: "shop", Tool: "get", Arguments: `{"id":"A1"}`, Decision: "recorded", Result: `{"status":"lost"}`}
	refund := run.ToolCall{Source: "shop", Tool: "submit", Arguments: `{"id":"A1","kind":"refund"}`, Decision: "recorded", Result: "filed refund request REQ-1"}
	blocked := refund
	blocked.Decision, blocked.Result, blocked.Error = "blocked", "", "error: blocked by policy: never_execute"
	res := func(task string, s bool, hash string, calls ...run.ToolCall) replay.Result {
		return replay.Result{Task: task, Hash: hash, Outcome: sdk.TaskResult{Success: s, Confidence: 1}, ToolCalls: calls}
	}
	results := []replay.Result{
		res("lost", true, base.Hash(), get, refund), res("lost", false, cand.Hash(), get, blocked), // regressed
		res("same", true, base.Hash(), get), res("same", true, cand.Hash(), get), // no flip
		res("plain", false, base.Hash()), res("plain", true, cand.Hash()), // improved, no calls
	}
	j := Judge(ctx, results, base, cand, nil, Options{Seed: 1})
	want := map[string]FlipCalls{"lost": {Baseline: []run.ToolCall{get, refund}, Candidate: []run.ToolCall{get, blocked}}}
	if !reflect.DeepEqual(j.ToolCalls, want) {
		t.Fatalf("judgment's tool calls %+v", j.ToolCalls)
	}

	r := j.Report("support-agent")
	byTask := map[string]report.Flip{}
	for _, f := range r.Flipped {
		byTask[f.Task] = f
	}
	if f := byTask["lost"]; len(f.Baseline) != 2 || len(f.Candidate) != 2 || f.Candidate[1].Decision != "blocked" ||
		f.Candidate[1].Error != blocked.Error || f.Baseline[1].Result != refund.Result || f.Baseline[1].Arguments != refund.Arguments {
		t.Fatalf("report flip of lost: %+v", f)
	}
	if f := byTask["plain"]; f.Baseline != nil || f.Candidate != nil {
		t.Fatalf("report flip of plain: %+v", f)
	}

	v, err := NewVerdict(j, "gate", "support-agent", "01A", t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	if err := SaveVerdict(ctx, st, v); err != nil {
		t.Fatal(err)
	}
	got, err := GetVerdict(ctx, st, "01A")
	if err != nil {
		t.Fatal(err)
	}
	for _, tv := range got.Tasks {
		switch tv.Task {
		case "lost":
			if !reflect.DeepEqual(tv.BaselineToolCalls, want["lost"].Baseline) || !reflect.DeepEqual(tv.CandidateToolCalls, want["lost"].Candidate) {
				t.Fatalf("stored verdict of lost: %+v", tv)
			}
		default:
			if tv.BaselineToolCalls != nil || tv.CandidateToolCalls != nil {
				t.Fatalf("stored verdict of %s has tool calls: %+v", tv.Task, tv)
			}
		}
	}

	// Results without their calls (the CLI keeps them apart), set again.
	kept := map[[2]string][]run.ToolCall{}
	for i := range results {
		kept[[2]string{results[i].Task, results[i].Hash}] = results[i].ToolCalls
		results[i].ToolCalls = nil
	}
	j = Judge(ctx, results, base, cand, nil, Options{Seed: 1})
	if j.ToolCalls != nil {
		t.Fatalf("tool calls from results without any: %+v", j.ToolCalls)
	}
	j.SetToolCalls(func(task, hash string) []run.ToolCall { return kept[[2]string{task, hash}] })
	if !reflect.DeepEqual(j.ToolCalls, want) {
		t.Fatalf("tool calls set again: %+v", j.ToolCalls)
	}
}
