package cli

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/buildinfo"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
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
	c.Flags().IntVar(&f.sample, "sample", -1, "replay at most N tasks (stratified, seeded; 0: all; default: [replay] sample, else all)")
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
  sextant gate pipeline.toml --candidate-pipeline candidates/gpt-4o.toml --on-miss live
  sextant gate pipeline.toml --candidate-pipeline candidates/gpt-4o.toml --on-miss live --shard 1/2 --results shard-1.jsonl`,
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

// replayAndJudge replays and, with a candidate, compares and gates
// (app.Replayer.Replay); a shard only collects its results for sextant
// merge.
func (a *app) replayAndJudge(ctx context.Context, path string, f *replayFlags, gate bool) error {
	shard, shards, err := a.replayChecks(f, path).Check(os.Getenv)
	if err != nil {
		return err
	}
	a.warnTemporalSpans(f)
	if err := needFile("pipeline", path); err != nil {
		return err
	}
	for _, st := range f.strategies {
		if err := needFile("strategy", st); err != nil {
			return err
		}
	}
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	out, err := a.replayer().Replay(ctx, layer.ReplayRequest{Path: path, Candidates: f.strategies, Gate: gate,
		Overrides: f.overrides(), Dataset: f.dataset, Store: f.store.dir, Shard: shard, Shards: shards, Results: f.results,
		Temporal: layer.TemporalReplay{Addr: f.temporal.hostPort, Namespace: f.temporal.namespace, Queue: f.temporal.taskQueue, Shards: f.temporal.shards},
		OnTotal:  progress.SetTotal, OnResult: func() { progress.Add(1) }})
	progress.Done()
	if err != nil {
		return err
	}
	return a.printOutcome(out, f.reports)
}

// replayChecks are the flags of replay and gate checked before any
// work (app.ReplayFlags), with the files they read.
func (a *app) replayChecks(f *replayFlags, files ...string) *layer.ReplayFlags {
	return &layer.ReplayFlags{Shard: f.shard, ShardTotal: f.shardTotal, Results: f.results, Reports: f.reports, Files: append(append(files, f.strategies...), f.dataset),
		Temporal: f.temporal.hostPort, TemporalShards: f.temporal.shards, OTLP: a.otlpEndpoint != ""}
}

// replayer is how this CLI replays: its plugins, stores, live versions,
// telemetry and build.
func (a *app) replayer() *layer.Replayer {
	return &layer.Replayer{Registry: a.registry, FollowLive: a.followLiveLoaded, Telemetry: a.telemetry,
		OpenStore: a.openStoreWith, Version: buildinfo.Identity(version), CacheDir: replay.CacheDir(), Logger: a.logger}
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

// merge judges sharded results (app.Replayer.Merge) and prints the
// judgment.
func (a *app) merge(ctx context.Context, files, reports []string) error {
	if err := layer.CheckReports(reports, files...); err != nil {
		return err
	}
	r, err := a.replayer().Merge(ctx, files)
	if err != nil {
		return err
	}
	return a.printOutcome(&layer.Outcome{Report: r}, reports)
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
