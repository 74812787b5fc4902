package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// ReplayHost is what a fanned-out replay needs of the command that runs
// it, on either side: the CLI finds plugins, opens stores and sets a
// replay up (credentials, result cache, build identity) its own way, and
// a worker's shard must do all three exactly as a local replay would.
type ReplayHost struct {
	// Registry finds the plugins of the pipeline in dir.
	Registry func(dir string) (*plugin.Registry, error)
	// OpenStore opens the store at dir read-only, with p's [store]
	// settings.
	OpenStore func(ctx context.Context, dir string, p *pipeline.Pipeline) (*store.Store, error)
	// Setup is how loaded replays with settings.
	Setup  func(loaded *run.Loaded, reg *plugin.Registry, s replay.Settings) (replay.Setup, error)
	Logger *slog.Logger
}

// ReplayPlan is a replay the CLI fans out: the pipeline it loaded (from
// File), the baseline strategy it replays, the candidate strategies'
// files, the settings, and where the recorded tasks are: Dataset, or,
// when it is "", the store directory Store.
type ReplayPlan struct {
	Pipeline   *pipeline.Pipeline
	File       string
	Baseline   *strategy.Strategy
	Candidates []string
	Settings   replay.Settings
	Dataset    string
	Store      string
	// Shards is the number of shard activities (replay --temporal-shards).
	Shards int
}

// invalidInput is a fanned-out replay that can never succeed as given
// (a worker's checkout differs, a candidate does not parse): exit status
// 2 in the CLI, no retry on a worker.
type invalidInput struct{ error }

func (e invalidInput) Unwrap() error        { return e.error }
func (e invalidInput) Is(target error) bool { return target == sdk.ErrInvalid }

// Input is what the workers replay for pl: the files by their path from
// the project's root and their digest, the candidates' text, the
// settings, and the store's tasks' digest when no dataset is replayed.
func (h ReplayHost) Input(ctx context.Context, pl ReplayPlan) (ReplayInput, error) {
	cfg := pl.Settings
	in := ReplayInput{BaselineHash: pl.Baseline.Hash(), Sample: cfg.Sample, Seed: cfg.Seed, OnMiss: cfg.OnMiss,
		StratifyBy: cfg.StratifyBy, Workers: cfg.Workers, Shards: pl.Shards}
	root, err := replay.Root()
	if err != nil {
		return in, err
	}
	if in.Pipeline, in.PipelineSHA256, err = replay.FileRef(root, pl.File); err != nil {
		return in, err
	}
	for _, file := range pl.Candidates {
		b, err := os.ReadFile(file)
		if err != nil {
			return in, invalidInput{fmt.Errorf("strategy: %w", err)}
		}
		in.Candidates = append(in.Candidates, string(b))
	}
	if pl.Dataset != "" {
		if in.Dataset, in.DatasetSHA256, err = replay.FileRef(root, pl.Dataset); err != nil {
			return in, invalidInput{fmt.Errorf("dataset: %w", err)}
		}
		return in, nil
	}
	s, err := h.OpenStore(ctx, pl.Store, pl.Pipeline)
	if err != nil {
		return in, err
	}
	in.StoreDigest, err = replay.StoreDigest(ctx, s, pl.Pipeline.Name)
	s.Close()
	if err != nil {
		return in, err
	}
	in.Store, err = replay.Rel(root, pl.Store)
	return in, err
}

// Shard is the shard activity a worker runs: what `sextant replay --shard
// I/N --results` does, from the worker's own checkout (checked against the
// digests in in), returning the results. An error of input that can never
// replay is sdk.ErrInvalid.
func (h ReplayHost) Shard(ctx context.Context, in ReplayShardInput) ([]replay.Result, error) {
	root, err := replay.Root()
	if err != nil {
		return nil, err
	}
	path := replay.Abs(root, in.Pipeline)
	if err := replay.CheckDigest("pipeline", path, in.PipelineSHA256); err != nil {
		return nil, err
	}
	reg, err := h.Registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	loaded, err := run.Load(ctx, path, reg, h.Logger)
	if err != nil {
		return nil, err
	}
	defer loaded.Close(context.WithoutCancel(ctx))
	rc, cleanup, err := h.shardConfig(ctx, root, in, loaded, reg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var results []replay.Result
	err = replay.Run(ctx, rc, func(r replay.Result) error {
		r.Output, r.Tags = nil, nil // what a local replay judges: no output, no tags
		results = append(results, r)
		return nil
	})
	return results, err
}

// shardConfig checks that the worker loaded the baseline the CLI replays
// and returns the shard's replay configuration over its source.
func (h ReplayHost) shardConfig(ctx context.Context, root string, in ReplayShardInput, loaded *run.Loaded, reg *plugin.Registry) (replay.Config, func(), error) {
	if hash := loaded.Strategy.Hash(); hash != in.BaselineHash {
		return replay.Config{}, nil, invalidInput{fmt.Errorf("%s: the pipeline's strategy has hash %s here, %s where the replay was started: run the workers on the same checkout",
			loaded.Pipeline.File, hash, in.BaselineHash)}
	}
	if err := replay.CheckOnMiss(in.OnMiss); err != nil {
		return replay.Config{}, nil, invalidInput{fmt.Errorf("replay: on_miss %w", err)}
	}
	strategies, err := shardStrategies(loaded.Strategy, in.Candidates)
	if err != nil {
		return replay.Config{}, nil, err
	}
	setup, err := h.Setup(loaded, reg, replay.Settings{Sample: in.Sample, Workers: in.Workers, Seed: in.Seed, OnMiss: in.OnMiss, StratifyBy: in.StratifyBy})
	if err != nil {
		return replay.Config{}, nil, err
	}
	src, err := h.shardSource(ctx, root, in, loaded.Pipeline)
	if err != nil {
		return replay.Config{}, nil, err
	}
	rc := setup.Config(src)
	rc.Strategies, rc.Shard, rc.Shards = strategies, in.Shard, in.Shards
	// As `replay --shard I/N` does: the shards of one replay share its cap
	// (RATIONALE "Why a candidate pipeline's shard may spend max_live_cost_usd / N, not the whole cap").
	rc.MaxLiveCostUSD = replay.ShardMax(rc.MaxLiveCostUSD, in.Shards)
	return rc, func() { src.Close() }, nil
}

// shardStrategies are the baseline and the candidates a shard replays.
func shardStrategies(base *strategy.Strategy, candidates []string) ([]*strategy.Strategy, error) {
	strategies := []*strategy.Strategy{base}
	for i, text := range candidates {
		st, err := strategy.Parse(fmt.Sprintf("candidate strategy %d", i+1), []byte(text))
		if err != nil {
			return nil, invalidInput{err}
		}
		strategies = append(strategies, st)
	}
	return strategies, nil
}

// shardSource opens what a shard replays, from the worker's checkout: the
// dataset or the store the CLI named, checked against its digest.
func (h ReplayHost) shardSource(ctx context.Context, root string, in ReplayShardInput, p *pipeline.Pipeline) (*store.Store, error) {
	switch {
	case in.Dataset != "":
		dataset := replay.Abs(root, in.Dataset)
		if err := replay.CheckDigest("dataset", dataset, in.DatasetSHA256); err != nil {
			return nil, err
		}
		return replay.OpenDataset(ctx, dataset, replay.CacheDir(), h.Logger)
	case in.Store == "":
		return nil, invalidInput{errors.New("replay: neither a dataset nor a store to replay")}
	}
	dir := replay.Abs(root, in.Store)
	s, err := h.OpenStore(ctx, dir, p)
	if err != nil {
		return nil, err
	}
	digest, err := replay.StoreDigest(ctx, s, p.Name)
	if err == nil && digest != in.StoreDigest {
		err = invalidInput{fmt.Errorf("store %s: its %s tasks differ from those where the replay was started (another store, or it changed): replay a dataset (sextant export) for tasks that stay put", dir, p.Name)}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
