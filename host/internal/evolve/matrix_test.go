package evolve

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestJudgmentMatrix judges fixture replay results (a regression with a
// changed output, an improvement, a candidate replay that failed with an
// error, an unchanged task, a task whose outputs differ, and a task the
// candidate skipped) and checks the comparison matrix of its report and
// the facts its stored verdict keeps for the dashboard.
func TestJudgmentMatrix(t *testing.T) {
	base := baseline()
	cand := candidate(base, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), map[string]float64{"user_confirmation": 0.55})
	res := func(task string, hash string, ok bool, reward, cost, ms float64, out map[string]any, err string) replay.Result {
		st := store.StatusCompleted
		if err != "" {
			st = store.StatusFailed
		}
		// As the CLI keeps them: the output's digest, not the output.
		return replay.Result{Task: task, Hash: hash, Status: st, Error: err, OutputDigest: replay.OutputDigest(out), LatencyMS: ms,
			Outcome: sdk.TaskResult{Success: ok, Reward: reward, CostUSD: cost}}
	}
	bh, ch := base.Hash(), cand.Hash()
	archive, reply := map[string]any{"action": "archive"}, map[string]any{"action": "reply"}
	results := []replay.Result{
		res("t1", bh, true, 1, 0.002, 800, archive, ""), res("t1", ch, false, -1, 0.003, 1200, reply, ""),
		res("t2", bh, false, 0, 0.002, 700, reply, ""), res("t2", ch, true, 1, 0.002, 650, reply, ""),
		res("t3", bh, true, 1, 0.001, 500, archive, ""), res("t3", ch, false, 0, 0, 30000, nil, "step reply: timed out"),
		// Results made by hand carry their outputs: digested by the judge.
		{Task: "t4", Hash: bh, Status: store.StatusCompleted, LatencyMS: 400, Output: map[string]any{"b": 1, "a": 2},
			Outcome: sdk.TaskResult{Success: true, Reward: 1, CostUSD: 0.001}},
		{Task: "t4", Hash: ch, Status: store.StatusCompleted, LatencyMS: 400, Output: map[string]any{"a": 2, "b": 1},
			Outcome: sdk.TaskResult{Success: true, Reward: 1, CostUSD: 0.001}},
		{Task: "t6", Hash: bh, Status: store.StatusCompleted, Output: archive, Outcome: sdk.TaskResult{Success: true}},
		{Task: "t6", Hash: ch, Status: store.StatusCompleted, Output: reply, Outcome: sdk.TaskResult{Success: true}},
		res("t5", bh, true, 1, 0.001, 400, archive, ""),
	}
	skipped := res("t5", ch, true, 1, 0.001, 400, archive, "")
	skipped.Skipped = true
	results = append(results, skipped)

	j := Judge(context.Background(), results, base, cand, nil, Options{Seed: 1})
	cell := func(ok bool, score, cost, ms float64, out map[string]any, err string) report.TaskCell {
		return report.TaskCell{Pass: ok, Score: score, CostUSD: cost, LatencyMS: ms, Error: err, Output: replay.OutputDigest(out)}
	}
	ab := map[string]any{"a": 2, "b": 1}
	want := []report.TaskRow{
		{Task: "t1", Baseline: cell(true, 1, 0.002, 800, archive, ""), Candidate: cell(false, -1, 0.003, 1200, reply, ""), OutputDiffers: true},
		{Task: "t2", Baseline: cell(false, 0, 0.002, 700, reply, ""), Candidate: cell(true, 1, 0.002, 650, reply, "")},
		{Task: "t3", Baseline: cell(true, 1, 0.001, 500, archive, ""), Candidate: cell(false, 0, 0, 30000, nil, "step reply: timed out"), OutputDiffers: true},
		{Task: "t4", Baseline: cell(true, 1, 0.001, 400, ab, ""), Candidate: cell(true, 1, 0.001, 400, ab, "")},
		{Task: "t6", Baseline: cell(true, 0, 0, 0, archive, ""), Candidate: cell(true, 0, 0, 0, reply, ""), OutputDiffers: true},
	}
	if got := j.Report("triage").Matrix; !reflect.DeepEqual(got, want) {
		t.Fatalf("matrix:\n got %+v\nwant %+v", got, want)
	}

	v, err := NewVerdict(j, "gate", "triage", "v1", time.Unix(0, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back Verdict
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Tasks) != len(want) {
		t.Fatalf("%d stored tasks, want %d", len(back.Tasks), len(want))
	}
	for i, tv := range back.Tasks {
		w := want[i]
		if tv.OutputDiffers != w.OutputDiffers || tv.CandidateRun.Error != w.Candidate.Error ||
			tv.BaselineRun.LatencyMS != w.Baseline.LatencyMS || tv.CandidateRun.LatencyMS != w.Candidate.LatencyMS {
			t.Errorf("stored task %s: %+v, want the facts of %+v", tv.Task, tv, w)
		}
	}
}
