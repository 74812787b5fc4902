package app

import (
	"context"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// GatePipeline is gate --candidate-pipeline: the pipeline at req.Path and
// the candidate pipeline at candPath (a full one, or an overlay) replayed
// over req.Path's recorded tasks, judged by its gates
// (evolve.GatePipeline); the verdict is recorded as sextant gate's.
func (r *Replayer) GatePipeline(ctx context.Context, req ReplayRequest, candPath string) (*report.Report, error) {
	rp, err := r.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rp.Close(ctx)
	base, reg := rp.Setup.Loaded.Pipeline, rp.Setup.Plugins
	cand, err := run.Load(ctx, candPath, reg, r.Logger)
	if err != nil {
		return nil, err
	}
	defer cand.Close(context.WithoutCancel(ctx))
	if err := pipeline.CheckCandidate(base, cand.Pipeline); err != nil {
		return nil, err
	}
	candSetup, st, err := r.candidateSetup(rp, cand, req.Overrides.OnMiss)
	if err != nil {
		return nil, err
	}
	settings := candSetup.Settings
	src, err := r.candidateSource(ctx, base, req, settings.OnMiss)
	if err != nil {
		return nil, err
	}
	defer src.close() // once; an early close frees the store for the verdict
	opts := evolve.Options{Seed: uint64(settings.Seed), MinFidelity: base.Replay.MinFidelity}
	gates, closeGates, err := evolve.GateChain(ctx, reg, base, opts)
	if err != nil {
		return nil, err
	}
	defer closeGates()
	candCfg := candSetup.Config(src.tasks)
	candCfg.Record = src.record
	j, err := evolve.GatePipeline(ctx, evolve.PipelineCandidate{Base: rp.Setup.Config(src.tasks), Cand: candCfg,
		Baseline: rp.Strategies[0], Strategy: st, Pipeline: cand.Pipeline, File: candPath,
		OnResult: func(replay.Result) {
			if req.OnResult != nil {
				req.OnResult()
			}
		}}, gates, opts)
	src.close() // before the verdict is saved in the same store
	if err != nil {
		return nil, err
	}
	r.saveVerdict(ctx, base, req.Store, Verdict{Command: "gate", Judgment: j}, nil)
	return j.Report(base.Name), nil
}

// candidateSetup is how the candidate pipeline replays: the baseline's
// settings with the candidate's on_miss (or --on-miss), and the strategy
// it runs: the live baseline unless it names a strategy file of its own.
func (r *Replayer) candidateSetup(rp *ReplayPlan, cand *run.Loaded, onMiss string) (replay.Setup, *strategy.Strategy, error) {
	settings := rp.Setup.Settings
	if settings.OnMiss = onMiss; onMiss == "" {
		settings.OnMiss = cand.Pipeline.Replay.OnMiss
	}
	setup, err := r.Setup(cand, rp.Setup.Plugins, settings)
	if err != nil {
		return replay.Setup{}, nil, err
	}
	base := rp.Setup.Loaded.Pipeline
	st := cand.Strategy
	if sameFile(base.Path(base.Strategy.File), cand.Pipeline.Path(cand.Pipeline.Strategy.File)) {
		st = rp.Strategies[0]
	}
	return setup, st, nil
}

// pipelineSource is what a candidate pipeline's gate reads its tasks from
// and, when its calls may go live, records their answers in (nil: none);
// close closes them once.
type pipelineSource struct {
	tasks, record *store.Store
	close         func()
}

func newPipelineSource(tasks, record *store.Store) *pipelineSource {
	s := &pipelineSource{tasks: tasks, record: record}
	closed := false
	s.close = func() {
		if closed {
			return
		}
		closed = true
		if s.record != nil && s.record != s.tasks {
			s.record.Close()
		}
		s.tasks.Close()
	}
	return s
}

// candidateSource opens the tasks a candidate pipeline replays and, under
// on_miss = live, where the answers of its live calls are recorded for the
// next gate: the pipeline's store, opened writable; for a dataset, the
// store beside its import (replay.OpenDatasetAnswers). Answers that cannot
// be recorded (another gate holds that store) are made and not kept.
func (r *Replayer) candidateSource(ctx context.Context, p *pipeline.Pipeline, req ReplayRequest, onMiss string) (*pipelineSource, error) {
	if dataset := replay.DatasetOf(p, req.Dataset); dataset != "" {
		s, err := replay.OpenDataset(ctx, dataset, r.CacheDir, r.Logger)
		if err != nil {
			return nil, err
		}
		if onMiss != replay.MissLive {
			return newPipelineSource(s, nil), nil
		}
		rec, err := replay.OpenDatasetAnswers(ctx, s, r.Logger)
		if err != nil {
			r.Logger.Warn("live answers are not recorded", "err", err)
		}
		return newPipelineSource(s, rec), nil
	}
	dir, err := StoreOf(p, req.Store)
	if err != nil {
		return nil, err
	}
	mode := Read
	if onMiss == replay.MissLive {
		mode = Update
	}
	s, err := r.OpenStore(ctx, dir, mode, p)
	if err != nil {
		return nil, err
	}
	if mode == Update {
		return newPipelineSource(s, s), nil
	}
	return newPipelineSource(s, nil), nil
}

// sameFile reports whether two paths name one file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	return errA == nil && errB == nil && x == y
}
