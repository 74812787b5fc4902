//go:build !notemporal

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// replayOnTemporal replays as replayAndJudge does, the replay itself fanned
// out over Temporal workers: each shard activity is `replay --shard I/N`,
// and this process judges the whole as sextant merge does.
func (a *app) replayOnTemporal(ctx context.Context, path string, f *replayFlags, rp *replayPlan, command string) error {
	in, err := a.replayInput(ctx, path, f, rp)
	if err != nil {
		return err
	}
	shards, err := temporal.RunReplay(ctx, temporal.ReplayClientOptions{HostPort: f.temporal.hostPort, Namespace: f.temporal.namespace,
		TaskQueue: f.temporal.taskQueue, Logger: a.logger}, in)
	if err != nil {
		if temporal.IsReplayInvalid(err) {
			return withInvalid(err)
		}
		return err
	}
	results, err := replay.MergeShards(shards, rp.strategies)
	if err != nil {
		return err
	}
	p := rp.setup.Loaded.Pipeline
	return a.judge(ctx, rp.setup.Plugins, p, rp.strategies, results, rp.setup.Settings.Seed, f.reports, &verdictTo{store: &f.store, command: command})
}

// replayInput is what the workers replay: the files by their path from
// the project's root and digest, the candidates' text, the settings.
func (a *app) replayInput(ctx context.Context, path string, f *replayFlags, rp *replayPlan) (temporal.ReplayInput, error) {
	p, cfg := rp.setup.Loaded.Pipeline, rp.setup.Settings
	in := temporal.ReplayInput{BaselineHash: rp.strategies[0].Hash(), Sample: cfg.Sample, Seed: cfg.Seed, OnMiss: cfg.OnMiss,
		StratifyBy: cfg.StratifyBy, Workers: cfg.Workers, Shards: f.temporal.shards}
	root, err := replay.Root()
	if err != nil {
		return in, err
	}
	if in.Pipeline, in.PipelineSHA256, err = replay.FileRef(root, path); err != nil {
		return in, err
	}
	for _, file := range rp.files[1:] {
		b, err := os.ReadFile(file)
		if err != nil {
			return in, withInvalid(fmt.Errorf("strategy: %w", err))
		}
		in.Candidates = append(in.Candidates, string(b))
	}
	if dataset := replay.DatasetOf(p, f.dataset); dataset != "" {
		if in.Dataset, in.DatasetSHA256, err = replay.FileRef(root, dataset); err != nil {
			return in, withInvalid(fmt.Errorf("dataset: %w", err))
		}
		return in, nil
	}
	loc, err := f.store.locate(p)
	if err != nil {
		return in, err
	}
	s, err := a.openStoreWith(ctx, loc.dir, readStore, p)
	if err != nil {
		return in, err
	}
	in.StoreDigest, err = replay.StoreDigest(ctx, s, p.Name)
	s.Close()
	if err != nil {
		return in, err
	}
	in.Store, err = replay.Rel(root, loc.dir)
	return in, err
}

// replayShard is the shard activity `sextant worker` runs: what `sextant
// replay --shard I/N --results` does, from the worker's own checkout
// (checked against the digests the CLI sent), returning the results.
func (a *app) replayShard(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
	rs, err := a.replayShardResults(ctx, in)
	if err != nil && ExitCode(err) == ExitInvalid {
		return nil, temporal.ReplayInvalid(err)
	}
	return rs, err
}

func (a *app) replayShardResults(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
	root, err := replay.Root()
	if err != nil {
		return nil, err
	}
	path := replay.Abs(root, in.Pipeline)
	if err := replay.CheckDigest("pipeline", path, in.PipelineSHA256); err != nil {
		return nil, err
	}
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	loaded, err := run.Load(ctx, path, reg, a.logger)
	if err != nil {
		return nil, err
	}
	defer loaded.Close(context.WithoutCancel(ctx))
	if h := loaded.Strategy.Hash(); h != in.BaselineHash {
		return nil, withInvalid(fmt.Errorf("%s: the pipeline's strategy has hash %s here, %s where the replay was started: run the workers on the same checkout", path, h, in.BaselineHash))
	}
	if err := replay.CheckOnMiss(in.OnMiss); err != nil {
		return nil, withInvalid(fmt.Errorf("replay: on_miss %w", err))
	}
	setup, err := a.replaySettings(loaded, reg, replay.Settings{Sample: in.Sample, Workers: in.Workers, Seed: in.Seed, OnMiss: in.OnMiss, StratifyBy: in.StratifyBy})
	if err != nil {
		return nil, err
	}
	rc, cleanup, err := a.shardSource(ctx, root, in, setup)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rc.Shard, rc.Shards = in.Shard, in.Shards
	if rc.Strategies, err = shardStrategies(loaded.Strategy, in.Candidates); err != nil {
		return nil, err
	}
	var results []replay.Result
	err = replay.Run(ctx, rc, func(r replay.Result) error {
		r.Output, r.Tags = nil, nil // what a local replay judges: no output, no tags
		results = append(results, r)
		return nil
	})
	return results, err
}

// shardStrategies are the baseline and the candidates a shard replays.
func shardStrategies(base *strategy.Strategy, candidates []string) ([]*strategy.Strategy, error) {
	strategies := []*strategy.Strategy{base}
	for i, text := range candidates {
		st, err := strategy.Parse(fmt.Sprintf("candidate strategy %d", i+1), []byte(text))
		if err != nil {
			return nil, withInvalid(err)
		}
		strategies = append(strategies, st)
	}
	return strategies, nil
}

// shardSource opens what a shard replays, from the worker's checkout: the
// dataset or the store the CLI named, checked against its digest.
func (a *app) shardSource(ctx context.Context, root string, in temporal.ReplayShardInput, setup replay.Setup) (replay.Config, func(), error) {
	p := setup.Loaded.Pipeline
	f := &replayFlags{}
	switch {
	case in.Dataset != "":
		f.dataset = replay.Abs(root, in.Dataset)
		if err := replay.CheckDigest("dataset", f.dataset, in.DatasetSHA256); err != nil {
			return replay.Config{}, nil, err
		}
	case in.Store != "":
		f.store.dir = replay.Abs(root, in.Store)
	default:
		return replay.Config{}, nil, withInvalid(errors.New("replay: neither a dataset nor a store to replay"))
	}
	src, cleanup, err := a.replaySource(ctx, p, f)
	if err != nil {
		return replay.Config{}, nil, err
	}
	if in.Store != "" {
		digest, err := replay.StoreDigest(ctx, src, p.Name)
		if err == nil && digest != in.StoreDigest {
			err = withInvalid(fmt.Errorf("store %s: its %s tasks differ from those where the replay was started (another store, or it changed): replay a dataset (sextant export) for tasks that stay put", f.store.dir, p.Name))
		}
		if err != nil {
			cleanup()
			return replay.Config{}, nil, err
		}
	}
	return setup.Config(src), cleanup, nil
}
