package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// JSONSchemaVersion is the version of the JSON report's shape. It changes
// only when a field is renamed or removed or its meaning changes; adding a
// field does not change it.
const JSONSchemaVersion = 1

// WriteJSON writes r as indented JSON.
//
// # Notes
//
//   - Keys come in a fixed order (the order of the fields below); gate
//     metrics are objects with sorted keys.
//   - Every number is rounded to six significant digits, so bootstrap noise
//     in the last bits cannot differ across platforms. NaN and infinities
//     are written as null.
//   - Lists are always arrays, never null; task lists are sorted by task.
//   - There are no timestamps, durations, host names or paths: the same
//     replay gives the same file.
//
// The top-level fields are schema_version, pipeline, ruling, exit_code,
// baseline, candidate, tasks (how many tasks were replayed), fidelity (the
// fraction of self-replays that reproduced their trace; 0 when none was
// counted), skipped, self_replays (how many counted), min_fidelity, reasons
// (why the verdict is what it is beyond the gates), metrics, gates,
// regressed, flipped and divergences; with a candidate pipeline (gate
// --candidate-pipeline), candidate_pipeline (file, overlay, digest) and
// live (calls, cost_usd, max_cost_usd, recorded, and steps: step, call,
// calls, cost_usd, tasks), the calls its replay made live. A flipped task that made tool calls
// lists them under baseline_tool_calls and candidate_tool_calls (source,
// tool, arguments, decision, and result or error); these keys are absent
// for a task that made none. With a comparison matrix, matrix lists every
// compared task, sorted by task, with the keys of a task of a stored
// comparison in the serve API: task, flip (regressed or improved, absent
// otherwise), baseline and candidate (success, reward, cost_usd),
// baseline_run and candidate_run (error, latency_ms and output, the
// output's digest; each absent when empty) and output_differs (absent
// when false). A report without a matrix has no matrix key.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(toJSON(r)); err != nil {
		return fmt.Errorf("write json report: %w", err)
	}
	return nil
}

type jsonReport struct {
	SchemaVersion int              `json:"schema_version"`
	Pipeline      string           `json:"pipeline"`
	Ruling        sdk.Ruling       `json:"ruling"`
	ExitCode      int              `json:"exit_code"`
	Baseline      jsonStrategy     `json:"baseline"`
	Candidate     jsonStrategy     `json:"candidate"`
	Tasks         int              `json:"tasks"`
	Fidelity      num              `json:"fidelity"`
	Skipped       int              `json:"skipped,omitempty"`
	SelfReplays   int              `json:"self_replays"`
	MinFidelity   num              `json:"min_fidelity"`
	Reasons       []string         `json:"reasons"`
	Metrics       []jsonMetric     `json:"metrics"`
	Gates         []jsonGate       `json:"gates"`
	Regressed     []string         `json:"regressed"`
	Flipped       []jsonFlip       `json:"flipped"`
	Divergences   []jsonDivergence `json:"divergences"`
	// Matrix is absent when the report has no comparison matrix.
	Matrix []jsonTaskRow `json:"matrix,omitempty"`
	// CandidatePipeline and Live are absent unless the candidate is a
	// pipeline, and its replay could make calls live.
	CandidatePipeline *jsonCandidatePipeline `json:"candidate_pipeline,omitempty"`
	Live              *jsonLive              `json:"live,omitempty"`
}

type jsonStrategy struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

type jsonMetric struct {
	Name           string `json:"name"`
	Kind           string `json:"kind"`
	Baseline       num    `json:"baseline"`
	Candidate      num    `json:"candidate"`
	Effect         num    `json:"effect"`
	CILow          num    `json:"ci_low"`
	CIHigh         num    `json:"ci_high"`
	Confidence     num    `json:"confidence"`
	P              num    `json:"p"`
	N              int    `json:"n"`
	HigherIsBetter bool   `json:"higher_is_better"`
}

type jsonGate struct {
	Name    string         `json:"name"`
	Ruling  sdk.Ruling     `json:"ruling"`
	Reasons []string       `json:"reasons"`
	Metrics map[string]num `json:"metrics"`
}

type jsonFlip struct {
	Task   string `json:"task"`
	Metric string `json:"metric"`
	From   string `json:"from"`
	To     string `json:"to"`
	// The task's tool calls, when it made any: absent otherwise.
	BaselineToolCalls  []jsonToolCall `json:"baseline_tool_calls,omitempty"`
	CandidateToolCalls []jsonToolCall `json:"candidate_tool_calls,omitempty"`
}

// jsonTaskRow is one row of the comparison matrix. Its keys are those of
// a task of a stored comparison in the serve API (Verdict.tasks): one
// decoder reads both.
type jsonTaskRow struct {
	Task          string      `json:"task"`
	Flip          string      `json:"flip,omitempty"`
	Baseline      jsonResult  `json:"baseline"`
	Candidate     jsonResult  `json:"candidate"`
	BaselineRun   jsonRunFact `json:"baseline_run,omitzero"`
	CandidateRun  jsonRunFact `json:"candidate_run,omitzero"`
	OutputDiffers bool        `json:"output_differs,omitempty"`
}

// jsonResult is the part of a task's result (sdk.TaskResult) the matrix
// holds.
type jsonResult struct {
	Success bool `json:"success"`
	Reward  num  `json:"reward"`
	CostUSD num  `json:"cost_usd"`
}

// jsonRunFact is what the matrix shows of one replay beyond its result,
// as the serve API's RunFacts.
type jsonRunFact struct {
	Error     string `json:"error,omitempty"`
	LatencyMS num    `json:"latency_ms,omitempty"`
	Output    string `json:"output,omitempty"`
}

type jsonDivergence struct {
	Task     string `json:"task"`
	Node     string `json:"node"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
}

// num is a float64 written with six significant digits, null when not finite.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	v := round6(float64(n))
	if !finite(v) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func toJSON(r *Report) jsonReport {
	out := jsonReport{
		SchemaVersion: JSONSchemaVersion,
		Pipeline:      r.Pipeline,
		Ruling:        r.Ruling,
		ExitCode:      r.ExitCode,
		Baseline:      jsonStrategy(r.Baseline),
		Candidate:     jsonStrategy(r.Candidate),
		Tasks:         r.Tasks,
		Fidelity:      num(r.Fidelity),
		Skipped:       r.Skipped,
		SelfReplays:   r.SelfReplays,
		MinFidelity:   num(r.MinFidelity),
		Reasons:       append([]string{}, r.Reasons...),
		Metrics:       make([]jsonMetric, 0, len(r.Metrics)),
		Gates:         make([]jsonGate, 0, len(r.Gates)),
		Regressed:     append([]string{}, sortedTasks(r.Regressed)...),
		Flipped:       make([]jsonFlip, 0, len(r.Flipped)),
		Divergences:   make([]jsonDivergence, 0, len(r.Divergences)),
	}
	for _, m := range r.Metrics {
		out.Metrics = append(out.Metrics, jsonMetric{
			Name: m.Name, Kind: m.Kind,
			Baseline: num(m.Baseline), Candidate: num(m.Candidate),
			Effect: num(m.Effect), CILow: num(m.CILow), CIHigh: num(m.CIHigh),
			Confidence: num(m.Confidence), P: num(m.P), N: m.N,
			HigherIsBetter: m.HigherIsBetter,
		})
	}
	for _, g := range r.Gates {
		jg := jsonGate{
			Name: g.Name, Ruling: g.Ruling,
			Reasons: append([]string{}, g.Reasons...),
			Metrics: make(map[string]num, len(g.Metrics)),
		}
		for k, v := range g.Metrics {
			jg.Metrics[k] = num(v)
		}
		out.Gates = append(out.Gates, jg)
	}
	for _, f := range sortedFlips(r.Flipped) {
		out.Flipped = append(out.Flipped, jsonFlip{Task: f.Task, Metric: f.Metric, From: f.From, To: f.To,
			BaselineToolCalls: jsonCalls(f.Baseline), CandidateToolCalls: jsonCalls(f.Candidate)})
	}
	for _, d := range sortedDivergences(r.Divergences) {
		out.Divergences = append(out.Divergences, jsonDivergence(d))
	}
	out.Matrix = jsonMatrix(r.Matrix)
	out.CandidatePipeline, out.Live = jsonLiveOf(r)
	return out
}

// jsonMatrix is rows sorted by task, nil when there are none.
func jsonMatrix(rows []TaskRow) []jsonTaskRow {
	if len(rows) == 0 {
		return nil
	}
	out := make([]jsonTaskRow, len(rows))
	for i, row := range rows {
		j := jsonTaskRow{Task: row.Task, OutputDiffers: row.OutputDiffers,
			Baseline:     jsonResult{row.Baseline.Pass, num(row.Baseline.Score), num(row.Baseline.CostUSD)},
			Candidate:    jsonResult{row.Candidate.Pass, num(row.Candidate.Score), num(row.Candidate.CostUSD)},
			BaselineRun:  jsonRunFact{row.Baseline.Error, num(row.Baseline.LatencyMS), row.Baseline.Output},
			CandidateRun: jsonRunFact{row.Candidate.Error, num(row.Candidate.LatencyMS), row.Candidate.Output}}
		switch k := row.Kinds(); {
		case slices.Contains(k, RowRegressed):
			j.Flip = RowRegressed
		case slices.Contains(k, RowImproved):
			j.Flip = RowImproved
		}
		out[i] = j
	}
	slices.SortStableFunc(out, func(a, b jsonTaskRow) int { return strings.Compare(a.Task, b.Task) })
	return out
}
