//go:build !notemporal

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// replayOnTemporal replays as replayAndJudge does, the replay itself fanned
// out over Temporal workers: each shard activity is `replay --shard I/N`,
// and this process judges the whole as sextant merge does.
func (a *app) replayOnTemporal(ctx context.Context, path string, f *replayFlags, loaded *run.Loaded, reg *plugin.Registry,
	strategies []*strategy.Strategy, files []string, cfg effective, command string) error {
	p := loaded.Pipeline
	root, err := replayRoot()
	if err != nil {
		return err
	}
	in := temporal.ReplayInput{BaselineHash: strategies[0].Hash(), Sample: cfg.Sample, Seed: cfg.Seed, OnMiss: cfg.OnMiss,
		StratifyBy: cfg.StratifyBy, Workers: cfg.Workers, Shards: f.temporal.shards}
	if in.Pipeline, in.PipelineSHA256, err = replayFileRef(root, path); err != nil {
		return err
	}
	for _, file := range files[1:] {
		b, err := os.ReadFile(file)
		if err != nil {
			return withInvalid(fmt.Errorf("strategy: %w", err))
		}
		in.Candidates = append(in.Candidates, string(b))
	}
	dataset := f.dataset
	if dataset == "" && p.Replay.Dataset != "" {
		dataset = p.Path(p.Replay.Dataset)
	}
	if dataset != "" {
		if in.Dataset, in.DatasetSHA256, err = replayFileRef(root, dataset); err != nil {
			return withInvalid(fmt.Errorf("dataset: %w", err))
		}
	} else {
		loc, err := f.store.locate(p)
		if err != nil {
			return err
		}
		s, err := a.openStoreWith(ctx, loc.dir, readStore, p)
		if err != nil {
			return err
		}
		in.StoreDigest, err = replayStoreDigest(ctx, s, p.Name)
		s.Close()
		if err != nil {
			return err
		}
		if in.Store, err = replayRel(root, loc.dir); err != nil {
			return err
		}
	}
	shards, err := temporal.RunReplay(ctx, temporal.ReplayClientOptions{HostPort: f.temporal.hostPort, Namespace: f.temporal.namespace,
		TaskQueue: f.temporal.taskQueue, Logger: a.logger}, in)
	if err != nil {
		if temporal.IsReplayInvalid(err) {
			return withInvalid(err)
		}
		return err
	}
	results, err := replay.MergeShards(shards, strategies)
	if err != nil {
		return err
	}
	return a.judge(ctx, reg, p, strategies, results, cfg.Seed, f.reports, &verdictTo{store: &f.store, command: command})
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
	root, err := replayRoot()
	if err != nil {
		return nil, err
	}
	path := replayAbs(root, in.Pipeline)
	if err := replayCheckDigest("pipeline", path, in.PipelineSHA256); err != nil {
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
	p := loaded.Pipeline
	if h := loaded.Strategy.Hash(); h != in.BaselineHash {
		return nil, withInvalid(fmt.Errorf("%s: the pipeline's strategy has hash %s here, %s where the replay was started: run the workers on the same checkout", path, h, in.BaselineHash))
	}
	strategies := []*strategy.Strategy{loaded.Strategy}
	for i, text := range in.Candidates {
		st, err := strategy.Parse(fmt.Sprintf("candidate strategy %d", i+1), []byte(text))
		if err != nil {
			return nil, withInvalid(err)
		}
		strategies = append(strategies, st)
	}
	f := &replayFlags{}
	switch {
	case in.Dataset != "":
		f.dataset = replayAbs(root, in.Dataset)
		if err := replayCheckDigest("dataset", f.dataset, in.DatasetSHA256); err != nil {
			return nil, err
		}
	case in.Store != "":
		f.store.dir = replayAbs(root, in.Store)
	default:
		return nil, withInvalid(errors.New("replay: neither a dataset nor a store to replay"))
	}
	switch in.OnMiss {
	case replay.MissFail, replay.MissSkip, replay.MissLive:
	default:
		return nil, withInvalid(fmt.Errorf("replay: on_miss %q is not fail, skip or live", in.OnMiss))
	}
	cfg := effective{Sample: in.Sample, Workers: in.Workers, Seed: in.Seed, OnMiss: in.OnMiss, StratifyBy: in.StratifyBy}
	prepOpts, err := replayCredentials(p, cfg.OnMiss)
	if err != nil {
		return nil, err
	}
	src, cleanup, err := a.replaySource(ctx, p, f)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if in.Store != "" {
		digest, err := replayStoreDigest(ctx, src, p.Name)
		if err != nil {
			return nil, err
		}
		if digest != in.StoreDigest {
			return nil, withInvalid(fmt.Errorf("store %s: its %s tasks differ from those where the replay was started (another store, or it changed): replay a dataset (sextant export) for tasks that stay put", f.store.dir, p.Name))
		}
	}
	rc := a.replayOver(src, loaded, reg, cfg, prepOpts)
	rc.Strategies, rc.Shard, rc.Shards = strategies, in.Shard, in.Shards
	var results []replay.Result
	err = replay.Run(ctx, rc, func(r replay.Result) error {
		// What a local replay judges: no output, no tags.
		r.Output, r.Tags = nil, nil
		results = append(results, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}
