//go:build !notemporal

package app

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// onTemporal replays rp as Replay does, fanned out over Temporal workers:
// each shard activity is `replay --shard I/N` (ReplayShard), and the
// results come back here to be judged as sextant merge judges.
func (r *Replayer) onTemporal(ctx context.Context, rp *ReplayPlan, req ReplayRequest) ([]replay.Result, error) {
	p := rp.Setup.Loaded.Pipeline
	plan := temporal.ReplayPlan{Pipeline: p, File: req.Path, Baseline: rp.Strategies[0], Candidates: rp.Files[1:],
		Settings: rp.Setup.Settings, Dataset: replay.DatasetOf(p, req.Dataset), Shards: req.Temporal.Shards}
	if plan.Dataset == "" {
		dir, err := StoreOf(p, req.Store)
		if err != nil {
			return nil, err
		}
		plan.Store = dir
	}
	in, err := r.temporalHost().Input(ctx, plan)
	if err != nil {
		return nil, err
	}
	shards, err := temporal.RunReplay(ctx, temporal.ReplayClientOptions{HostPort: req.Temporal.Addr, Namespace: req.Temporal.Namespace,
		TaskQueue: req.Temporal.Queue, Logger: r.Logger}, in)
	if err != nil {
		if temporal.IsReplayInvalid(err) {
			return nil, invalid(err)
		}
		return nil, err
	}
	return replay.MergeShards(shards, rp.Strategies)
}

// temporalHost is how this replayer's shards find plugins, open stores
// and set replays up on a worker.
func (r *Replayer) temporalHost() temporal.ReplayHost {
	return temporal.ReplayHost{Registry: r.Registry, Setup: r.Setup, Logger: r.Logger,
		OpenStore: func(ctx context.Context, dir string, p *pipeline.Pipeline) (*store.Store, error) {
			return r.OpenStore(ctx, dir, Read, p)
		}}
}

// ReplayShard is the shard activity `sextant worker` runs
// (temporal.ReplayHost.Shard); input that can never replay (isInvalid
// says which) is final.
func (r *Replayer) ReplayShard(ctx context.Context, in temporal.ReplayShardInput, isInvalid func(error) bool) ([]replay.Result, error) {
	rs, err := r.temporalHost().Shard(ctx, in)
	if err != nil && isInvalid(err) {
		return nil, temporal.ReplayInvalid(err)
	}
	return rs, err
}
