//go:build !notemporal

package cli

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// replayOnTemporal replays as replayAndJudge does, the replay itself fanned
// out over Temporal workers: each shard activity is `replay --shard I/N`,
// and this process judges the whole as sextant merge does.
func (a *app) replayOnTemporal(ctx context.Context, path string, f *replayFlags, rp *replayPlan, command string) error {
	p := rp.setup.Loaded.Pipeline
	plan := temporal.ReplayPlan{Pipeline: p, File: path, Baseline: rp.strategies[0], Candidates: rp.files[1:],
		Settings: rp.setup.Settings, Dataset: replay.DatasetOf(p, f.dataset), Shards: f.temporal.shards}
	if plan.Dataset == "" {
		loc, err := f.store.locate(p)
		if err != nil {
			return err
		}
		plan.Store = loc.dir
	}
	in, err := a.replayHost().Input(ctx, plan)
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
	return a.judge(ctx, rp.setup.Plugins, p, rp.strategies, results, rp.setup.Settings.Seed, f.reports, &verdictTo{store: &f.store, command: command})
}

// replayHost is how this CLI finds plugins, opens stores and sets replays
// up, for a replay fanned out over Temporal.
func (a *app) replayHost() temporal.ReplayHost {
	return temporal.ReplayHost{Registry: a.registry, Setup: a.replaySettings, Logger: a.logger,
		OpenStore: func(ctx context.Context, dir string, p *pipeline.Pipeline) (*store.Store, error) {
			return a.openStoreWith(ctx, dir, readStore, p)
		}}
}

// replayShard is the shard activity `sextant worker` runs
// (temporal.ReplayHost.Shard); input that can never replay is final.
func (a *app) replayShard(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
	rs, err := a.replayHost().Shard(ctx, in)
	if err != nil && ExitCode(err) == ExitInvalid {
		return nil, temporal.ReplayInvalid(err)
	}
	return rs, err
}
