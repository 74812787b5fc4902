package evolve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// triageReplay is a replay of the email-triage example's dataset (its
// first tasks) under its strategy and the improving candidate, and the
// strategies' files.
func triageReplay(t *testing.T) (replay.Config, []string) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(entries)
	example := "../../../pipelines/email-triage"
	loaded, err := run.Load(ctx, filepath.Join(example, "pipeline.toml"), reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loaded.Close(ctx) })
	src, err := replay.OpenDataset(ctx, filepath.Join(example, "dataset.jsonl"), t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	files := []string{filepath.Join(example, "strategies", "email-handler.toml"), filepath.Join(example, "candidates", "improving.toml")}
	cand, err := strategy.Load(files[1])
	if err != nil {
		t.Fatal(err)
	}
	rc := replay.Setup{Loaded: loaded, Plugins: reg, Settings: replay.Settings{Sample: 4, Workers: 2, OnMiss: replay.MissFail}, Logger: quiet}.Config(src)
	rc.Strategies = []*strategy.Strategy{loaded.Strategy, cand}
	return rc, files
}

// TestCollect: what Collect keeps is what it writes and what it told of,
// without outputs and tags; a shard keeps none but the count; a replay
// that fails leaves no results file behind.
func TestCollect(t *testing.T) {
	ctx := context.Background()
	rc, files := triageReplay(t)
	path := filepath.Join(t.TempDir(), "results.jsonl")
	out, err := replay.CreateResults(path, "pipeline.toml", files, rc.Strategies, replay.ResultsHeader{Sample: 4})
	if err != nil {
		t.Fatal(err)
	}
	told := 0
	kept, err := Collect(ctx, rc, out, false, func(replay.Result) { told++ })
	if err != nil {
		t.Fatal(err)
	}
	if kept.Tasks != 4 || len(kept.Results) != 8 || told != 8 {
		t.Fatalf("kept %d tasks, %d results; told of %d: want 4, 8, 8", kept.Tasks, len(kept.Results), told)
	}
	rc2, err := replay.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	written := rc2.Results
	replay.SortResults(written, rc.Strategies)
	mine := append([]replay.Result(nil), kept.Results...)
	replay.SortResults(mine, rc.Strategies)
	for i := range written {
		if written[i].Task != mine[i].Task || written[i].Hash != mine[i].Hash || written[i].Outcome.Success != mine[i].Outcome.Success || mine[i].Output != nil {
			t.Fatalf("result %d: wrote %+v, kept %+v", i, written[i], mine[i])
		}
	}

	shard, err := Collect(ctx, rc, nil, true, nil)
	if err != nil || shard.Tasks != 4 || shard.Results != nil {
		t.Fatalf("a shard: %v, kept %d tasks and %d results, want 4 and none", err, shard.Tasks, len(shard.Results))
	}

	failed := filepath.Join(t.TempDir(), "failed.jsonl")
	out, err = replay.CreateResults(failed, "pipeline.toml", files, rc.Strategies, replay.ResultsHeader{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Collect(cctx, rc, out, false, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled replay: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(failed)); len(entries) != 0 {
		t.Fatalf("a failed replay left %v behind", entries)
	}
}
