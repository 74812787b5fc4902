package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// gatePipeline is gate --candidate-pipeline: the pipeline at path and the
// candidate pipeline (a full one, or an overlay) replayed over path's
// recorded tasks, judged by path's gates (evolve.GatePipeline).
func (a *app) gatePipeline(ctx context.Context, path, candPath string, f *replayFlags) error {
	if err := checkPipelineGate(path, candPath, f); err != nil {
		return err
	}
	rp, err := a.loadReplay(ctx, path, f, false)
	if err != nil {
		return err
	}
	defer rp.setup.Loaded.Close(context.WithoutCancel(ctx))
	base, reg := rp.setup.Loaded.Pipeline, rp.setup.Plugins
	cand, err := run.Load(ctx, candPath, reg, a.logger)
	if err != nil {
		return err
	}
	defer cand.Close(context.WithoutCancel(ctx))
	if err := pipeline.CheckCandidate(base, cand.Pipeline); err != nil {
		return err
	}
	candSetup, st, err := a.candidateSetup(rp, cand, f.onMiss)
	if err != nil {
		return err
	}
	settings := candSetup.Settings
	src, err := a.candidateSource(ctx, base, f, settings.OnMiss)
	if err != nil {
		return err
	}
	opts := evolve.Options{Seed: uint64(settings.Seed), MinFidelity: base.Replay.MinFidelity}
	gates, closeGates, err := evolve.GateChain(ctx, reg, base, opts)
	if err != nil {
		src.close()
		return err
	}
	defer closeGates()
	candCfg := candSetup.Config(src.tasks)
	candCfg.Record = src.record
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	j, err := evolve.GatePipeline(ctx, evolve.PipelineCandidate{Base: rp.setup.Config(src.tasks), Cand: candCfg,
		Baseline: rp.strategies[0], Strategy: st, Pipeline: cand.Pipeline, File: candPath,
		OnResult: func(replay.Result) { progress.Add(1) }}, gates, opts)
	progress.Done()
	src.close() // before the verdict is saved in the same store
	if err != nil {
		return err
	}
	if err := a.saveVerdict(ctx, &verdictTo{store: &f.store, command: "gate"}, base, j); err != nil {
		a.logger.Warn("the verdict is not recorded in the store", "err", err)
	}
	return a.printJudgment(j.Report(base.Name), f.reports)
}

// checkPipelineGate checks gate --candidate-pipeline's flags and files
// before anything is loaded. A candidate pipeline is gated here, whole:
// its live calls share one cost cap and are recorded once, so the flags
// that split a replay or hand it elsewhere are refused with what to do.
func checkPipelineGate(path, candPath string, f *replayFlags) error {
	var given, instead []string
	for _, o := range []struct {
		set        bool
		flag, hint string
	}{
		{f.shard != "", "--shard", "gate it on one machine (--workers N replays in parallel)"},
		{f.results != "", "--results", "keep its outcome with --report json=PATH"},
		{f.temporal.hostPort != "", "--temporal", "gate it here, without --temporal"},
	} {
		if o.set {
			given, instead = append(given, o.flag), append(instead, o.hint)
		}
	}
	if len(given) > 0 {
		return usageErr(fmt.Errorf("%s cannot be used with --candidate-pipeline: a candidate pipeline is gated in one process, whole (its live calls share one max_live_cost_usd and are recorded once); instead, %s",
			strings.Join(given, ", "), strings.Join(instead, "; ")))
	}
	if err := checkReports(f.reports); err != nil {
		return err
	}
	if err := needFile("pipeline", path); err != nil {
		return err
	}
	return needFile("candidate pipeline", candPath)
}

// candidateSetup is how the candidate pipeline replays: the baseline's
// settings with the candidate's on_miss (or --on-miss), and the strategy
// it runs: the live baseline unless it names a strategy file of its own.
func (a *app) candidateSetup(rp *replayPlan, cand *run.Loaded, onMiss string) (replay.Setup, *strategy.Strategy, error) {
	settings := rp.setup.Settings
	if settings.OnMiss = onMiss; onMiss == "" {
		settings.OnMiss = cand.Pipeline.Replay.OnMiss
	}
	setup, err := a.replaySettings(cand, rp.setup.Plugins, settings)
	if err != nil {
		return replay.Setup{}, nil, err
	}
	base := rp.setup.Loaded.Pipeline
	st := cand.Strategy
	if sameFile(base.Path(base.Strategy.File), cand.Pipeline.Path(cand.Pipeline.Strategy.File)) {
		st = rp.strategies[0]
	}
	return setup, st, nil
}

// pipelineSource is what a candidate pipeline's gate reads its tasks from
// and, when its calls may go live, records their answers in (nil: none).
type pipelineSource struct {
	tasks, record *store.Store
}

func (s pipelineSource) close() {
	if s.record != nil && s.record != s.tasks {
		s.record.Close()
	}
	s.tasks.Close()
}

// candidateSource opens the tasks a candidate pipeline replays and, under
// on_miss = live, where the answers of its live calls are recorded for the
// next gate: the pipeline's store, opened writable; for a dataset, the
// store beside its import (replay.OpenDatasetAnswers). Answers that cannot
// be recorded (another gate holds that store) are made and not kept.
func (a *app) candidateSource(ctx context.Context, p *pipeline.Pipeline, f *replayFlags, onMiss string) (pipelineSource, error) {
	if dataset := replay.DatasetOf(p, f.dataset); dataset != "" {
		s, err := replay.OpenDataset(ctx, dataset, replay.CacheDir(), a.logger)
		if err != nil || onMiss != replay.MissLive {
			return pipelineSource{tasks: s}, err
		}
		rec, err := replay.OpenDatasetAnswers(ctx, s, a.logger)
		if err != nil {
			a.logger.Warn("live answers are not recorded", "err", err)
		}
		return pipelineSource{tasks: s, record: rec}, nil
	}
	loc, err := f.store.locate(p)
	if err != nil {
		return pipelineSource{}, err
	}
	if onMiss != replay.MissLive {
		s, err := a.openStoreWith(ctx, loc.dir, readStore, p)
		return pipelineSource{tasks: s}, err
	}
	s, err := a.openStoreWith(ctx, loc.dir, updateStore, p)
	return pipelineSource{tasks: s, record: s}, err
}

// printJudgment prints a judgment's terminal summary and writes its
// reports, and returns its exit status (as judge does).
func (a *app) printJudgment(r *report.Report, specs []string) error {
	summary := a.stdout
	if report.ToStdout(specs) {
		summary = a.stderr
	}
	if err := report.WriteText(summary, r, report.WithColor(colour(summary))); err != nil {
		return err
	}
	if err := report.WriteSpecs(specs, a.stdout, r); err != nil {
		return err
	}
	return verdict(r.ExitCode)
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
