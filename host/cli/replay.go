package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/buildinfo"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

type replayFlags struct {
	strategies []string
	dataset    string
	sample     int
	workers    int
	seed       int64
	onMiss     string
	shard      string
	shardTotal int
	reports    []string
	results    string
	store      storeFlags
	temporal   replayTemporalFlags
}

func (f *replayFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.dataset, "dataset", "", "JSONL dataset to replay (default: the pipeline's [replay] dataset, else its store)")
	c.Flags().IntVar(&f.sample, "sample", -1, "replay at most N tasks (stratified, seeded; default: [replay] sample, else all)")
	c.Flags().IntVar(&f.workers, "workers", 0, "parallel workers (default: [replay] workers)")
	c.Flags().Int64Var(&f.seed, "seed", 0, "sampling and bootstrap seed (default: [replay] seed)")
	c.Flags().StringVar(&f.onMiss, "on-miss", "", "a call with no recording: fail, skip or live (default: [replay] on_miss)")
	c.Flags().StringVar(&f.shard, "shard", "", "I/N: replay only shard I of N (1-based) and write --results for sextant merge; auto: from the CI engine (JOB_COMPLETION_INDEX, CI_NODE_INDEX/CI_NODE_TOTAL)")
	c.Flags().IntVar(&f.shardTotal, "shard-total", 0, "with --shard auto under a Kubernetes Indexed Job: the number of shards (default $SEXTANT_SHARD_TOTAL)")
	c.Flags().StringArrayVar(&f.reports, "report", nil, "FORMAT=PATH: json, junit, md, html or text; PATH - is stdout (repeatable)")
	c.Flags().StringVar(&f.results, "results", "", "write per-task results (JSONL) for sextant merge")
	f.store.add(c, false)
}

// overrides are the replay settings the flags give.
func (f *replayFlags) overrides() replay.Overrides {
	return replay.Overrides{Sample: f.sample, Workers: f.workers, Seed: f.seed, OnMiss: f.onMiss}
}

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay PIPELINE",
		Short: "Replay recorded tasks under the baseline (and candidate strategies), sandboxed and offline",
		Long:  help("replay"),
		Example: `  sextant replay pipelines/email-triage/pipeline.toml
  sextant replay pipelines/email-triage/pipeline.toml --strategy candidate.toml --report junit=gates.xml --report md=summary.md
  sextant replay pipeline.toml --strategy candidate.toml --shard 1/4 --results shard1.jsonl
  JOB_COMPLETION_INDEX=0 sextant replay pipeline.toml --shard auto --shard-total 4 --results shard-0.jsonl
  sextant replay pipeline.toml --strategy candidate.toml --temporal temporal.example.com:7233 --task-queue sextant --report json=report.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.replayAndJudge(cmd.Context(), args[0], &f, false)
		},
	}
	c.Flags().StringArrayVar(&f.strategies, "strategy", nil, "candidate strategy file (repeatable; the first is reported)")
	f.add(c)
	f.temporal.add(c)
	a.addTelemetryFlag(c)
	return c
}

func (a *app) gateCommand() *cobra.Command {
	var f replayFlags
	var candidate, candPipeline string
	c := &cobra.Command{
		Use:   "gate PIPELINE --candidate FILE | --candidate-pipeline FILE",
		Short: "Replay, compare and run the gate chain on a candidate strategy or a candidate pipeline",
		Long:  help("gate"),
		Example: `  sextant gate pipelines/email-triage/pipeline.toml --candidate pipelines/email-triage/candidates/regressing.toml
  sextant gate pipeline.toml --candidate cand.toml --report junit=gates.xml --report html=report.html
  sextant gate pipeline.toml --candidate-pipeline candidates/gpt-4o.toml --on-miss live`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if candPipeline != "" {
				return a.gatePipeline(cmd.Context(), args[0], candPipeline, &f)
			}
			f.strategies = []string{candidate}
			return a.replayAndJudge(cmd.Context(), args[0], &f, true)
		},
	}
	c.Flags().StringVar(&candidate, "candidate", "", "candidate strategy file (or --candidate-pipeline)")
	c.Flags().StringVar(&candPipeline, "candidate-pipeline", "", "candidate pipeline file: a full pipeline or an overlay of changed keys")
	c.MarkFlagsOneRequired("candidate", "candidate-pipeline")
	c.MarkFlagsMutuallyExclusive("candidate", "candidate-pipeline")
	f.add(c)
	f.temporal.add(c)
	return c
}

// replayAndJudge replays and, with a candidate, compares and gates; a
// shard only collects its results for sextant merge.
func (a *app) replayAndJudge(ctx context.Context, path string, f *replayFlags, needCandidate bool) error {
	shard, shards, err := a.checkReplayFlags(f)
	if err != nil {
		return err
	}
	if err := needFile("pipeline", path); err != nil {
		return err
	}
	for _, st := range f.strategies {
		if err := needFile("strategy", st); err != nil {
			return err
		}
	}
	rp, err := a.loadReplay(ctx, path, f, needCandidate)
	if err != nil {
		return err
	}
	defer rp.setup.Loaded.Close(context.WithoutCancel(ctx))
	if f.temporal.hostPort != "" {
		return a.replayOnTemporal(ctx, path, f, rp, replayCommandName(needCandidate))
	}
	rc, cleanup, err := a.replaySetup(ctx, rp.setup, f)
	if err != nil {
		return err
	}
	defer cleanup()
	rc.Strategies, rc.Shard, rc.Shards = rp.strategies, shard, shards
	kept, err := a.replayInto(ctx, rc, f.results, path, rp, shards)
	if err != nil {
		return err
	}
	if shards > 0 {
		fmt.Fprintf(a.stdout, "shard %d/%d: %d tasks replayed under %d strategies, results in %s\n", shard+1, shards, kept.Tasks, len(rp.strategies), f.results)
		fmt.Fprintf(a.stdout, "no verdict from a shard: judge the whole with sextant merge\n")
		return nil
	}
	return a.judge(ctx, rp.setup.Plugins, rp.setup.Loaded.Pipeline, rp.strategies, kept.Results, rp.setup.Settings.Seed, f.reports,
		&verdictTo{store: &f.store, command: replayCommandName(needCandidate), kept: kept})
}

// checkReplayFlags checks the flags of replay and gate before any work,
// and resolves --shard.
func (a *app) checkReplayFlags(f *replayFlags) (shard, shards int, err error) {
	if f.temporal.hostPort != "" {
		if err := a.checkReplayTemporal(f); err != nil {
			return 0, 0, err
		}
	}
	if shard, shards, err = replay.ResolveShard(f.shard, f.shardTotal, os.Getenv); err != nil {
		return 0, 0, usageErr(err)
	}
	if shards > 0 && f.results == "" {
		return 0, 0, usageErr(errors.New("--shard needs --results FILE: a shard collects results for sextant merge, which judges them"))
	}
	if shards > 0 && len(f.reports) > 0 {
		return 0, 0, usageErr(errors.New("--report with --shard: a shard holds part of the tasks; pass --report to sextant merge, which judges the whole"))
	}
	return shard, shards, checkReports(f.reports)
}

// replayPlan is what replay or gate replays: the pipeline loaded (the
// caller closes it), and the strategies, baseline first, with their files
// ("" for the empty strategy of a pipeline without one).
type replayPlan struct {
	setup      replay.Setup
	strategies []*strategy.Strategy
	files      []string
}

// loadReplay loads the pipeline at path (following its live version) and
// the candidate strategies, and settles the replay's settings.
func (a *app) loadReplay(ctx context.Context, path string, f *replayFlags, needCandidate bool) (*replayPlan, error) {
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	loaded, err := run.Load(ctx, path, reg, a.logger)
	if err != nil {
		return nil, err
	}
	rp, err := a.planReplay(ctx, loaded, reg, f, needCandidate)
	if err != nil {
		loaded.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return rp, nil
}

func (a *app) planReplay(ctx context.Context, loaded *run.Loaded, reg *plugin.Registry, f *replayFlags, needCandidate bool) (*replayPlan, error) {
	if _, err := a.followLiveLoaded(ctx, loaded, f.store.dir); err != nil {
		return nil, err
	}
	p := loaded.Pipeline
	rp := &replayPlan{strategies: []*strategy.Strategy{loaded.Strategy}, files: []string{p.Path(p.Strategy.File)}}
	if p.Strategy.File == "" {
		if needCandidate {
			return nil, needStrategy(p, "gate compares a candidate with the pipeline's strategy")
		}
		rp.files[0] = "" // the empty strategy: no file
	}
	for _, sf := range f.strategies {
		st, err := strategy.Load(sf)
		if err != nil {
			return nil, err
		}
		rp.strategies, rp.files = append(rp.strategies, st), append(rp.files, sf)
	}
	if needCandidate && len(rp.strategies) < 2 {
		return nil, usageErr(errors.New("--candidate is required"))
	}
	settings, err := replay.NewSettings(p, f.overrides())
	if err != nil {
		return nil, usageErr(err)
	}
	if rp.setup, err = a.replaySettings(loaded, reg, settings); err != nil {
		return nil, err
	}
	return rp, nil
}

// replaySettings is how this command replays loaded with settings:
// credentials only for a live replay, the result cache in sextant's cache.
func (a *app) replaySettings(loaded *run.Loaded, reg *plugin.Registry, settings replay.Settings) (replay.Setup, error) {
	opts, err := replay.PrepareOptions(loaded.Pipeline, settings.OnMiss)
	if err != nil {
		return replay.Setup{}, err
	}
	return replay.Setup{Loaded: loaded, Plugins: reg, Settings: settings, Prepare: opts, Version: buildinfo.Identity(version),
		CacheDir: replay.CacheDir(), Logger: a.logger}, nil
}

// replayInto runs the replay rc, writing its results to the file results
// when named, with progress on a terminal's stderr (never in CI logs).
func (a *app) replayInto(ctx context.Context, rc replay.Config, results, path string, rp *replayPlan, shards int) (*evolve.Kept, error) {
	var out *replay.ResultsFile
	if results != "" {
		s := rp.setup.Settings
		h := replay.ResultsHeader{Seed: s.Seed, Sample: s.Sample, OnMiss: s.OnMiss, StratifyBy: s.StratifyBy}
		if shards > 0 {
			h.Shard = fmt.Sprintf("%d/%d", rc.Shard+1, shards)
		}
		var err error
		if out, err = replay.CreateResults(results, path, rp.files, rp.strategies, h); err != nil {
			return nil, err
		}
	}
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	rc.OnSelected = func(tasks int) { progress.SetTotal(tasks * len(rc.Strategies)) }
	kept, err := evolve.Collect(ctx, rc, out, shards > 0, func(replay.Result) { progress.Add(1) })
	progress.Done()
	return kept, err
}

// verdictTo says where a judgment with a candidate is recorded: the
// store the storeFlags locate for the pipeline, when it exists.
type verdictTo struct {
	store   *storeFlags
	command string
	kept    *evolve.Kept // nil: no outputs or tool calls kept
}

// saveVerdict records j in the pipeline's store (app.SaveVerdict).
func (a *app) saveVerdict(ctx context.Context, to *verdictTo, p *pipeline.Pipeline, j *evolve.Judgment) error {
	loc, err := to.store.locate(p)
	if err != nil {
		return err
	}
	v := layer.Verdict{Store: loc.dir, Command: to.command, Pipeline: p.Name, Judgment: j}
	if to.kept != nil {
		v.Output = to.kept.Output
	}
	return layer.SaveVerdict(ctx, v, a.logger)
}

// replaySetup opens what a replay reads (the source) and exports its
// spans when asked, and returns the replay configuration (without
// strategies) and what closes them.
func (a *app) replaySetup(ctx context.Context, setup replay.Setup, f *replayFlags) (replay.Config, func(), error) {
	src, cleanup, err := a.replaySource(ctx, setup.Loaded.Pipeline, f)
	if err != nil {
		return replay.Config{}, nil, err
	}
	rc := setup.Config(src)
	exp, err := a.telemetry(ctx, src)
	if err != nil {
		cleanup()
		return replay.Config{}, nil, err
	}
	if exp != nil {
		rc.OnSpans = exp.Spans
		done := cleanup
		cleanup = func() {
			a.shutdownTelemetry(ctx, exp)
			done()
		}
	}
	return rc, cleanup, nil
}

// replaySource opens what to replay: a dataset imported once into a cache
// store keyed by its content, or the pipeline's own store, read-only (a
// replay never writes the tasks it replays, and Badger's writable open
// maps, and faults in, every value-log file).
func (a *app) replaySource(ctx context.Context, p *pipeline.Pipeline, f *replayFlags) (*store.Store, func(), error) {
	var s *store.Store
	if dataset := replay.DatasetOf(p, f.dataset); dataset != "" {
		var err error
		if s, err = replay.OpenDataset(ctx, dataset, replay.CacheDir(), a.logger); err != nil {
			return nil, nil, err
		}
	} else {
		loc, err := f.store.locate(p)
		if err != nil {
			return nil, nil, err
		}
		if s, err = a.openStoreWith(ctx, loc.dir, readStore, p); err != nil {
			return nil, nil, err
		}
	}
	// Safe to call twice: evolve closes it before it settles, then defers.
	return s, sync.OnceFunc(func() { s.Close() }), nil
}

func (a *app) mergeCommand() *cobra.Command {
	var reports []string
	c := &cobra.Command{
		Use:   "merge RESULT...",
		Short: "Combine sharded replay results and judge them, as an unsharded replay does",
		Long:  help("merge"),
		Example: `  sextant merge shard1.jsonl shard2.jsonl --report json=report.json
  sextant merge results/*.jsonl --report junit=gates.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.merge(cmd.Context(), args, reports)
		},
	}
	c.Flags().StringArrayVar(&reports, "report", nil, "FORMAT=PATH: json, junit, md, html or text; PATH - is stdout (repeatable)")
	return c
}

func (a *app) merge(ctx context.Context, files, reports []string) error {
	if err := checkReports(reports); err != nil {
		return err
	}
	m, err := replay.MergeFiles(files)
	if err != nil {
		return withInvalid(err)
	}
	reg, err := a.registry(filepath.Dir(m.Header.Pipeline))
	if err != nil {
		return err
	}
	p, err := pipeline.Load(ctx, m.Header.Pipeline, reg, pipeline.Options{})
	if err != nil {
		return err
	}
	return a.judge(ctx, reg, p, m.Strategies, m.Results, m.Header.Seed, reports, &verdictTo{store: &storeFlags{}, command: "merge"})
}

// judge judges replay results (evolve.JudgeReplay), records a comparison
// in the store, prints the terminal summary, writes the reports and
// returns the verdict's exit status.
func (a *app) judge(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, strategies []*strategy.Strategy,
	results []replay.Result, seed int64, specs []string, to *verdictTo) error {
	var kept *evolve.Kept
	if to != nil {
		kept = to.kept
	}
	j, r, err := evolve.JudgeReplay(ctx, reg, p, strategies, results, seed, kept)
	if err != nil {
		return err
	}
	if len(strategies) > 1 && to != nil {
		if err := a.saveVerdict(ctx, to, p, j); err != nil {
			a.logger.Warn("the verdict is not recorded in the store", "err", err)
		}
	}
	return a.printJudgment(r, specs)
}

// checkReports checks --report FORMAT=PATH specs (report.CheckSpecs).
func checkReports(specs []string) error {
	if err := report.CheckSpecs(specs); err != nil {
		return usageErr(err)
	}
	return nil
}

// verdict ends a command with the exit code of a verdict already printed.
func verdict(code int) error {
	if code == ExitOK {
		return nil
	}
	return withCode(code, errSilent)
}

// colour: only on a terminal, never with NO_COLOR.
func colour(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && isTerminal(w)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
