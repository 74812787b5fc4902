package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/temporal"
	"github.com/sextant-dev/sextant/sdk"
)

const (
	triageFile      = "../../../pipelines/email-triage/pipeline.toml"
	triageDataset   = "../../../pipelines/email-triage/dataset.jsonl"
	triageCandidate = "../../../pipelines/email-triage/candidates/improving.toml"
)

// replayHost is a ReplayHost as the CLI makes one: real plugins, stores
// opened read-only, no result cache (every shard replays for real).
func replayHost(t *testing.T) temporal.ReplayHost {
	t.Helper()
	t.Setenv("SEXTANT_CACHE", t.TempDir()) // the datasets' imports
	return temporal.ReplayHost{
		Registry: func(string) (*plugin.Registry, error) { return registry(t), nil },
		OpenStore: func(ctx context.Context, dir string, _ *pipeline.Pipeline) (*store.Store, error) {
			return store.Open(ctx, dir, store.NewConfig().WithLogger(quiet()).WithReadOnly(true))
		},
		Setup: func(loaded *run.Loaded, reg *plugin.Registry, s replay.Settings) (replay.Setup, error) {
			opts, err := replay.PrepareOptions(loaded.Pipeline, s.OnMiss)
			return replay.Setup{Loaded: loaded, Plugins: reg, Settings: s, Prepare: opts, Version: "test", Logger: quiet()}, err
		},
		Logger: quiet(),
	}
}

// triagePlan is a fanned-out replay of the email-triage example's first
// tasks under its strategy and a candidate.
func triagePlan(t *testing.T, shards int) temporal.ReplayPlan {
	t.Helper()
	return planOf(t, triageFile, shards, triageCandidate)
}

// planOf is a fanned-out replay of the first tasks of the pipeline in
// file, from its dataset, under its strategy and the candidates.
func planOf(t *testing.T, file string, shards int, candidates ...string) temporal.ReplayPlan {
	t.Helper()
	p, err := pipeline.Load(context.Background(), file, registry(t), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := replay.NewSettings(p, replay.Overrides{Sample: 6})
	if err != nil {
		t.Fatal(err)
	}
	return temporal.ReplayPlan{Pipeline: p, File: file, Baseline: base, Candidates: candidates,
		Settings: settings, Dataset: replay.DatasetOf(p, ""), Shards: shards}
}

// shardAll runs every shard of in, as the workers would, and returns
// their results sorted by task and strategy.
func shardAll(t *testing.T, h temporal.ReplayHost, in temporal.ReplayInput) []string {
	t.Helper()
	var got []string
	for i := range in.Shards {
		rs, err := h.Shard(context.Background(), temporal.ReplayShardInput{ReplayInput: in, Shard: i})
		if err != nil {
			t.Fatalf("shard %d/%d: %v", i+1, in.Shards, err)
		}
		for _, r := range rs {
			if r.Output != nil || r.Tags != nil {
				t.Errorf("shard %d/%d: %s keeps its output or tags, which a local replay does not judge", i+1, in.Shards, r.Task)
			}
			got = append(got, fmt.Sprintf("%s %s success=%v reproduced=%v", r.Task, r.Strategy, r.Outcome.Success, r.Reproduced))
		}
	}
	sort.Strings(got)
	return got
}

// TestReplayHostShards: the shards of a fanned-out replay together
// replay exactly what one unsharded replay does — every sampled task
// under the baseline and the candidate, each once.
func TestReplayHostShards(t *testing.T) {
	h := replayHost(t)
	one, err := h.Input(context.Background(), triagePlan(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if one.Dataset == "" || one.DatasetSHA256 == "" || one.PipelineSHA256 == "" || len(one.Candidates) != 1 || one.Store != "" {
		t.Fatalf("input %+v: want the dataset and pipeline with their digests, one candidate's text, no store", one)
	}
	want := shardAll(t, h, one)
	if len(want) != 12 {
		t.Fatalf("unsharded: %d results, want 6 tasks × 2 strategies:\n%s", len(want), strings.Join(want, "\n"))
	}
	three, err := h.Input(context.Background(), triagePlan(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := shardAll(t, h, three); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("3 shards replayed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReplayHostStore: a replay of a store sends its tasks' digest; a
// worker whose store holds other tasks refuses, as invalid input.
func TestReplayHostStore(t *testing.T) {
	ctx := context.Background()
	h := replayHost(t)
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := store.Open(ctx, dir, store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(triageDataset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(ctx, bytes.NewReader(data), "dataset.jsonl"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	plan := triagePlan(t, 2)
	plan.Dataset, plan.Store = "", dir
	in, err := h.Input(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if in.Store == "" || in.StoreDigest == "" || in.Dataset != "" {
		t.Fatalf("input %+v: want the store and its digest, no dataset", in)
	}
	if got := shardAll(t, h, in); len(got) != 12 {
		t.Fatalf("%d results from the store, want 12:\n%s", len(got), strings.Join(got, "\n"))
	}
	in.StoreDigest = "another"
	_, err = h.Shard(ctx, temporal.ReplayShardInput{ReplayInput: in})
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "tasks differ from those where the replay was started") {
		t.Fatalf("a store that changed: %v, want invalid input naming it", err)
	}
}

// TestReplayHostInvalid: a worker whose checkout or input differs from
// the CLI's refuses to replay, with an error that is final (invalid
// input), never a retry that could not succeed.
func TestReplayHostInvalid(t *testing.T) {
	ctx := context.Background()
	h := replayHost(t)
	in, err := h.Input(ctx, triagePlan(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*temporal.ReplayInput)
		want   string
	}{
		{"pipeline changed", func(in *temporal.ReplayInput) { in.PipelineSHA256 = "0" }, "pipeline"},
		{"dataset changed", func(in *temporal.ReplayInput) { in.DatasetSHA256 = "0" }, "dataset"},
		{"another baseline", func(in *temporal.ReplayInput) { in.BaselineHash = "0" }, "run the workers on the same checkout"},
		{"candidate unreadable", func(in *temporal.ReplayInput) { in.Candidates = []string{"[metadata\n"} }, "candidate strategy 1"},
		{"unknown on_miss", func(in *temporal.ReplayInput) { in.OnMiss = "guess" }, "on_miss"},
		{"no source", func(in *temporal.ReplayInput) { in.Dataset = "" }, "neither a dataset nor a store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := in
			bad.Candidates = append([]string(nil), in.Candidates...)
			tc.change(&bad)
			_, err := h.Shard(ctx, temporal.ReplayShardInput{ReplayInput: bad})
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want invalid input mentioning %q", err, tc.want)
			}
		})
	}
	plan := triagePlan(t, 1)
	plan.Candidates = []string{filepath.Join(t.TempDir(), "missing.toml")}
	if _, err := h.Input(ctx, plan); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "strategy:") {
		t.Fatalf("a candidate file that is missing: %v, want invalid input", err)
	}
}

// liveTriage copies the email-triage example to a directory of its own
// with another system prompt, so every recorded call misses and goes live
// to the script provider, priced so that each costs something; capUSD,
// when not 0, is its [replay] max_live_cost_usd. It returns the plan of a
// replay of its first tasks in shards.
func liveTriage(t *testing.T, dir string, capUSD float64, shards int) temporal.ReplayPlan {
	t.Helper()
	src := filepath.Dir(triageFile)
	for _, f := range []string{"dataset.jsonl", "email-triage.bpmn", "responses.toml", "strategies/email-handler.toml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(triageFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for old, new := range map[string]string{
		`system = "You triage e-mail`: `system = "You sort e-mail`,
		`max_cost_usd = 0.05`:         `max_cost_usd = 100`,
		`on_miss = "fail"`:            `on_miss = "live"`,
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("%s lacks %q", triageFile, old)
		}
		text = strings.Replace(text, old, new, 1)
	}
	if capUSD > 0 {
		text = strings.Replace(text, `on_miss = "live"`, fmt.Sprintf("on_miss = \"live\"\nmax_live_cost_usd = %v", capUSD), 1)
	}
	text += "\n[prices.script]\ninput = 100\noutput = 100\n"
	file := filepath.Join(dir, "pipeline.toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return planOf(t, file, shards)
}

// TestReplayHostShardCap: a worker's shard may spend its share of
// max_live_cost_usd, as `replay --shard I/N` may, not the whole cap. With
// the cap just above what the costliest of two shards spends, that shard
// passes its share and fails; with the whole cap each, none would.
func TestReplayHostShardCap(t *testing.T) {
	ctx := context.Background()
	h := replayHost(t)
	dir := t.TempDir()
	in, err := h.Input(ctx, liveTriage(t, dir, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	most := 0.0
	for i := range in.Shards {
		rs, err := h.Shard(ctx, temporal.ReplayShardInput{ReplayInput: in, Shard: i})
		if err != nil {
			t.Fatalf("shard %d/2 without a cap: %v", i+1, err)
		}
		spent := 0.0
		for _, r := range rs {
			for _, l := range r.Live {
				spent += l.CostUSD
			}
		}
		most = max(most, spent)
	}
	if most == 0 {
		t.Fatal("no shard spent anything live: the test replays nothing live")
	}
	capUSD := most * 1.01
	in, err = h.Input(ctx, liveTriage(t, dir, capUSD, 2))
	if err != nil {
		t.Fatal(err)
	}
	var stopped []string
	for i := range in.Shards {
		_, err := h.Shard(ctx, temporal.ReplayShardInput{ReplayInput: in, Shard: i})
		switch {
		case errors.Is(err, replay.ErrLiveCost):
			stopped = append(stopped, fmt.Sprint(i+1))
		case err != nil:
			t.Fatalf("shard %d/2: %v", i+1, err)
		}
	}
	if len(stopped) == 0 {
		t.Fatalf("no shard stopped at its share $%.4f of max_live_cost_usd $%.4f, though one spends $%.4f", capUSD/2, capUSD, most)
	}
}
