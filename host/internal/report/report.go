// Package report renders the outcome of a replay or gate run (docs/design.md)
// for people and for CI systems: a terminal summary, JSON, JUnit XML,
// Markdown for $GITHUB_STEP_SUMMARY and one self-contained HTML file, plus a
// progress bar for long replays.
//
// The package only renders. It computes no statistics and decides no
// verdicts: the replay command fills a [Report] and every writer turns the
// same Report into the same bytes, on every run and every platform. Writers
// never read the clock, the environment or the terminal; whether to use
// colour or draw a progress bar is the caller's decision.
package report

import "github.com/sextant-dev/sextant/sdk"

// Report is everything a report shows about one comparison of a baseline and
// a candidate strategy. It is plain data; the replay command fills it.
//
// # Notes
//
//   - Metrics and Gates are rendered in the order given (configuration
//     order). Divergences, Flipped and Regressed are task lists and are
//     rendered sorted by task, so the order in which replay workers finished
//     cannot change a report.
//   - Writers do not modify the Report.
type Report struct {
	// Pipeline is the pipeline's name.
	Pipeline  string
	Baseline  Strategy
	Candidate Strategy
	// Tasks is how many tasks were replayed.
	Tasks int
	// Fidelity is the fraction of self-replays that reproduced their trace.
	Fidelity float64
	// Skipped is the number of self-replays left out of Fidelity because
	// on_miss = "skip" skipped them.
	Skipped int
	// Divergences are the first divergences of self-replays that did not
	// reproduce their trace, one per task.
	Divergences []Divergence
	// SelfReplays is the number of self-replays counted in Fidelity. With
	// none (and Fidelity 0) the fidelity was not measured: it renders as
	// n/a, and Reasons say why.
	SelfReplays int
	// MinFidelity is the least fidelity the verdict accepts ([replay]
	// min_fidelity): below it, with a self-replay counted, the verdict
	// failed.
	MinFidelity float64
	// Reasons say why the verdict is what it is beyond the gates: a
	// fidelity below MinFidelity and the first divergences of the first
	// unfaithful tasks, or why no self-replay was counted. Rendered in
	// every format, in the order given.
	Reasons []string
	// Metrics are the paired comparisons, one per metric.
	Metrics []sdk.Metric
	// Gates are the verdicts of the gate chain, in chain order.
	Gates []GateResult
	// Own are the baseline's own metrics when there is no candidate (a
	// self-replay): Baseline holds each value, the comparison fields are
	// those of the baseline with itself.
	Own []sdk.Metric `json:",omitempty"`
	// GatesNotRun names the pipeline's gates when there is no candidate:
	// gates judge a candidate against the baseline, so none ran.
	GatesNotRun []string `json:",omitempty"`
	// Ruling is the overall verdict and ExitCode the process exit code that
	// goes with it (docs/design.md, "Exit codes").
	Ruling   sdk.Ruling
	ExitCode int
	// Flipped are the tasks whose outcome changed between baseline and
	// candidate, one entry per task and metric.
	Flipped []Flip
	// Regressed are the tasks that passed under the baseline and failed
	// under the candidate.
	Regressed []string
	// Matrix is every compared task under both strategies (the HTML
	// report's comparison matrix), in any order.
	Matrix []TaskRow `json:",omitempty"`
	// CandidatePipeline is set when the candidate is a pipeline (gate
	// --candidate-pipeline); Candidate is then the strategy it runs.
	CandidatePipeline *CandidatePipeline `json:",omitempty"`
	// Live is what the candidate's replay made live, when it could (nil
	// otherwise).
	Live *Live `json:",omitempty"`
}

// Strategy identifies one strategy version.
type Strategy struct {
	Name    string
	Version string
	// Hash is the strategy's content hash (hex sha256).
	Hash string
}

// Divergence is the first point where a self-replay left its recorded trace.
type Divergence struct {
	Task     string
	Node     string
	Expected string
	Got      string
}

// GateResult is one gate's verdict.
type GateResult struct {
	Name    string
	Ruling  sdk.Ruling
	Reasons []string
	// Metrics are numbers the gate computed; they are rendered sorted by key.
	Metrics map[string]float64
}

// Flip is one task whose outcome on one metric differs between baseline and
// candidate, as in "pass" to "fail".
type Flip struct {
	Task   string
	Metric string
	From   string
	To     string
	// Baseline and Candidate are the task's tool calls under each
	// strategy, in the order made, when it made any (and they were kept):
	// every format but JUnit shows them side by side.
	Baseline, Candidate []ToolCall
}
