package cli

import (
	"context"
	"fmt"
	layer "github.com/sextant-dev/sextant/host/internal/app"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/report"
)

// gatePipeline is gate --candidate-pipeline (app.Replayer.GatePipeline):
// the pipeline at path and the candidate pipeline (a full one, or an
// overlay) replayed over path's recorded tasks, judged by path's gates.
func (a *app) gatePipeline(ctx context.Context, path, candPath string, f *replayFlags) error {
	if err := checkPipelineGate(path, candPath, f); err != nil {
		return err
	}
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	r, err := a.replayer().GatePipeline(ctx, layer.ReplayRequest{Path: path, Overrides: f.overrides(), Dataset: f.dataset,
		Store: f.store.dir, OnResult: func() { progress.Add(1) }}, candPath)
	progress.Done()
	if err != nil {
		return err
	}
	return a.printJudgment(r, f.reports)
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

// printJudgment prints a judgment's terminal summary and writes its
// reports (the --report specs), and returns the verdict's exit status.
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
