package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Activity names, as registered on every worker.
const (
	stepActivity   = "sextant.step"
	recordActivity = "sextant.record"
	stageActivity  = "sextant.stage_spans"
)

// errInvalid is the application error type of calls that cannot succeed
// on a retry (a pipeline this worker lacks, a strategy that differs).
const errInvalid = "sextant.invalid"

// activities are the workflow's calls into sextant.
type activities struct {
	pipelines Pipelines
	sink      Sink
	// heartbeat is how often a running step tells Temporal its worker is
	// alive (a third of the workflow's heartbeat timeout).
	heartbeat time.Duration
	// onStep, for tests, is called as a step activity starts.
	onStep func(ctx context.Context, task, token string)
	// onAdvance, for tests, is called as a navigator call after a batch
	// starts; its error fails the call.
	onAdvance func(task string) error
}

// beginInput is what the Begin local activity gets.
type beginInput struct {
	Run       RunInput  `json:"run"`
	Execution string    `json:"execution"`
	Now       time.Time `json:"now"`
}

// advanceInput is what the Advance local activity gets.
type advanceInput struct {
	Pipeline string            `json:"pipeline"`
	Snapshot run.Snapshot      `json:"snapshot"`
	Outcomes []run.StepOutcome `json:"outcomes,omitempty"`
	Delivery *run.Delivery     `json:"delivery,omitempty"`
	Answers  map[string]any    `json:"answers,omitempty"`
	Now      time.Time         `json:"now"`
}

// cancelInput is what the Cancel local activity gets.
type cancelInput struct {
	Pipeline  string         `json:"pipeline"`
	Snapshot  run.Snapshot   `json:"snapshot"`
	Cancelled *run.Cancelled `json:"cancelled"`
	Now       time.Time      `json:"now"`
}

// stepInput is what the step activity gets.
type stepInput struct {
	Pipeline string         `json:"pipeline"`
	Snapshot run.Snapshot   `json:"snapshot"`
	Token    string         `json:"token"`
	Answers  map[string]any `json:"answers,omitempty"`
}

// stepper is the stepper of the named pipeline under the strategy
// version ref (zero: the live version, for a run beginning).
func (a *activities) stepper(ctx context.Context, name string, ref store.StrategyRef) (*run.Stepper, error) {
	s, err := a.pipelines.Stepper(ctx, name, ref)
	return s, nonRetryable(err)
}

// nonRetryable makes an invalid-input error final.
func nonRetryable(err error) error {
	if errors.Is(err, sdk.ErrInvalid) || errors.Is(err, run.ErrNoWaiter) {
		return temporal.NewNonRetryableApplicationError(err.Error(), errInvalid, nil)
	}
	return err
}

// Begin starts a run: the navigator's first decision, up to the first
// batch of steps.
func (a *activities) Begin(ctx context.Context, in beginInput) (*run.Progress, error) {
	s, err := a.stepper(ctx, in.Run.Pipeline, store.StrategyRef{Hash: in.Run.Strategy})
	if err != nil {
		return nil, err
	}
	p, err := s.Begin(ctx, run.Input{ID: in.Run.Task, Execution: in.Execution, Input: in.Run.Input, Truth: in.Run.Truth,
		Tags: in.Run.Tags, Start: in.Run.Start}, in.Now)
	return p, nonRetryable(err)
}

// Advance hands a batch's outcomes (or a wake-up) to the navigator.
func (a *activities) Advance(ctx context.Context, in advanceInput) (*run.Progress, error) {
	if a.onAdvance != nil && len(in.Outcomes) > 0 {
		if err := a.onAdvance(in.Snapshot.Task.ID); err != nil {
			return nil, err
		}
	}
	s, err := a.stepper(ctx, in.Pipeline, in.Snapshot.Task.Strategy)
	if err != nil {
		return nil, err
	}
	p, err := s.Advance(ctx, in.Snapshot, in.Outcomes, in.Delivery, in.Answers, in.Now)
	return p, nonRetryable(err)
}

// Cancel ends a cancelled run: its record says who cancelled it and why.
func (a *activities) Cancel(ctx context.Context, in cancelInput) (*run.Progress, error) {
	s, err := a.stepper(ctx, in.Pipeline, in.Snapshot.Task.Strategy)
	if err != nil {
		return nil, err
	}
	p, err := s.Cancel(ctx, in.Snapshot, in.Cancelled, in.Now)
	return p, nonRetryable(err)
}

// stepNextInput is what the StepNext local activity gets: the one step
// of a batch, and the navigator call after it.
type stepNextInput struct {
	Pipeline string         `json:"pipeline"`
	Snapshot run.Snapshot   `json:"snapshot"`
	Token    string         `json:"token"`
	Answers  map[string]any `json:"answers,omitempty"`
	Now      time.Time      `json:"now"`
	// StepTimeout bounds the step alone (0: the activity's own bound),
	// so a step that takes nearly all of it leaves the navigator call
	// after it the minute the local activity has beyond it.
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
}

// progressDelta is a run.Progress as Next and StepNext return it: the
// task and execution only when the call changed them (most calls leave
// both as they were), so a run's history holds them once, not at every
// step; the workflow keeps the last ones (apply).
type progressDelta struct {
	Task      *store.Task      `json:"task,omitempty"`
	Execution *store.Execution `json:"execution,omitempty"`
	State     json.RawMessage  `json:"state"`
	Deadline  time.Time        `json:"deadline,omitzero"`
	Spans     []store.Span     `json:"spans,omitempty"`
	Batch     []sdk.Token      `json:"batch,omitempty"`
	Result    *run.Result      `json:"result,omitempty"`
	NextDue   time.Time        `json:"next_due,omitzero"`
	// Outcome is set when StepNext or BeginNext ran a step but the
	// navigator call after it failed: the workflow hands the outcome to
	// Next, which is retried as navigator calls are. The rest is then
	// empty (StepNext) or Begin's progress (BeginNext).
	Outcome *run.StepOutcome `json:"outcome,omitempty"`
}

// deltaOf is p less what it shares with prev, the snapshot the call
// began from.
func deltaOf(prev *run.Snapshot, p *run.Progress) *progressDelta {
	d := &progressDelta{State: p.Snapshot.State, Deadline: p.Snapshot.Deadline, Spans: p.Spans, Batch: p.Batch,
		Result: p.Result, NextDue: p.NextDue}
	if !reflect.DeepEqual(&prev.Task, &p.Snapshot.Task) {
		d.Task = &p.Snapshot.Task
	}
	if !reflect.DeepEqual(&prev.Execution, &p.Snapshot.Execution) {
		d.Execution = &p.Snapshot.Execution
	}
	return d
}

// apply is the progress d describes after prev.
func (d *progressDelta) apply(prev *run.Progress) run.Progress {
	p := run.Progress{Snapshot: run.Snapshot{Task: prev.Snapshot.Task, Execution: prev.Snapshot.Execution, State: d.State,
		Deadline: d.Deadline}, Spans: d.Spans, Batch: d.Batch, Result: d.Result, NextDue: d.NextDue}
	if d.Task != nil {
		p.Snapshot.Task = *d.Task
	}
	if d.Execution != nil {
		p.Snapshot.Execution = *d.Execution
	}
	return p
}

// Next is Advance returning a progressDelta.
func (a *activities) Next(ctx context.Context, in advanceInput) (*progressDelta, error) {
	p, err := a.Advance(ctx, in)
	if err != nil {
		return nil, err
	}
	return deltaOf(&in.Snapshot, p), nil
}

// StepNext runs a batch's one step, then hands its outcome to the
// navigator: a run with local steps makes one local activity of the two,
// so the history holds one marker per step, and the step's spans once
// (numbered, in the progress). It fails as Step does (the step did not
// run to an outcome: run it again); a navigator call that fails after
// the step ran returns the outcome alone, for the workflow to advance
// with (the step is not run again for it).
func (a *activities) StepNext(ctx context.Context, in stepNextInput) (*progressDelta, error) {
	sctx := ctx
	if in.StepTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, in.StepTimeout)
		defer cancel()
	}
	out, err := a.Step(sctx, stepInput{Pipeline: in.Pipeline, Snapshot: in.Snapshot, Token: in.Token, Answers: in.Answers})
	if err != nil {
		return nil, err
	}
	p, err := a.Advance(ctx, advanceInput{Pipeline: in.Pipeline, Snapshot: in.Snapshot, Outcomes: []run.StepOutcome{*out}, Now: in.Now})
	if err != nil {
		return &progressDelta{Outcome: out}, nil
	}
	return deltaOf(&in.Snapshot, p), nil
}

// beginNextInput is what the BeginNext local activity gets: Begin's
// input, and the bound of one attempt of a step.
type beginNextInput struct {
	beginInput
	StepTimeout time.Duration `json:"step_timeout"`
}

// BeginNext begins a run with local steps and, when its first batch is
// one step, runs it and the navigator call after it, as StepNext does:
// one local activity, one marker, for the start and the first step. It
// fails only as Begin does. A first step that does not run to an outcome
// within in.StepTimeout leaves the result Begin's alone, and the
// workflow runs the step with the step's retries; one whose navigator
// call fails leaves Begin's result with the step's Outcome.
func (a *activities) BeginNext(ctx context.Context, in beginNextInput) (*progressDelta, error) {
	p, err := a.Begin(ctx, in.beginInput)
	if err != nil {
		return nil, err
	}
	d := deltaOf(&run.Snapshot{}, p)
	if len(p.Batch) != 1 || p.Result != nil {
		return d, nil
	}
	sctx, cancel := context.WithTimeout(ctx, in.StepTimeout)
	defer cancel()
	out, err := a.Step(sctx, stepInput{Pipeline: in.Run.Pipeline, Snapshot: p.Snapshot, Token: p.Batch[0].ID, Answers: nil})
	if err != nil {
		return d, nil
	}
	next, err := a.Advance(ctx, advanceInput{Pipeline: in.Run.Pipeline, Snapshot: p.Snapshot, Outcomes: []run.StepOutcome{*out}, Now: in.Now})
	if err != nil {
		d.Outcome = out
		return d, nil
	}
	nd := deltaOf(&run.Snapshot{}, next)
	nd.Spans = append(p.Spans, next.Spans...)
	return nd, nil
}

// Step runs one step, heartbeating so that a dead worker's step moves to
// another worker within the heartbeat timeout.
func (a *activities) Step(ctx context.Context, in stepInput) (*run.StepOutcome, error) {
	s, err := a.stepper(ctx, in.Pipeline, in.Snapshot.Task.Strategy)
	if err != nil {
		return nil, err
	}
	if a.onStep != nil {
		a.onStep(ctx, in.Snapshot.Task.ID, in.Token)
	}
	stop := a.beat(ctx)
	defer stop()
	out, err := s.RunStep(ctx, in.Snapshot, in.Token, in.Answers)
	return out, nonRetryable(err)
}

// beat heartbeats until stopped.
func (a *activities) beat(ctx context.Context) func() {
	if a.heartbeat <= 0 || !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The first beat waits a period: the SDK sends a first heartbeat
		// at once, a server write that a step shorter than the period
		// (most) does not need; the timeout counts from the start anyway.
		t := time.NewTicker(a.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			activity.RecordHeartbeat(ctx)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Record writes the finished run into the sink's store.
func (a *activities) Record(ctx context.Context, r *run.RunRecord) error {
	return permanent(a.sink.RecordRun(ctx, r))
}

// StageSpans writes a batch of a running run's spans into the sink's
// store, where they wait for Record (store.StageSpans).
func (a *activities) StageSpans(ctx context.Context, spans []store.Span) error {
	return permanent(a.sink.StageSpans(ctx, spans))
}

// permanent marks the sink's errors that a retry cannot cure (a run or
// span the store refuses, a body over the server's limit) as such.
func permanent(err error) error {
	var ae interface{ HTTPStatus() int }
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrInvalid) || errors.As(err, &ae) && (ae.HTTPStatus() == http.StatusRequestEntityTooLarge || ae.HTTPStatus() == http.StatusBadRequest) {
		return temporal.NewNonRetryableApplicationError(err.Error(), errInvalid, err)
	}
	return err
}
