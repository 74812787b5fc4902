package evolve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
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

// TestGatePipelineFlippedOutputs: a candidate pipeline whose classify
// prompt and rules changed (the rules under on_miss = live, which a
// baseline's replay would refuse as changed since recorded) is replayed
// as a candidate: its changed calls go live to the new rules, no result is
// a self-replay, and the task it regressed keeps both outputs for the
// stored verdict, though both sides share one strategy hash.
func TestGatePipelineFlippedOutputs(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(entries)
	example := "../../../pipelines/email-triage"
	dir := t.TempDir()
	for _, f := range []string{"pipeline.toml", "email-triage.bpmn", "responses.toml", "strategies/email-handler.toml"} {
		b, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.Replace(string(b), `dataset = "dataset.jsonl"`, "", 1)) // the store's tasks are replayed
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := os.ReadFile(filepath.Join(dir, "responses.toml"))
	if err != nil {
		t.Fatal(err)
	}
	deleting := strings.Replace(string(rules), `reply = '{"action": "archive", "confidence": 0.93}'`, `reply = '{"action": "delete", "confidence": 0.93}'`, 1)
	overlay := "overlay = \"pipeline.toml\"\n[providers.default]\nrules = \"deleting.toml\"\n[steps.classify]\nsystem = \"You triage e-mail. Follow the playbook.\"\n"
	for name, text := range map[string]string{"deleting.toml": deleting, "cand.toml": overlay} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	loaded := map[string]*run.Loaded{}
	for _, name := range []string{"pipeline.toml", "cand.toml"} {
		l, err := run.Load(ctx, filepath.Join(dir, name), reg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		loaded[name] = l
	}
	prep, err := loaded["pipeline.toml"].Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := prep.Runner(run.Config{Store: src, Logger: quiet})
	for id, in := range map[string]string{"news": "Top stories this week. Unsubscribe at any time.", "sync": "Are you free on Thursday?"} {
		truth := map[string]string{"news": `{"action": "archive"}`, "sync": `{"action": "reply"}`}[id]
		if res, err := r.Start(ctx, run.Input{ID: id, Input: map[string]any{"from": "a@example.com", "subject": id, "body": in},
			Truth: json.RawMessage(truth)}); err != nil || res.Status != store.StatusCompleted {
			t.Fatalf("record %s: %v %+v", id, err, res)
		}
	}
	prep.Close(ctx)

	config := func(l *run.Loaded, onMiss string) replay.Config {
		return replay.Setup{Loaded: l, Plugins: reg, Settings: replay.Settings{Workers: 1, OnMiss: onMiss}, Logger: quiet}.Config(src)
	}
	st := loaded["pipeline.toml"].Strategy
	var results []replay.Result
	c := PipelineCandidate{Base: config(loaded["pipeline.toml"], replay.MissFail), Cand: config(loaded["cand.toml"], replay.MissLive),
		Baseline: st, Strategy: st, Pipeline: loaded["cand.toml"].Pipeline, File: "cand.toml",
		OnResult: func(r replay.Result, _ bool) error { results = append(results, r); return nil }}
	j, err := GatePipeline(ctx, c, nil, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 || !results[0].SelfReplay || !results[0].Reproduced || results[2].SelfReplay || results[3].SelfReplay || len(results[2].Live) != 1 {
		t.Fatalf("results %+v", results)
	}
	if !reflect.DeepEqual(j.Regressed, []string{"news"}) || j.Live == nil || j.Live.Calls != 2 {
		t.Fatalf("regressed %v improved %v live %+v", j.Regressed, j.Improved, j.Live)
	}
	fo := j.Outputs["news"]
	if !strings.Contains(string(fo.Baseline), `"archive"`) || !strings.Contains(string(fo.Candidate), `"delete"`) || len(j.Outputs) != 1 {
		t.Fatalf("outputs %v", j.Outputs)
	}
	v, err := NewVerdict(j, "gate", "email-triage", "01A", t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tv := range v.Tasks {
		if got := tv.Flip != "" && tv.BaselineOutput != nil && tv.CandidateOutput != nil; got != (tv.Task == "news") {
			t.Errorf("task %s (flip %q): outputs %s / %s", tv.Task, tv.Flip, tv.BaselineOutput, tv.CandidateOutput)
		}
	}
}
