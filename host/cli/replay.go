package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
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

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay PIPELINE",
		Short: "Replay recorded tasks under the baseline (and candidate strategies), sandboxed and offline",
		Long: `replay re-runs recorded tasks with every outside call served from the task's
recordings (exact canonical-hash match), recorded human answers and the task's
recorded clock. Under the strategy a task was recorded with, the replay must
reproduce its trace; the report names the first divergence otherwise.

With --strategy, each task is also replayed under the candidate, the two are
compared with paired statistics, and the pipeline's gates judge the candidate.
Exit status: 0 pass, 1 a gate failed or a self-replay diverged, 2 invalid
input, 3 a gate asks for review.

With --shard I/N (or --shard auto in a Kubernetes Indexed Job or GitLab
parallel job) the replay covers one shard of the tasks and only collects:
it writes --results and exits 0 unless it could not produce them; sextant
merge judges the shards together.

With --temporal HOST:PORT the replay fans out as --temporal-shards
activities over the sextant workers polling --task-queue (each replays its
shard from its own checkout of the project, checked against this one's),
and replay judges the whole here: the same reports and exit status as a
local replay.`,
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
	var candidate string
	c := &cobra.Command{
		Use:   "gate PIPELINE --candidate FILE",
		Short: "Replay, compare and run the gate chain on a candidate strategy",
		Long: `gate replays the recorded tasks under the pipeline's strategy and the
candidate, compares them with paired statistics (McNemar's exact test and
paired bootstrap intervals) and evaluates every gate of the pipeline.
Exit status: 0 pass, 1 a gate failed, 2 invalid input, 3 review needed.`,
		Example: `  sextant gate pipelines/email-triage/pipeline.toml --candidate pipelines/email-triage/candidates/regressing.toml
  sextant gate pipeline.toml --candidate cand.toml --report junit=gates.xml --report html=report.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.strategies = []string{candidate}
			return a.replayAndJudge(cmd.Context(), args[0], &f, true)
		},
	}
	c.Flags().StringVar(&candidate, "candidate", "", "candidate strategy file (required)")
	_ = c.MarkFlagRequired("candidate")
	f.add(c)
	f.temporal.add(c)
	return c
}

// replayAndJudge replays and, with a candidate, compares and gates; a
// shard only collects its results for sextant merge.
func (a *app) replayAndJudge(ctx context.Context, path string, f *replayFlags, needCandidate bool) error {
	if f.temporal.hostPort != "" {
		if err := a.checkReplayTemporal(f); err != nil {
			return err
		}
	}
	shard, shards, err := replay.ResolveShard(f.shard, f.shardTotal, os.Getenv)
	if err != nil {
		return usageErr(err)
	}
	if shards > 0 {
		if f.results == "" {
			return usageErr(errors.New("--shard needs --results FILE: a shard collects results for sextant merge, which judges them"))
		}
		if len(f.reports) > 0 {
			return usageErr(errors.New("--report with --shard: a shard holds part of the tasks; pass --report to sextant merge, which judges the whole"))
		}
	}
	if err := checkReports(f.reports); err != nil {
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
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return err
	}
	loaded, err := run.Load(ctx, path, reg, a.logger)
	if err != nil {
		return err
	}
	defer loaded.Close(context.WithoutCancel(ctx))
	if _, err := a.followLiveLoaded(ctx, loaded, f.store.dir); err != nil {
		return err
	}
	p := loaded.Pipeline
	strategies := []*strategy.Strategy{loaded.Strategy}
	files := []string{p.Path(p.Strategy.File)}
	if p.Strategy.File == "" {
		if needCandidate {
			return needStrategy(p, "gate compares a candidate with the pipeline's strategy")
		}
		files[0] = "" // the empty strategy: no file
	}
	for _, sf := range f.strategies {
		st, err := strategy.Load(sf)
		if err != nil {
			return err
		}
		strategies, files = append(strategies, st), append(files, sf)
	}
	if needCandidate && len(strategies) < 2 {
		return usageErr(errors.New("--candidate is required"))
	}
	cfg, err := a.replayConfig(p, f)
	if err != nil {
		return err
	}
	prepOpts, err := replayCredentials(p, cfg.OnMiss)
	if err != nil {
		return err
	}
	if f.temporal.hostPort != "" {
		return a.replayOnTemporal(ctx, path, f, loaded, reg, strategies, files, cfg, replayCommandName(needCandidate))
	}
	rc, cleanup, err := a.replaySetup(ctx, loaded, reg, f, cfg, prepOpts)
	if err != nil {
		return err
	}
	defer cleanup()
	rc.Strategies, rc.Shard, rc.Shards = strategies, shard, shards
	var results []replay.Result
	var out *replay.ResultsFile
	if f.results != "" {
		h := replay.ResultsHeader{Seed: cfg.Seed, Sample: cfg.Sample, OnMiss: cfg.OnMiss, StratifyBy: cfg.StratifyBy}
		if shards > 0 {
			h.Shard = fmt.Sprintf("%d/%d", shard+1, shards)
		}
		if out, err = replay.CreateResults(f.results, path, files, strategies, h); err != nil {
			return err
		}
		defer out.Abort() // no partial results for merge to judge
	}
	// Progress on stderr, on a terminal only (never in CI logs).
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	rc.OnSelected = func(n int) { progress.SetTotal(n * len(strategies)) }
	tasks := map[string]struct{}{}
	outputs := map[string]json.RawMessage{}
	calls := map[string][]run.ToolCall{}
	err = replay.Run(ctx, rc, func(r replay.Result) error {
		progress.Add(1)
		tasks[r.Task] = struct{}{}
		if out != nil {
			if err := out.Add(r); err != nil {
				return err
			}
		}
		// Judging needs the outcome, not the task's output, tags and tool
		// calls: keep each result small, so 100 000 tasks fit in a bounded
		// heap. The stored verdict and the reports show flipped tasks'
		// outputs and tool calls: keep them (outputs clipped) up to a bound.
		if len(strategies) > 1 && len(outputs) < maxKeptOutputs {
			if b, ok := evolve.ClipOutput(r.Output); ok {
				outputs[r.Task+"\x00"+r.Hash] = b
			}
		}
		if len(strategies) > 1 && len(r.ToolCalls) > 0 && len(calls) < maxKeptOutputs {
			calls[r.Task+"\x00"+r.Hash] = r.ToolCalls
		}
		r.Output, r.Tags, r.ToolCalls = nil, nil, nil
		if shards == 0 {
			results = append(results, r)
		}
		return nil
	})
	progress.Done()
	if err != nil {
		return err
	}
	if out != nil {
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if shards > 0 {
		fmt.Fprintf(a.stdout, "shard %d/%d: %d tasks replayed under %d strategies, results in %s\n", shard+1, shards, len(tasks), len(strategies), f.results)
		fmt.Fprintf(a.stdout, "no verdict from a shard: judge the whole with sextant merge\n")
		return nil
	}
	command := "replay"
	if needCandidate {
		command = "gate"
	}
	return a.judge(ctx, reg, p, strategies, results, cfg.Seed, f.reports, &verdictTo{store: &f.store, command: command, outputs: outputs, calls: calls})
}

// maxKeptOutputs bounds the replay outputs kept for a stored verdict.
const maxKeptOutputs = 20000

// verdictTo says where a judgment with a candidate is recorded: the
// store the storeFlags locate for the pipeline, when it exists.
type verdictTo struct {
	store   *storeFlags
	command string
	outputs map[string]json.RawMessage // task \x00 strategy hash → output
	calls   map[string][]run.ToolCall  // task \x00 strategy hash → tool calls
}

// saveVerdict records j in the pipeline's store, through the server that
// holds it if one does. A replay without a store records nothing.
func (a *app) saveVerdict(ctx context.Context, to *verdictTo, p *pipeline.Pipeline, j *evolve.Judgment) error {
	loc, err := to.store.locate(p)
	if err != nil {
		return err
	}
	if _, err := os.Stat(loc.dir); err != nil {
		return nil
	}
	output := func(task, hash string) (json.RawMessage, bool) {
		b, ok := to.outputs[task+"\x00"+hash]
		return b, ok
	}
	s, err := a.openStore(ctx, loc.dir, updateStore)
	if err != nil {
		srv, err := serve.ViaServer(loc.dir, err)
		if err != nil {
			return err
		}
		v, err := evolve.NewVerdict(j, to.command, p.Name, "", time.Now(), output)
		if err != nil {
			return err
		}
		return srv.SaveComparison(ctx, v)
	}
	defer s.Close()
	v, err := evolve.NewVerdict(j, to.command, p.Name, s.NewID(), s.Now(), output)
	if err != nil {
		return err
	}
	return evolve.SaveVerdict(ctx, s, v)
}

// replaySetup opens what a replay reads (the source) and its result cache,
// and returns the replay configuration (without strategies).
//
// Its workers open their plugins from loaded: the pipeline, strategy and
// routine are read and validated once per command, not once per worker.
func (a *app) replaySetup(ctx context.Context, loaded *run.Loaded, reg *plugin.Registry, f *replayFlags, cfg effective, prepOpts []run.PrepareOption) (replay.Config, func(), error) {
	p := loaded.Pipeline
	src, cleanup, err := a.replaySource(ctx, p, f)
	if err != nil {
		return replay.Config{}, nil, err
	}
	rc := a.replayOver(src, loaded, reg, cfg, prepOpts)
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

// replayOver is the replay configuration over the recorded tasks of src;
// its workers open their plugins from loaded.
func (a *app) replayOver(src *store.Store, loaded *run.Loaded, reg *plugin.Registry, cfg effective, prepOpts []run.PrepareOption) replay.Config {
	p := loaded.Pipeline
	cache, err := replay.OpenDirCache(filepath.Join(replay.CacheDir(), "replay-cache"))
	if err != nil {
		a.logger.Warn("replay result cache off", "err", err)
		cache = nil
	}
	rc := replay.Config{Source: src, Pipeline: p.Name, OnMiss: cfg.OnMiss, Workers: cfg.Workers, MaxLiveCostUSD: p.Replay.MaxLiveCostUSD,
		Sample: cfg.Sample, StratifyBy: cfg.StratifyBy, Seed: cfg.Seed, Logger: a.logger,
		Plugins: reg, Version: buildIdentity(), Prepare: func(ctx context.Context) (*run.Prepared, error) {
			return loaded.Open(ctx, prepOpts...)
		}}
	if cache != nil {
		rc.Cache = cache
	}
	return rc
}

func (a *app) mergeCommand() *cobra.Command {
	var reports []string
	c := &cobra.Command{
		Use:   "merge RESULT...",
		Short: "Combine sharded replay results and judge them, as an unsharded replay does",
		Long: `merge reads the results files of the shards of one replay (replay --shard
I/N --results FILE), checks that every shard 1..N is there exactly once and that
all replayed the same pipeline, strategies and settings, and judges the whole:
the same fidelity, comparison, gates, reports and exit status as one unsharded
replay. Exit status: 0 pass, 1 a gate failed or a self-replay diverged,
2 invalid or incomplete input, 3 a gate asks for review.`,
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

type effective struct {
	Sample, Workers int
	Seed            int64
	OnMiss          string
	StratifyBy      string
}

func (a *app) replayConfig(p *pipeline.Pipeline, f *replayFlags) (effective, error) {
	e := effective{Sample: p.Replay.Sample, Workers: p.Replay.Workers, Seed: p.Replay.Seed, OnMiss: p.Replay.OnMiss, StratifyBy: p.Replay.StratifyBy}
	if f.sample >= 0 {
		e.Sample = f.sample
	}
	if f.workers > 0 {
		e.Workers = f.workers
	}
	if f.seed != 0 {
		e.Seed = f.seed
	}
	if f.onMiss != "" {
		switch f.onMiss {
		case replay.MissFail, replay.MissSkip, replay.MissLive:
			e.OnMiss = f.onMiss
		default:
			return e, usageErr(fmt.Errorf("--on-miss: %q is not fail, skip or live", f.onMiss))
		}
	}
	return e, nil
}

// replaySource opens what to replay: a dataset imported once into a cache
// store keyed by its content, or the pipeline's own store.
func (a *app) replaySource(ctx context.Context, p *pipeline.Pipeline, f *replayFlags) (*store.Store, func(), error) {
	dataset := f.dataset
	if dataset == "" && p.Replay.Dataset != "" {
		dataset = p.Path(p.Replay.Dataset)
	}
	if dataset == "" {
		// Read-only: a replay never writes the tasks it replays, and Badger's
		// writable open maps (and faults in) every value-log file.
		loc, err := f.store.locate(p)
		if err != nil {
			return nil, nil, err
		}
		s, err := a.openStoreWith(ctx, loc.dir, readStore, p)
		if err != nil {
			return nil, nil, err
		}
		return s, once(func() { s.Close() }), nil
	}
	s, err := replay.OpenDataset(ctx, dataset, replay.CacheDir(), a.logger)
	if err != nil {
		return nil, nil, err
	}
	return s, once(func() { s.Close() }), nil
}

// once makes a cleanup safe to call twice (explicitly, then deferred).
func once(f func()) func() {
	var done bool
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

var identity = sync.OnceValue(func() string {
	if version != "dev" {
		return version
	}
	// A development build has no version to tell it from the next one: its
	// own bytes identify it.
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				return "dev+" + hex.EncodeToString(h.Sum(nil)[:12])
			}
		}
	}
	return "dev+unidentified-" + strconv.Itoa(os.Getpid()) // never matches another process's cache
})

// buildIdentity names this sextant build for the replay result cache: the
// release version, or a hash of the executable for development builds.
func buildIdentity() string { return identity() }

// judge judges replay results (evolve.Judge), prints the terminal summary,
// writes the reports and returns the verdict's exit status.
func (a *app) judge(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, strategies []*strategy.Strategy,
	results []replay.Result, seed int64, specs []string, to *verdictTo) error {
	opts := evolve.Options{Seed: uint64(seed), MinFidelity: p.Replay.MinFidelity}
	var cand *strategy.Strategy
	var gates []evolve.GateSpec
	if len(strategies) > 1 {
		cand = strategies[1]
		var closeGates func()
		var err error
		if gates, closeGates, err = evolve.GateChain(ctx, reg, p, opts); err != nil {
			return err
		}
		defer closeGates()
	}
	j := evolve.Judge(ctx, results, strategies[0], cand, gates, opts)
	if to != nil && to.calls != nil {
		j.SetToolCalls(func(task, hash string) []run.ToolCall { return to.calls[task+"\x00"+hash] })
	}
	if cand != nil && to != nil {
		if err := a.saveVerdict(ctx, to, p, j); err != nil {
			a.logger.Warn("the verdict is not recorded in the store", "err", err)
		}
	}
	r := j.Report(p.Name)
	if cand == nil {
		for _, g := range p.Gates {
			r.GatesNotRun = append(r.GatesNotRun, g.Use)
		}
	}
	// A report written to stdout (FORMAT=-) has stdout to itself: the
	// summary for people goes to stderr.
	summary := a.stdout
	for _, spec := range specs {
		if _, path, _ := report.ParseSpec(spec); path == "-" {
			summary = a.stderr
		}
	}
	if err := report.WriteText(summary, r, report.WithColor(colour(summary))); err != nil {
		return err
	}
	for _, spec := range specs {
		format, path, _ := report.ParseSpec(spec)
		write, err := report.Lookup(format)
		if err != nil {
			return usageErr(err)
		}
		if path == "-" {
			if err := write(a.stdout, r); err != nil {
				return err
			}
			continue
		}
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(file, r); err != nil {
			file.Close()
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
	}
	return verdict(r.ExitCode)
}

// checkReports checks --report FORMAT=PATH specs: known formats, and at
// most one written to stdout (PATH "-").
func checkReports(specs []string) error {
	var toStdout []string
	for _, spec := range specs {
		_, path, err := report.ParseSpec(spec)
		if err != nil {
			return usageErr(fmt.Errorf("--report: %w", err))
		}
		if path == "-" {
			toStdout = append(toStdout, spec)
		}
	}
	if len(toStdout) > 1 {
		return usageErr(fmt.Errorf("--report: %s all ask for stdout; only one report may go to stdout (-), write the others to files", strings.Join(toStdout, ", ")))
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
