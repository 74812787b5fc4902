package evolve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// A judged replay (sextant gate, replay with a candidate, merge) is kept
// in the store collection store.CollComparisons as a Verdict, so that
// `sextant serve` can show the comparison, its per-task outcomes and the
// flipped tasks' outputs after the command has ended.

// Verdict is one judgment as the store keeps it.
type Verdict struct {
	// ID is a store id (a ULID: newer verdicts sort after older ones).
	ID       string    `json:"id"`
	Command  string    `json:"command"` // replay, gate, merge or evolve
	Pipeline string    `json:"pipeline"`
	Created  time.Time `json:"created"`
	// Comparison is the summary (strategies, diff, metrics, fidelity,
	// flips); Tasks the per-task outcomes, baseline against candidate.
	Comparison Summary       `json:"comparison"`
	Tasks      []TaskVerdict `json:"tasks,omitempty"`
	Gates      Result        `json:"gates"`
	Ruling     sdk.Ruling    `json:"ruling"`
	ExitCode   int           `json:"exit_code"`
	// Divergences counts the self-replays that did not reproduce their
	// trace; Replayed the distinct tasks replayed.
	Divergences int `json:"divergences"`
	Replayed    int `json:"replayed"`
	// CandidatePipeline and Live are the candidate pipeline's identity
	// and its live calls (Judgment); absent for a strategy candidate.
	CandidatePipeline *report.CandidatePipeline `json:"candidate_pipeline,omitempty"`
	Live              *report.Live              `json:"live,omitempty"`
}

// TaskVerdict is one task's outcome under the baseline and the candidate,
// with their outputs and tool calls when the task flipped (and they were
// kept).
type TaskVerdict struct {
	sdk.TaskOutcome
	// Flip is "regressed" (pass → fail), "improved" (fail → pass) or "".
	Flip            string          `json:"flip,omitempty"`
	BaselineOutput  json.RawMessage `json:"baseline_output,omitempty"`
	CandidateOutput json.RawMessage `json:"candidate_output,omitempty"`
	// BaselineToolCalls and CandidateToolCalls are a flipped task's tool
	// calls under each strategy (Judgment.ToolCalls).
	BaselineToolCalls  []run.ToolCall `json:"baseline_tool_calls,omitempty"`
	CandidateToolCalls []run.ToolCall `json:"candidate_tool_calls,omitempty"`
	// BaselineRun and CandidateRun are each replay's error, latency and
	// output digest (Judgment.Facts); OutputDiffers says the outputs
	// differ. The dashboard's comparison matrix shows them.
	BaselineRun   RunFacts `json:"baseline_run,omitzero"`
	CandidateRun  RunFacts `json:"candidate_run,omitzero"`
	OutputDiffers bool     `json:"output_differs,omitempty"`
}

// The flips of a TaskVerdict.
const (
	FlipRegressed = "regressed"
	FlipImproved  = "improved"
)

// maxOutput bounds one stored output; longer ones are cut (and then no
// longer valid JSON, so they are stored as a JSON string).
const maxOutput = 16 << 10

// NewVerdict makes the stored form of j, which must have a candidate.
// output, when not nil, gives a task's output under a strategy (by its
// content hash), for the flipped tasks.
func NewVerdict(j *Judgment, command, pipeline, id string, at time.Time, output func(task, hash string) (json.RawMessage, bool)) (*Verdict, error) {
	if j.Comparison == nil {
		return nil, errors.New("record verdict: no candidate was compared")
	}
	v := &Verdict{ID: id, Command: command, Pipeline: pipeline, Created: at.UTC(),
		Comparison: Summarize(j.Comparison), Gates: j.Chain, Ruling: j.Ruling, ExitCode: j.ExitCode(),
		Divergences: len(j.Self.Divergences), Replayed: j.Tasks, CandidatePipeline: j.CandidatePipeline, Live: j.Live}
	regressed, improved := map[string]bool{}, map[string]bool{}
	for _, t := range j.Regressed {
		regressed[t] = true
	}
	for _, t := range j.Improved {
		improved[t] = true
	}
	for _, t := range j.Comparison.Tasks {
		tv := TaskVerdict{TaskOutcome: t}
		if f, ok := j.Facts[t.Task]; ok {
			tv.BaselineRun, tv.CandidateRun, tv.OutputDiffers = f.Baseline, f.Candidate, f.OutputDiffers()
		}
		switch {
		case regressed[t.Task]:
			tv.Flip = FlipRegressed
		case improved[t.Task]:
			tv.Flip = FlipImproved
		}
		if fo, ok := j.Outputs[t.Task]; ok && tv.Flip != "" {
			tv.BaselineOutput, tv.CandidateOutput = fo.Baseline, fo.Candidate
		} else if tv.Flip != "" && output != nil {
			tv.BaselineOutput, _ = output(t.Task, j.Comparison.Baseline.Hash)
			tv.CandidateOutput, _ = output(t.Task, j.Comparison.Candidate.Hash)
		}
		if fc, ok := j.ToolCalls[t.Task]; ok && tv.Flip != "" {
			tv.BaselineToolCalls, tv.CandidateToolCalls = fc.Baseline, fc.Candidate
		}
		v.Tasks = append(v.Tasks, tv)
	}
	return v, nil
}

// ClipOutput is out as stored in a TaskVerdict: its JSON, or, when longer
// than 16 KiB, the first 16 KiB as a JSON string ending in "…".
func ClipOutput(out map[string]any) (json.RawMessage, bool) {
	if out == nil {
		return nil, false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, false
	}
	if len(b) > maxOutput {
		b, _ = json.Marshal(string(b[:maxOutput]) + "…")
	}
	return b, true
}

func verdicts(st *store.Store) (*store.Collection[Verdict], error) {
	return store.NewCollection[Verdict](st, store.CollComparisons)
}

// SaveVerdict stores v under its id.
func SaveVerdict(ctx context.Context, st *store.Store, v *Verdict) error {
	if v.ID == "" || v.Pipeline == "" {
		return errors.New("save verdict: missing id or pipeline")
	}
	coll, err := verdicts(st)
	if err == nil {
		err = coll.Put(ctx, v.ID, *v)
	}
	if err != nil {
		return fmt.Errorf("save verdict %s: %w", v.ID, err)
	}
	return nil
}

// ListVerdicts returns the stored verdicts (of pipeline, when not ""),
// newest first, without their per-task rows.
func ListVerdicts(ctx context.Context, st *store.Store, pipeline string) ([]Verdict, error) {
	coll, err := verdicts(st)
	if err != nil {
		return nil, fmt.Errorf("list verdicts: %w", err)
	}
	var out []Verdict
	err = coll.Scan(ctx, "", func(_ string, v Verdict) error {
		if pipeline == "" || v.Pipeline == pipeline {
			v.Tasks = nil
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list verdicts: %w", err)
	}
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(b.ID, a.ID))
	})
	return out, nil
}

// GetVerdict reads one stored verdict; an unknown id is store.ErrNotFound.
func GetVerdict(ctx context.Context, st *store.Store, id string) (*Verdict, error) {
	coll, err := verdicts(st)
	if err != nil {
		return nil, fmt.Errorf("verdict %q: %w", id, err)
	}
	v, err := coll.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("verdict %q: %w", id, err)
	}
	return &v, nil
}

// CandidateVerdict is the stored form of one candidate of an evolution
// round (without outputs: a round keeps none).
func CandidateVerdict(c Evaluated, pipeline, id string, at time.Time) (*Verdict, error) {
	if c.Comparison == nil {
		return nil, errors.New("record verdict: the candidate has no comparison")
	}
	j := &Judgment{Candidate: c.Strategy, Tasks: len(c.Comparison.Tasks), Comparison: c.Comparison, Chain: c.Result, Ruling: c.Result.Ruling}
	j.Regressed, j.Improved = Flips(c.Comparison.Tasks)
	return NewVerdict(j, "evolve", pipeline, id, at, nil)
}
