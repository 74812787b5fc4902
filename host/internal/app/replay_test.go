package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// replayer replays with the builtin plugins, a result cache of the test's
// own, and the live version FollowLiveLoaded finds.
func replayer(t *testing.T) *Replayer {
	t.Helper()
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	return &Replayer{
		Registry: func(string) (*plugin.Registry, error) {
			return plugin.NewRegistry(entries, plugin.WithLogger(quiet())), nil
		},
		FollowLive: func(ctx context.Context, loaded *run.Loaded, storeFlag string) (*pipeline.Pipeline, error) {
			return FollowLiveLoaded(ctx, loaded, storeFlag, quiet(), "sextant test")
		},
		OpenStore: func(ctx context.Context, dir string, mode Mode, p *pipeline.Pipeline) (*store.Store, error) {
			return OpenStore(ctx, dir, mode, p, quiet(), "sextant test")
		},
		Version: "test", CacheDir: t.TempDir(), Logger: quiet(),
	}
}

// TestReplayJudges: a replay of the email-triage dataset under a
// candidate is judged (the improving candidate passes its gates, the
// regressing one does not) and its verdict recorded in the pipeline's
// store; gate without a candidate is a usage error.
func TestReplayJudges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	cands := filepath.Join(filepath.Dir(f.pipeline), "candidates")
	if _, err := r.Replay(ctx, ReplayRequest{Path: f.pipeline, Gate: true, Store: f.store, Overrides: replay.Overrides{Sample: 20}}); !errors.As(err, new(*UsageError)) {
		t.Fatalf("gate without a candidate: %v, want a usage error", err)
	}
	open(t, Target{Store: f.store, Create: true}).Close()
	var total, results int
	for _, c := range []struct {
		file string
		exit int
	}{{"improving.toml", 0}, {"regressing.toml", 1}} {
		out, err := r.Replay(ctx, ReplayRequest{Path: f.pipeline, Candidates: []string{filepath.Join(cands, c.file)}, Gate: true,
			Store: f.store, Overrides: replay.Overrides{Sample: 20, Seed: 7},
			OnTotal: func(n int) { total += n }, OnResult: func() { results++ }})
		if err != nil || out.Report == nil || out.Report.ExitCode != c.exit {
			t.Fatalf("gate %s: %v %+v, want a report exiting %d", c.file, err, out, c.exit)
		}
	}
	if total != 80 || results != total {
		t.Errorf("progress: %d results of %d, want 80 of 80", results, total)
	}
	st, err := OpenStore(ctx, f.store, Read, nil, quiet(), "sextant test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vs, err := evolve.ListVerdicts(ctx, st, "email-triage")
	if err != nil || len(vs) != 2 || vs[0].Command != "gate" {
		t.Fatalf("verdicts: %v %+v, want the two of gate", err, vs)
	}
}

// TestReplayShardsMerge: two shards write their results and judge
// nothing; merged, they are judged as the unsharded replay is.
func TestReplayShardsMerge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	cand := filepath.Join(filepath.Dir(f.pipeline), "candidates", "regressing.toml")
	req := ReplayRequest{Path: f.pipeline, Candidates: []string{cand}, Store: f.store, Overrides: replay.Overrides{Sample: 20, Seed: 7}}
	whole, err := r.Replay(ctx, req)
	if err != nil || whole.Report == nil {
		t.Fatalf("unsharded: %v %+v", err, whole)
	}
	var files []string
	tasks := 0
	for i := range 2 {
		req.Shard, req.Shards = i, 2
		req.Results = filepath.Join(t.TempDir(), "shard.jsonl")
		out, err := r.Replay(ctx, req)
		if err != nil || out.Report != nil || out.Strategies != 2 {
			t.Fatalf("shard %d: %v %+v, want results and no report", i, err, out)
		}
		files, tasks = append(files, req.Results), tasks+out.Tasks
	}
	if tasks != 20 {
		t.Errorf("the shards replayed %d tasks, want 20", tasks)
	}
	merged, err := r.Merge(ctx, files)
	if err != nil || merged.ExitCode != whole.Report.ExitCode || merged.Ruling != whole.Report.Ruling {
		t.Fatalf("merged: %v %+v, want the unsharded ruling %q", err, merged, whole.Report.Ruling)
	}
	if _, err := r.Merge(ctx, files[:1]); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("merging one shard of two: %v, want invalid input", err)
	}
}

// TestGatePipeline: a model-swap overlay is gated over the dataset (its
// changed calls, on on_miss = fail, fail the candidate's replays, which
// the gates see) and the verdict recorded as gate's; an overlay that
// changes the score is refused as invalid input.
func TestGatePipeline(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	dir := filepath.Dir(f.pipeline)
	big := filepath.Join(dir, "big.toml")
	rescored := filepath.Join(dir, "rescored.toml")
	for file, text := range map[string]string{
		big:      "overlay = \"pipeline.toml\"\n\n[providers.big]\nuse = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[steps.classify]\nprovider = \"big\"\n",
		rescored: "overlay = \"pipeline.toml\"\n[score]\nsuccess = \"true\"\n",
	} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open(t, Target{Store: f.store, Create: true}).Close()
	req := ReplayRequest{Path: f.pipeline, Store: f.store, Overrides: replay.Overrides{Sample: 10, OnMiss: replay.MissFail}}
	if _, err := r.GatePipeline(ctx, req, rescored); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a rescored overlay: %v, want invalid input", err)
	}
	results := 0
	req.OnResult = func() { results++ }
	out, err := r.GatePipeline(ctx, req, big)
	if err != nil {
		t.Fatal(err)
	}
	if rep := out.Report; rep.CandidatePipeline == nil || !rep.CandidatePipeline.Overlay || rep.ExitCode == 0 {
		t.Fatalf("gate big.toml: %+v, want a failing verdict on an overlay", rep)
	}
	if results != 20 {
		t.Errorf("%d results, want 20 (10 tasks, baseline and candidate)", results)
	}
	st, err := OpenStore(ctx, f.store, Read, nil, quiet(), "sextant test")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if vs, err := evolve.ListVerdicts(ctx, st, "email-triage"); err != nil || len(vs) != 1 || vs[0].Command != "gate" {
		t.Fatalf("verdicts: %v %+v, want the one of gate", err, vs)
	}
}

// TestGatePipelineShardsMerge: the shards of gate --candidate-pipeline
// write results naming the candidate and judge nothing; merged, they are
// judged as the unsharded gate is, to the same JSON report; merged with
// a replay's shard they are refused as invalid input.
func TestGatePipelineShardsMerge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	t.Setenv(project.EnvStore, "")
	r := replayer(t)
	big := filepath.Join(filepath.Dir(f.pipeline), "big.toml")
	text := "overlay = \"pipeline.toml\"\n\n[providers.big]\nuse = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[steps.classify]\nprovider = \"big\"\n"
	if err := os.WriteFile(big, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, Target{Store: f.store, Create: true}).Close()
	req := ReplayRequest{Path: f.pipeline, Store: f.store, Overrides: replay.Overrides{Sample: 10, OnMiss: replay.MissFail}}
	whole, err := r.GatePipeline(ctx, req, big)
	if err != nil || whole.Report == nil {
		t.Fatalf("unsharded: %v %+v", err, whole)
	}
	var files []string
	tasks := 0
	for i := range 2 {
		req.Shard, req.Shards = i, 2
		req.Results = filepath.Join(t.TempDir(), "shard.jsonl")
		out, err := r.GatePipeline(ctx, req, big)
		if err != nil || out.Report != nil || out.Candidate != big {
			t.Fatalf("shard %d: %v %+v, want results and no report", i, err, out)
		}
		files, tasks = append(files, req.Results), tasks+out.Tasks
	}
	if tasks != 10 {
		t.Errorf("the shards replayed %d tasks, want 10", tasks)
	}
	merged, err := r.Merge(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := report.WriteJSON(&a, whole.Report); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&b, merged); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("merged report:\n%s\nwant the unsharded gate's:\n%s", b.String(), a.String())
	}
	plain := ReplayRequest{Path: f.pipeline, Store: f.store, Overrides: req.Overrides, Shard: 1, Shards: 2,
		Results: filepath.Join(t.TempDir(), "plain.jsonl")}
	if _, err := r.Replay(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge(ctx, []string{files[0], plain.Results}); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("a candidate's shard merged with a replay's: %v, want invalid input", err)
	}
}
