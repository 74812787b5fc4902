package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/plugin"
	"github.com/sextant-dev/sextant/host/project"
	"github.com/sextant-dev/sextant/host/replay"
	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/store"
	"github.com/sextant-dev/sextant/host/strategy"
	"github.com/sextant-dev/sextant/host/temporal"
)

// The defaults of replay --temporal's namespace and task queue: those of
// `sextant worker`, whose workers run the shards.
const (
	replayDefaultNamespace = "default"
	replayDefaultTaskQueue = "sextant"
	replayDefaultShards    = 8
)

// replayTemporalFlags are replay's --temporal flags.
type replayTemporalFlags struct {
	hostPort, namespace, taskQueue string
	shards                         int
}

func (f *replayTemporalFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.hostPort, "temporal", "", "HOST:PORT of a Temporal front end: fan the replay out as activities over the sextant workers polling --task-queue, and judge here")
	c.Flags().StringVar(&f.namespace, "namespace", replayDefaultNamespace, "Temporal namespace (with --temporal)")
	c.Flags().StringVar(&f.taskQueue, "task-queue", replayDefaultTaskQueue, "Temporal task queue (with --temporal)")
	c.Flags().IntVar(&f.shards, "temporal-shards", replayDefaultShards, "number of shard activities a replay fans out to (with --temporal)")
}

// checkReplayTemporal checks the flags of replay --temporal.
func (a *app) checkReplayTemporal(f *replayFlags) error {
	if f.shard != "" || f.shardTotal != 0 || f.results != "" {
		return usageErr(errors.New("--temporal shards the replay itself: --shard and --results are for CI shards that sextant merge judges"))
	}
	if a.otlpEndpoint != "" {
		return usageErr(errors.New("--otlp-endpoint with --temporal: the workers replay, and do not export spans; export from a local replay"))
	}
	if f.temporal.shards < 1 {
		return usageErr(fmt.Errorf("--temporal-shards %d: want at least 1", f.temporal.shards))
	}
	return nil
}

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
	results, err := mergeShardResults(shards, strategies)
	if err != nil {
		return err
	}
	return a.judge(ctx, reg, p, strategies, results, cfg.Seed, f.reports, &verdictTo{store: &f.store, command: command})
}

// mergeShardResults puts the shards' results together as sextant merge
// does: each task under each strategy exactly once, in task order, then
// strategy order — the order of one unsharded replay.
func mergeShardResults(shards [][]replay.Result, strategies []*strategy.Strategy) ([]replay.Result, error) {
	known := map[string]bool{}
	for _, st := range strategies {
		known[st.Hash()] = true
	}
	seen := map[string]int{}
	var results []replay.Result
	for i, rs := range shards {
		for _, r := range rs {
			if !known[r.Hash] {
				return nil, fmt.Errorf("shard %d/%d: task %s replayed under strategy %s, which this replay does not replay", i+1, len(shards), r.Task, r.Hash)
			}
			key := r.Task + "\x00" + r.Hash
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("shard %d/%d: task %s replayed twice under %s (also in shard %d/%d)", i+1, len(shards), r.Task, r.Strategy, prev+1, len(shards))
			}
			seen[key] = i
			results = append(results, r)
		}
	}
	sortResults(results, strategies)
	return results, nil
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

// replayStoreDigest digests the completed tasks of a pipeline in a store:
// what a replay of the store selects from.
func replayStoreDigest(ctx context.Context, s *store.Store, name string) (string, error) {
	h := sha256.New()
	err := s.EachTask(ctx, store.Query{Pipeline: name}, func(t *store.Task) error {
		if t.Status != store.StatusCompleted {
			return nil
		}
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		h.Write(append(b, '\n'))
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// replayRoot is what the paths a replay sends its workers are relative
// to: the directory of sextant.toml, else the working directory.
func replayRoot() (string, error) {
	pf, err := project.Find(".")
	if err != nil {
		return "", withInvalid(err)
	}
	if pf != nil {
		return pf.Dir, nil
	}
	return os.Getwd()
}

// replayRel is path relative to root, or absolute when it lies outside.
func replayRel(root, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs, nil
	}
	return filepath.ToSlash(rel), nil
}

// replayAbs resolves a path the CLI sent against the worker's root.
func replayAbs(root, path string) string {
	path = filepath.FromSlash(path)
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// replayFileRef is a file as a worker finds it: its path relative to root
// and the SHA-256 of its bytes.
func replayFileRef(root, path string) (string, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	rel, err := replayRel(root, path)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return rel, hex.EncodeToString(sum[:]), nil
}

// replayCheckDigest checks that the worker's file is the one the CLI replays.
func replayCheckDigest(what, path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return withInvalid(fmt.Errorf("%s: %w (run the workers in a checkout of the same project)", what, err))
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return withInvalid(fmt.Errorf("%s %s differs from the one the replay was started with (sha256 %s here, %s there): run the workers on the same checkout", what, path, got[:12], replayShort(want)))
	}
	return nil
}

func replayShort(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// replayCommandName is the command a replay's verdict is recorded under.
func replayCommandName(needCandidate bool) string {
	if needCandidate {
		return "gate"
	}
	return "replay"
}
