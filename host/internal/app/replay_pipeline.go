package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// GatePipeline is gate --candidate-pipeline: the pipeline at req.Path and
// the candidate pipeline at candPath (a full one, or an overlay) replayed
// over req.Path's recorded tasks, judged by its gates
// (evolve.GatePipeline); the verdict is recorded as sextant gate's. With
// req.Results the results are written for sextant merge too; a shard
// (req.Shards > 0) only writes them, its live calls capped at its share of
// max_live_cost_usd (replay.ShardMax).
func (r *Replayer) GatePipeline(ctx context.Context, req ReplayRequest, candPath string) (*Outcome, error) {
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
	var gates []evolve.GateSpec
	if req.Shards == 0 { // a shard judges nothing: merge runs the gates
		var closeGates func()
		if gates, closeGates, err = evolve.GateChain(ctx, reg, base, opts); err != nil {
			return nil, err
		}
		defer closeGates()
	}
	c := evolve.PipelineCandidate{Base: rp.Setup.Config(src.tasks), Cand: candSetup.Config(src.tasks),
		Baseline: rp.Strategies[0], Strategy: st, Pipeline: cand.Pipeline, File: candPath}
	c.Cand.Record = src.record
	c.Base.Shard, c.Base.Shards, c.Cand.Shard, c.Cand.Shards = req.Shard, req.Shards, req.Shard, req.Shards
	c.Cand.MaxLiveCostUSD = replay.ShardMax(c.Cand.MaxLiveCostUSD, req.Shards)
	out, err := r.candidateResults(req, rp, c)
	if err != nil {
		return nil, err
	}
	c.OnResult = func(res replay.Result, candidate bool) error {
		if req.OnResult != nil {
			req.OnResult()
		}
		return out.add(res, candidate)
	}
	reps, err := evolve.ReplayPipelines(ctx, c)
	src.close() // before the verdict is saved in the same store
	if err != nil {
		out.abort()
		return nil, shardCapError(err, req.Shards)
	}
	if err := out.commit(); err != nil {
		return nil, err
	}
	o := &Outcome{Tasks: len(reps.Base), Strategies: 2, Candidate: candPath, Shard: req.Shard, Shards: req.Shards, Results: req.Results}
	if req.Shards > 0 {
		return o, nil
	}
	j := reps.Judge(ctx, c.Ref(), gates, opts)
	r.saveVerdict(ctx, base, req.Store, Verdict{Command: "gate", Judgment: j}, nil)
	o.Report = j.Report(base.Name)
	return o, nil
}

// shardCapError says, of a shard's replay stopped by its cost cap, that
// the cap was its share of max_live_cost_usd.
func shardCapError(err error, shards int) error {
	if shards > 1 && errors.Is(err, replay.ErrLiveCost) {
		return fmt.Errorf("%w; each of %d shards may spend max_live_cost_usd / %d", err, shards, shards)
	}
	return err
}

// candidateResults is the results file (--results) of c's gate, nil
// without one: the header names the candidate pipeline, its base, and how
// its calls may go live.
func (r *Replayer) candidateResults(req ReplayRequest, rp *ReplayPlan, c evolve.PipelineCandidate) (*resultsOut, error) {
	if req.Results == "" {
		return nil, nil
	}
	s, p := rp.Setup.Settings, c.Pipeline
	ref := &replay.CandidateRef{File: c.File, Digest: p.Digest(), OnMiss: c.Cand.OnMiss,
		MaxLiveCostUSD: p.Replay.MaxLiveCostUSD, ShardMaxUSD: c.Cand.MaxLiveCostUSD, Recorded: c.Cand.Record != nil}
	if p.Overlay != "" {
		abs, err := filepath.Abs(p.File)
		if err != nil {
			return nil, err
		}
		ref.Base = abs
	}
	h := replay.ResultsHeader{Seed: s.Seed, Sample: s.Sample, OnMiss: s.OnMiss, StratifyBy: s.StratifyBy, Candidate: ref}
	if req.Shards > 0 {
		h.Shard = fmt.Sprintf("%d/%d", req.Shard+1, req.Shards)
	}
	files := []string{rp.Files[0], rp.Files[0]}
	if c.Strategy != rp.Strategies[0] {
		files[1] = "" // a pipeline without [strategy]: kept as it encodes
		if p.Strategy.File != "" {
			files[1] = p.Path(p.Strategy.File)
		}
	}
	f, err := replay.CreateResults(req.Results, req.Path, files, []*strategy.Strategy{c.Baseline, c.Strategy}, h)
	if err != nil {
		return nil, err
	}
	return &resultsOut{f}, nil
}

// resultsOut is a results file being written, or none (nil).
type resultsOut struct{ f *replay.ResultsFile }

func (o *resultsOut) add(r replay.Result, candidate bool) error {
	switch {
	case o == nil:
		return nil
	case candidate:
		return o.f.AddCandidate(r)
	}
	return o.f.Add(r)
}

func (o *resultsOut) abort() {
	if o != nil {
		o.f.Abort()
	}
}

func (o *resultsOut) commit() error {
	if o == nil {
		return nil
	}
	return o.f.Commit()
}

// mergePipeline judges the merged shards of a gate --candidate-pipeline
// (m.Header.Candidate) on the gated pipeline p, as the unsharded gate
// judges: the same gates, seed, pairing and live-call listing.
func (r *Replayer) mergePipeline(ctx context.Context, m *replay.Merged, p *pipeline.Pipeline, reg *plugin.Registry) (*report.Report, error) {
	opts := evolve.Options{Seed: uint64(m.Header.Seed), MinFidelity: p.Replay.MinFidelity}
	gates, closeGates, err := evolve.GateChain(ctx, reg, p, opts)
	if err != nil {
		return nil, err
	}
	defer closeGates()
	reps := &evolve.PipelineReplays{}
	for _, res := range m.Results {
		reps.Add(res, false)
	}
	for _, res := range m.Candidate {
		reps.Add(res, true)
	}
	c := m.Header.Candidate
	j := reps.Judge(ctx, evolve.PipelineRef{Baseline: m.Strategies[0], Strategy: m.Strategies[1],
		Candidate: report.CandidatePipeline{File: c.File, Overlay: c.Base != "", Digest: c.Digest},
		OnMiss:    c.OnMiss, MaxLiveCostUSD: c.MaxLiveCostUSD, Recorded: c.Recorded}, gates, opts)
	r.saveVerdict(ctx, p, "", Verdict{Command: "merge", Judgment: j}, nil)
	return j.Report(p.Name), nil
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
