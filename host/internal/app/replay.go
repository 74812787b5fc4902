package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/telemetry"
	"github.com/sextant-dev/sextant/sdk"
)

// Replayer replays and judges (sextant replay, gate, merge, and the
// replays of evolve) with what its caller provides: how plugins are found,
// stores opened, the live version followed and spans exported.
type Replayer struct {
	// Registry finds the plugins of the pipeline in dir.
	Registry func(dir string) (*plugin.Registry, error)
	// FollowLive switches loaded to its pipeline's live version, with the
	// store flag given (FollowLiveLoaded), and returns the pipeline as
	// configured.
	FollowLive func(ctx context.Context, loaded *run.Loaded, storeFlag string) (*pipeline.Pipeline, error)
	// OpenStore opens the store at dir in mode, with p's [store] settings.
	OpenStore func(ctx context.Context, dir string, mode Mode, p *pipeline.Pipeline) (*store.Store, error)
	// Telemetry, when set, is the exporter of a replay's spans, which
	// reads recordings from st (nil, nil: none).
	Telemetry func(ctx context.Context, st *store.Store) (*telemetry.Exporter, error)
	// Version names the build, for the result cache's keys.
	Version string
	// CacheDir holds imported datasets and the result cache.
	CacheDir string
	Logger   *slog.Logger
}

// ReplayRequest is a replay of the pipeline at Path under its live
// strategy and the candidate strategies in Candidates.
type ReplayRequest struct {
	Path       string
	Candidates []string
	// Gate needs a candidate (sextant gate); its verdict is recorded under
	// gate rather than replay.
	Gate bool
	// Overrides are the settings the command line gives.
	Overrides replay.Overrides
	// Dataset is --dataset; Store is --store.
	Dataset, Store string
	// Shard of Shards (0-based; Shards 0: unsharded) only writes Results.
	Shard, Shards int
	// Results, when set, is the file the per-task results go to.
	Results string
	// Temporal, when its Addr is set, fans the replay out over workers.
	Temporal TemporalReplay
	// OnTotal is told how many results the replay makes, OnResult of each.
	OnTotal  func(int)
	OnResult func()
}

// TemporalReplay is a Temporal cluster a replay fans out to, in Shards
// activities.
type TemporalReplay struct {
	Addr, Namespace, Queue string
	Shards                 int
}

// Outcome is a replay done: its report when judged, or, for a shard, what
// it replayed (ShardSummary).
type Outcome struct {
	Report            *report.Report
	Tasks, Strategies int
	// Candidate is the candidate pipeline gated (gate
	// --candidate-pipeline), "" for strategies.
	Candidate string
	// Shard of Shards (0-based) wrote its results to Results.
	Shard, Shards int
	Results       string
}

// ShardSummary is what a shard prints: what it replayed, where its
// results are, and that merge judges them.
func (o *Outcome) ShardSummary() string {
	what := fmt.Sprintf("%d strategies", o.Strategies)
	if o.Candidate != "" {
		what = "the pipeline and candidate pipeline " + o.Candidate
	}
	return fmt.Sprintf("shard %d/%d: %d tasks replayed under %s, results in %s\nno verdict from a shard: judge the whole with sextant merge\n",
		o.Shard+1, o.Shards, o.Tasks, what, o.Results)
}

// ReplayPlan is what a replay replays: the pipeline loaded (Close
// releases it), and the strategies, baseline first, with their files (""
// for the empty strategy of a pipeline without one).
type ReplayPlan struct {
	Setup      replay.Setup
	Strategies []*strategy.Strategy
	Files      []string
}

// Close releases the loaded pipeline.
func (rp *ReplayPlan) Close(ctx context.Context) { rp.Setup.Loaded.Close(context.WithoutCancel(ctx)) }

// Replay replays req and, unless it is a shard, judges the results
// (recording a comparison in the pipeline's store).
func (r *Replayer) Replay(ctx context.Context, req ReplayRequest) (*Outcome, error) {
	rp, err := r.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rp.Close(ctx)
	command := "replay"
	if req.Gate {
		command = "gate"
	}
	jr := JudgeRequest{Plan: rp, Command: command, Store: req.Store}
	if req.Temporal.Addr != "" {
		if jr.Results, err = r.onTemporal(ctx, rp, req); err != nil {
			return nil, err
		}
		return r.judged(ctx, jr)
	}
	kept, err := r.collect(ctx, rp, req)
	if err != nil {
		return nil, err
	}
	if req.Shards > 0 {
		return &Outcome{Tasks: kept.Tasks, Strategies: len(rp.Strategies), Shard: req.Shard, Shards: req.Shards, Results: req.Results}, nil
	}
	jr.Results, jr.Kept = kept.Results, kept
	return r.judged(ctx, jr)
}

func (r *Replayer) judged(ctx context.Context, jr JudgeRequest) (*Outcome, error) {
	rep, err := r.Judge(ctx, jr)
	if err != nil {
		return nil, err
	}
	return &Outcome{Report: rep, Strategies: len(jr.Plan.Strategies)}, nil
}

// Plan loads the pipeline at req.Path (following its live version) and
// the candidate strategies, and settles the replay's settings; the
// caller closes the plan.
func (r *Replayer) Plan(ctx context.Context, req ReplayRequest) (*ReplayPlan, error) {
	reg, err := r.Registry(filepath.Dir(req.Path))
	if err != nil {
		return nil, err
	}
	loaded, err := run.Load(ctx, req.Path, reg, r.Logger)
	if err != nil {
		return nil, err
	}
	rp, err := r.plan(ctx, loaded, reg, req)
	if err != nil {
		loaded.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return rp, nil
}

func (r *Replayer) plan(ctx context.Context, loaded *run.Loaded, reg *plugin.Registry, req ReplayRequest) (*ReplayPlan, error) {
	if _, err := r.FollowLive(ctx, loaded, req.Store); err != nil {
		return nil, err
	}
	p := loaded.Pipeline
	rp := &ReplayPlan{Strategies: []*strategy.Strategy{loaded.Strategy}, Files: []string{p.Path(p.Strategy.File)}}
	if p.Strategy.File == "" {
		if req.Gate {
			return nil, NeedStrategy(p, "gate compares a candidate with the pipeline's strategy")
		}
		rp.Files[0] = "" // the empty strategy: no file
	}
	for _, sf := range req.Candidates {
		st, err := strategy.Load(sf)
		if err != nil {
			return nil, err
		}
		rp.Strategies, rp.Files = append(rp.Strategies, st), append(rp.Files, sf)
	}
	if req.Gate && len(rp.Strategies) < 2 {
		return nil, &UsageError{errors.New("--candidate is required")}
	}
	settings, err := replay.NewSettings(p, req.Overrides)
	if err != nil {
		return nil, &UsageError{err}
	}
	if rp.Setup, err = r.Setup(loaded, reg, settings); err != nil {
		return nil, err
	}
	return rp, nil
}

// Setup is how loaded replays with settings: credentials only for a live
// replay, the result cache in CacheDir.
func (r *Replayer) Setup(loaded *run.Loaded, reg *plugin.Registry, settings replay.Settings) (replay.Setup, error) {
	opts, err := replay.PrepareOptions(loaded.Pipeline, settings.OnMiss)
	if err != nil {
		return replay.Setup{}, err
	}
	return replay.Setup{Loaded: loaded, Plugins: reg, Settings: settings, Prepare: opts, Version: r.Version,
		CacheDir: r.CacheDir, Logger: r.Logger}, nil
}

// collect runs the replay of rp, writing its results to req.Results when
// named.
func (r *Replayer) collect(ctx context.Context, rp *ReplayPlan, req ReplayRequest) (*evolve.Kept, error) {
	rc, cleanup, err := r.Source(ctx, rp.Setup, req.Dataset, req.Store)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rc.Strategies, rc.Shard, rc.Shards = rp.Strategies, req.Shard, req.Shards
	rc.MaxLiveCostUSD = replay.ShardMax(rc.MaxLiveCostUSD, req.Shards) // the shards of one replay share its cap
	var out *replay.ResultsFile
	if req.Results != "" {
		s := rp.Setup.Settings
		h := replay.ResultsHeader{Seed: s.Seed, Sample: s.Sample, OnMiss: s.OnMiss, StratifyBy: s.StratifyBy}
		if req.Shards > 0 {
			h.Shard = fmt.Sprintf("%d/%d", req.Shard+1, req.Shards)
		}
		if out, err = replay.CreateResults(req.Results, req.Path, rp.Files, rp.Strategies, h); err != nil {
			return nil, err
		}
	}
	rc.OnSelected = func(tasks int) {
		if req.OnTotal != nil {
			req.OnTotal(tasks * len(rc.Strategies))
		}
	}
	return evolve.Collect(ctx, rc, out, req.Shards > 0, func(replay.Result) {
		if req.OnResult != nil {
			req.OnResult()
		}
	})
}

// Source opens what a replay of setup reads and exports its spans when
// asked, and returns the replay configuration (without strategies) and
// what closes them (safe to call twice).
func (r *Replayer) Source(ctx context.Context, setup replay.Setup, dataset, storeFlag string) (replay.Config, func(), error) {
	src, err := r.source(ctx, setup.Loaded.Pipeline, dataset, storeFlag)
	if err != nil {
		return replay.Config{}, nil, err
	}
	rc := setup.Config(src)
	var exp *telemetry.Exporter
	if r.Telemetry != nil {
		if exp, err = r.Telemetry(ctx, src); err != nil {
			src.Close()
			return replay.Config{}, nil, err
		}
	}
	if exp != nil {
		rc.OnSpans = exp.Spans
	}
	return rc, sync.OnceFunc(func() {
		if exp != nil {
			if err := exp.Shutdown(context.WithoutCancel(ctx)); err != nil {
				r.Logger.Warn("telemetry shutdown", "err", err)
			}
		}
		src.Close()
	}), nil
}

// source opens what to replay: a dataset imported once into a cache store
// keyed by its content, or the pipeline's own store, read-only (a replay
// never writes the tasks it replays, and Badger's writable open maps, and
// faults in, every value-log file).
func (r *Replayer) source(ctx context.Context, p *pipeline.Pipeline, dataset, storeFlag string) (*store.Store, error) {
	if dataset := replay.DatasetOf(p, dataset); dataset != "" {
		return replay.OpenDataset(ctx, dataset, r.CacheDir, r.Logger)
	}
	dir, err := StoreOf(p, storeFlag)
	if err != nil {
		return nil, err
	}
	return r.OpenStore(ctx, dir, Read, p)
}

// StoreOf is the store of p by the store rule, --store being storeFlag.
func StoreOf(p *pipeline.Pipeline, storeFlag string) (string, error) {
	loc, ok, err := project.CommonStore(storeFlag)
	if err != nil {
		return "", invalid(err)
	}
	if !ok {
		return project.PipelineStore(p.File, p.Store.Dir), nil
	}
	return loc.Dir, nil
}

// JudgeRequest is replay results to judge: those of Plan's strategies
// (Plan's setup gives the plugins, pipeline and seed), recorded under
// Command in the store --store (Store) locates.
type JudgeRequest struct {
	Plan    *ReplayPlan
	Results []replay.Result
	Command string
	Store   string
	// Kept is what the replay kept of outputs and tool calls (nil: none).
	Kept *evolve.Kept
}

// Judge judges replay results (evolve.JudgeReplay) and records a
// comparison in the store; a comparison that cannot be recorded is
// logged, and the report still returned.
func (r *Replayer) Judge(ctx context.Context, jr JudgeRequest) (*report.Report, error) {
	s := jr.Plan.Setup
	p := s.Loaded.Pipeline
	j, rep, err := evolve.JudgeReplay(ctx, s.Plugins, p, jr.Plan.Strategies, jr.Results, s.Settings.Seed, jr.Kept)
	if err != nil {
		return nil, err
	}
	if len(jr.Plan.Strategies) > 1 {
		r.saveVerdict(ctx, p, jr.Store, Verdict{Command: jr.Command, Judgment: j}, jr.Kept)
	}
	return rep, nil
}

// saveVerdict records v, judged on p, in the store storeFlag locates.
func (r *Replayer) saveVerdict(ctx context.Context, p *pipeline.Pipeline, storeFlag string, v Verdict, kept *evolve.Kept) {
	dir, err := StoreOf(p, storeFlag)
	if err == nil {
		v.Store, v.Pipeline = dir, p.Name
		if kept != nil {
			v.Output = kept.Output
		}
		err = SaveVerdict(ctx, v, r.Logger)
	}
	if err != nil {
		r.Logger.Warn("the verdict is not recorded in the store", "err", err)
	}
}

// Merge judges sharded replay results (the files sextant replay --shard
// or gate --candidate-pipeline --shard wrote) as an unsharded replay, or
// gate, does.
func (r *Replayer) Merge(ctx context.Context, files []string) (*report.Report, error) {
	m, err := replay.MergeFiles(files)
	if err != nil {
		return nil, invalid(err)
	}
	reg, err := r.Registry(filepath.Dir(m.Header.Pipeline))
	if err != nil {
		return nil, err
	}
	p, err := pipeline.Load(ctx, m.Header.Pipeline, reg, pipeline.Options{})
	if err != nil {
		return nil, err
	}
	if m.Header.Candidate != nil {
		return r.mergePipeline(ctx, m, p, reg)
	}
	plan := &ReplayPlan{Setup: replay.Setup{Loaded: &run.Loaded{Pipeline: p}, Plugins: reg, Settings: replay.Settings{Seed: m.Header.Seed}},
		Strategies: m.Strategies}
	return r.Judge(ctx, JudgeRequest{Plan: plan, Results: m.Results, Command: "merge"})
}

// NeedStrategy is the error of a command that cannot work on a pipeline
// without a [strategy] block: invalid input, at the pipeline file.
func NeedStrategy(p *pipeline.Pipeline, why string) error {
	return sdk.Invalid(sdk.Problem{File: p.File, Line: 1, Element: "strategy",
		Message: why + `; add [strategy] file = "strategy.toml" (sextant init writes one)`})
}
