package cli

import (
	"context"
	"fmt"
	"os"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/report"
)

// gatePipeline is gate --candidate-pipeline (app.Replayer.GatePipeline):
// the pipeline at path and the candidate pipeline (a full one, or an
// overlay) replayed over path's recorded tasks, judged by path's gates.
func (a *app) gatePipeline(ctx context.Context, path, candPath string, f *replayFlags) error {
	shard, shards, err := a.replayChecks(f, path, candPath).CheckCandidate(os.Getenv)
	if err != nil {
		return err
	}
	if err := needFile("pipeline", path); err != nil {
		return err
	}
	if err := needFile("candidate pipeline", candPath); err != nil {
		return err
	}
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	out, err := a.replayer().GatePipeline(ctx, layer.ReplayRequest{Path: path, Overrides: f.overrides(), Dataset: f.dataset,
		Store: f.store.dir, Shard: shard, Shards: shards, Results: f.results, OnResult: func() { progress.Add(1) }}, candPath)
	progress.Done()
	if err != nil {
		return err
	}
	return a.printOutcome(out, f.reports)
}

// printOutcome prints a shard's summary, or a judgment's terminal summary
// and reports (the --report specs) and returns the verdict's exit status.
func (a *app) printOutcome(out *layer.Outcome, specs []string) error {
	if out.Report == nil {
		_, err := fmt.Fprint(a.stdout, out.ShardSummary())
		return err
	}
	r, summary := out.Report, a.stdout
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
