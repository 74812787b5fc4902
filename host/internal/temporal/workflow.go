package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// The workflow's name and the names of its updates and query, as clients
// address them.
const (
	// WorkflowName is the generic workflow every worker registers.
	WorkflowName = "sextant.run"
	// UpdateResume answers the steps waiting for a person (a map of
	// answers, as `sextant resume --set`).
	UpdateResume = "sextant.resume"
	// UpdateDeliver delivers a BPMN message or signal (a run.Delivery).
	UpdateDeliver = "sextant.deliver"
	// UpdateFollow returns the run's result once it ended or waits (as
	// its Until argument says).
	UpdateFollow = "sextant.follow"
	// QueryStatus returns the run's result so far (nil before the first
	// wait or end).
	QueryStatus = "sextant.status"
	// UpdateCancel says who cancels the run and why (a run.Cancelled),
	// before the client asks Temporal to cancel the workflow.
	UpdateCancel = "sextant.cancel"
	// QueryProgress returns the run so far (a *RunNow): its task's
	// status now and, when its argument is true, its execution, state
	// and the spans the workflow holds.
	QueryProgress = "sextant.progress"
	// SignalDeliver is UpdateDeliver as a signal, which Temporal keeps
	// until a worker takes it: what a client sends with no worker
	// answering. The run takes it at its next wait; one it does not
	// wait for then is dropped, with a warning in the worker's log.
	SignalDeliver = "sextant.deliver.held"
	// SignalCancel is UpdateCancel as a signal, sent just before Temporal
	// is asked to cancel the workflow when no worker answers: the run,
	// once a worker takes it, is recorded cancelled by whom it names.
	SignalCancel = "sextant.cancel.held"
)

// RunInput starts a run; the workflow id is the task id.
type RunInput struct {
	// Pipeline is the pipeline's name; every worker must have it.
	Pipeline string `json:"pipeline"`
	// Strategy, when set, is the hash of the strategy version the run
	// must use (a pinned pipeline's, as the starter saw it); a worker
	// without it refuses the run. Otherwise the worker that begins the
	// run takes the pipeline's live version from the store, and the
	// run's snapshot, in the history, keeps it.
	Strategy string          `json:"strategy,omitempty"`
	Task     string          `json:"task"`
	Input    map[string]any  `json:"input,omitempty"`
	Truth    json.RawMessage `json:"truth,omitempty"`
	Tags     []string        `json:"tags,omitempty"`
	Start    string          `json:"start,omitempty"`
	// StepTimeout bounds one attempt of a step (default 10 minutes, or the
	// pipeline's limits.timeout when the starter gives it).
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
	// Heartbeat is how long a step's worker may stay silent before the
	// step is given to another worker (default 20 s).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// StepAttempts bounds the attempts of a step whose worker failed or
	// died (default 10); then the run fails.
	StepAttempts int32 `json:"step_attempts,omitempty"`
	// ContinueAfter, when > 0, continues the workflow as new after that
	// many batches and wake-ups (tests); otherwise it continues when
	// Temporal suggests it (a history grown too long: a cycle timer that
	// repeats for months).
	ContinueAfter int `json:"continue_after,omitempty"`
	// LocalSteps runs the steps as local activities, inside the workflow
	// task of the worker that drives the run: far fewer round trips to
	// the server, but a step cannot move to another worker while it runs
	// (a dead worker's workflow task times out, and the next worker runs
	// the step again, answering its LLM calls from their recordings).
	LocalSteps bool `json:"local_steps,omitempty"`
	// SpanBatch is how many finished spans the workflow holds at most
	// before it stages them into the store (store.StageSpans), so that no
	// message carries a long run's spans at once (0: DefaultSpanBatch; it
	// stages sooner when they reach DefaultSpanBytes).
	SpanBatch int `json:"span_batch,omitempty"`
	// Carry is the run so far, when the workflow continued as new.
	Carry *Carry `json:"carry,omitempty"`
}

// Carry is what a workflow continued as new takes over: the run where it
// was (waiting, or with a batch to run) and the spans so far.
type Carry struct {
	Progress run.Progress   `json:"progress"`
	Spans    []store.Span   `json:"spans,omitempty"`
	Answers  map[string]any `json:"answers,omitempty"`
	// Cancel is who cancels the run and why, when a cancel was on its
	// way.
	Cancel *run.Cancelled `json:"cancel,omitempty"`
}

// Defaults of RunInput.
const (
	DefaultStepTimeout  = 10 * time.Minute
	DefaultHeartbeat    = 20 * time.Second
	DefaultStepAttempts = 10
	// DefaultSpanBatch and DefaultSpanBytes bound the spans a workflow
	// holds (RunInput.SpanBatch): far below Temporal's 2 MB payload limit.
	DefaultSpanBatch = 1000
	DefaultSpanBytes = 512 << 10
)

// changeID names the workflow's versions (workflow.GetVersion); its
// name is its first change's.
const changeID = "stage-spans"

// Versions of the workflow, each a change that a run begun before it
// replays without.
const (
	// versionStageSpans stages spans in batches as the run goes.
	versionStageSpans workflow.Version = 1
	// versionLocalRecord records the ended run in a local activity, not
	// an activity.
	versionLocalRecord workflow.Version = 2
	// versionDelta advances through Next, whose result leaves out the
	// task and execution when they did not change, and runs a local
	// step and the navigator call after it as one local activity
	// (StepNext).
	versionDelta workflow.Version = 3
	// versionBeginNext begins a run with local steps and runs its first
	// step in one local activity (BeginNext).
	versionBeginNext workflow.Version = 4
	// versionSpanEscapes counts the escapes encoding/json writes into a
	// held span's size (spanSize): text of control characters, <, > or
	// &, or invalid UTF-8 grows up to six times as JSON, which would
	// carry a stage's payload past Temporal's limit.
	versionSpanEscapes workflow.Version = 5
)

// inbound is a person's answers or a delivery, waiting for the run.
type inbound struct {
	answers  map[string]any
	delivery *run.Delivery
}

// flow is the workflow's state that its handlers see.
type flow struct {
	res   *run.Result // last wait or end
	ended bool
	// waiting is set while the run waits (res is then current).
	waiting bool
	inbox   []inbound
	// cancel is who cancels the run and why (UpdateCancel); Temporal's
	// cancellation of the workflow follows.
	cancel *run.Cancelled
}

// Until says which waits end a Follow (besides the run's end).
type Until string

// Waits that end a Follow.
const (
	// UntilWait: any wait (a local run returns at each).
	UntilWait Until = "wait"
	// UntilPerson: a question to a person (local `run --wait`).
	UntilPerson Until = "person"
	// UntilEvent: anything but timers and retry delays (a person, a
	// message, a signal).
	UntilEvent Until = "event"
)

func (f *flow) settled(until Until) bool {
	if f.ended {
		return true
	}
	if !f.waiting || len(f.inbox) > 0 {
		return false
	}
	switch until {
	case UntilPerson:
		return len(f.res.Waiting) > 0
	case UntilEvent:
		for _, w := range f.res.Waits {
			if w.Kind != store.WaitTimer && w.Kind != store.WaitRetry {
				return true
			}
		}
		return false
	}
	return true
}

// Workflow is the generic workflow: it drives any pipeline's run through
// the local activities Begin and Advance (the navigator) and the step
// activity, waits durably for timers, people, messages and signals, and
// records the run once it ended.
func (w *Worker) Workflow(ctx workflow.Context, in RunInput) (*run.Result, error) {
	a := w.acts
	f := &flow{}
	if err := w.handlers(ctx, f); err != nil {
		return nil, err
	}
	// Begin and Advance fail only when they could not finish (the sink
	// unreachable, the worker stopping): a run's own failures are results.
	// So they are retried until they succeed, as a store would be.
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{errInvalid}},
	})
	stepTimeout, heartbeat, attempts := in.StepTimeout, in.Heartbeat, in.StepAttempts
	if stepTimeout <= 0 {
		stepTimeout = DefaultStepTimeout
	}
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	if attempts <= 0 {
		attempts = DefaultStepAttempts
	}
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: stepTimeout,
		HeartbeatTimeout:    heartbeat,
		// A cancelled run waits for its steps to stop (they learn of it
		// at their next heartbeat), so nothing a step does lands after
		// the run was recorded cancelled.
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: attempts, NonRetryableErrorTypes: []string{errInvalid}},
	})
	slctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: stepTimeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: attempts, NonRetryableErrorTypes: []string{errInvalid}},
	})
	// StepNext bounds its step by stepTimeout itself and has a minute
	// beyond it for the navigator call after the step, as BeginNext does:
	// a step that ends near its bound is not run again for the call.
	snctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: stepTimeout + time.Minute, RetryPolicy: workflow.GetLocalActivityOptions(slctx).RetryPolicy})
	sinkRetry := &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, NonRetryableErrorTypes: []string{errInvalid}}
	rctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: sinkRetry})
	lrctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: sinkRetry})

	// The workflow's versions, under one change id so that a new run
	// records one marker and one search-attribute upsert, not one per
	// change: 1 stages spans, 2 records the run in a local activity, 3
	// returns deltas and merges a local step with its navigator call, 4
	// merges the start with the first local step, 5 counts escapes in
	// spans' sizes. Workflows begun before a version replay without it.
	version := workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, versionSpanEscapes)
	staging := version >= versionStageSpans
	batch := in.SpanBatch
	if batch <= 0 {
		batch = DefaultSpanBatch
	}

	var p run.Progress
	var spans []store.Span     // finished, not yet staged
	var spanBytes int          // their size as a payload
	var answers map[string]any // given to the batch that runs the answered steps
	hold := func(more []store.Span) {
		spans = append(spans, more...)
		switch {
		case !staging || len(more) == 0:
		case version >= versionDelta:
			for i := range more {
				spanBytes += spanSize(&more[i], version >= versionSpanEscapes)
			}
		default:
			b, _ := json.Marshal(more) // deterministic: struct fields, sorted map keys
			spanBytes += len(b)
		}
	}
	// stage writes the spans held into the store once there are enough
	// (or all of them), so that neither the record at the end nor a
	// continue-as-new carries a long run's spans in one payload.
	stage := func(all bool) error {
		if !staging || len(spans) == 0 || !all && len(spans) < batch && spanBytes < DefaultSpanBytes {
			return nil
		}
		if err := workflow.ExecuteActivity(rctx, stageActivity, spans).Get(ctx, nil); err != nil {
			return err
		}
		spans, spanBytes = nil, 0
		return nil
	}
	// The run so far, for a server showing it before it is recorded
	// (RATIONALE "Why a Temporal run's progress is a query"). A query
	// reads what the workflow holds and changes nothing, so it adds no
	// command and needs no version.
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func(full bool) (*RunNow, error) {
		return runNow(f, &p, spans, full), nil
	}); err != nil {
		return nil, err
	}
	begin := func() error {
		exec := workflow.GetInfo(ctx).WorkflowExecution.RunID
		if err := workflow.ExecuteLocalActivity(lctx, a.Begin, beginInput{Run: in, Execution: exec, Now: workflow.Now(ctx)}).Get(ctx, &p); err != nil {
			return err
		}
		hold(p.Spans)
		return nil
	}
	// record writes the ended run into the store, then lets the updates
	// in progress (a Follow) see its result.
	record := func() (*run.Result, error) {
		// The record runs in a local activity, in the workflow task that
		// saw the run end: no round trip to a worker through the server,
		// and the spans it carries stay out of the history. Its input is
		// the history's (steps and navigator calls included), so a retried
		// workflow task records the same run, which RecordRun takes as
		// done.
		var rec workflow.Future
		if version < versionLocalRecord {
			rec = workflow.ExecuteActivity(rctx, recordActivity, run.RecordOf(&p, spans))
		} else {
			rec = workflow.ExecuteLocalActivity(lrctx, recordActivity, run.RecordOf(&p, spans))
		}
		if err := rec.Get(ctx, nil); err != nil {
			return nil, err
		}
		f.res, f.ended, f.waiting = p.Result, true, false
		// Handlers finish whether or not the workflow was cancelled.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) }); err != nil {
			return nil, err
		}
		if p.Result.Status == store.StatusCancelled {
			// The workflow closes cancelled, its details the run's result.
			return nil, temporal.NewCanceledError(p.Result)
		}
		return p.Result, nil
	}
	// stop is where the run goes when a call fails: when Temporal
	// cancelled the workflow, the run ends cancelled (whoever UpdateCancel
	// named, else Temporal itself) and is recorded; otherwise the workflow
	// fails with err. The rest of the run uses a context disconnected from
	// the cancelled one, as every call below captures these contexts.
	stop := func(err error) (*run.Result, error) {
		if ctx.Err() == nil {
			return nil, err
		}
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		lctx = workflow.WithLocalActivityOptions(ctx, workflow.GetLocalActivityOptions(lctx))
		rctx = workflow.WithActivityOptions(ctx, workflow.GetActivityOptions(rctx))
		lrctx = workflow.WithLocalActivityOptions(ctx, workflow.GetLocalActivityOptions(lrctx))
		if p.Snapshot.Task.ID == "" {
			// Cancelled before the run began: it begins, to end at once.
			if err := begin(); err != nil {
				return nil, err
			}
		}
		if !p.Ended() {
			var held run.Cancelled
			if f.cancel == nil && workflow.GetSignalChannel(ctx, SignalCancel).ReceiveAsync(&held) {
				f.cancel = &held
			}
			c := f.cancel
			if c == nil {
				c = &run.Cancelled{By: "temporal", Reason: "the workflow was cancelled through Temporal"}
			}
			var next run.Progress
			ci := cancelInput{Pipeline: in.Pipeline, Snapshot: p.Snapshot, Cancelled: c, Now: workflow.Now(ctx)}
			if err := workflow.ExecuteLocalActivity(lctx, a.Cancel, ci).Get(ctx, &next); err != nil {
				return nil, err
			}
			p = next
			hold(p.Spans)
		}
		return record()
	}
	// took takes the progress of a navigator call.
	took := func(d *progressDelta) error {
		p = d.apply(&p)
		hold(p.Spans)
		return stage(false)
	}
	advance := func(in advanceInput) error {
		in.Snapshot = p.Snapshot
		if version >= versionDelta {
			var d progressDelta
			if err := workflow.ExecuteLocalActivity(lctx, a.Next, in).Get(ctx, &d); err != nil {
				return err
			}
			return took(&d)
		}
		var next run.Progress
		if err := workflow.ExecuteLocalActivity(lctx, a.Advance, in).Get(ctx, &next); err != nil {
			return err
		}
		p = next
		hold(p.Spans)
		return stage(false)
	}
	// beginNext begins a run with local steps, its first step included
	// when the first batch is one step (BeginNext).
	beginNext := func() error {
		exec := workflow.GetInfo(ctx).WorkflowExecution.RunID
		bctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: time.Minute + stepTimeout, RetryPolicy: workflow.GetLocalActivityOptions(lctx).RetryPolicy})
		var d progressDelta
		bi := beginNextInput{beginInput: beginInput{Run: in, Execution: exec, Now: workflow.Now(ctx)}, StepTimeout: stepTimeout}
		if err := workflow.ExecuteLocalActivity(bctx, a.BeginNext, bi).Get(ctx, &d); err != nil {
			return err
		}
		p = d.apply(&run.Progress{})
		hold(p.Spans)
		if d.Outcome == nil {
			return stage(false)
		}
		// The first step ran, the navigator call after it failed.
		return advance(advanceInput{Pipeline: in.Pipeline, Outcomes: []run.StepOutcome{*d.Outcome}, Now: workflow.Now(ctx)})
	}
	if c := in.Carry; c != nil {
		p, answers, f.cancel = c.Progress, c.Answers, c.Cancel
		hold(c.Spans)
		in.Carry = nil
	} else if in.LocalSteps && version >= versionBeginNext {
		if err := beginNext(); err != nil {
			return stop(err)
		}
	} else if err := begin(); err != nil {
		return stop(err)
	}
	for rounds := 0; !p.Ended(); rounds++ {
		if ctx.Err() != nil {
			return stop(ctx.Err())
		}
		if w.continueNow(ctx, in, rounds, f) {
			if err := stage(true); err != nil {
				return stop(err)
			}
			in.Carry = &Carry{Progress: p, Spans: spans, Answers: answers, Cancel: f.cancel}
			return nil, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
		}
		if len(p.Batch) == 1 && in.LocalSteps && version >= versionDelta {
			// One local step: it and the navigator call after it are one
			// local activity.
			f.waiting = false
			t := p.Batch[0]
			var d progressDelta
			err := workflow.ExecuteLocalActivity(snctx, a.StepNext, stepNextInput{Pipeline: in.Pipeline, Snapshot: p.Snapshot,
				Token: t.ID, Answers: answers, Now: workflow.Now(ctx), StepTimeout: stepTimeout}).Get(ctx, &d)
			if ctx.Err() != nil {
				return stop(ctx.Err())
			}
			answers = nil
			if err == nil && d.Outcome == nil {
				if err := took(&d); err != nil {
					return stop(err)
				}
				continue
			}
			// The step failed for good, or the navigator call after it
			// failed: the outcome goes to the navigator on its own.
			o := run.StepOutcome{Token: t.ID, Fatal: fmt.Sprintf("step %q: %v", t.Node, err)}
			if err == nil {
				o = *d.Outcome
			}
			if err := advance(advanceInput{Pipeline: in.Pipeline, Outcomes: []run.StepOutcome{o}, Now: workflow.Now(ctx)}); err != nil {
				return stop(err)
			}
			continue
		}
		if len(p.Batch) > 0 {
			f.waiting = false
			futures := make([]workflow.Future, len(p.Batch))
			for i, t := range p.Batch {
				si := stepInput{Pipeline: in.Pipeline, Snapshot: p.Snapshot, Token: t.ID, Answers: answers}
				if in.LocalSteps {
					futures[i] = workflow.ExecuteLocalActivity(slctx, stepActivity, si)
				} else {
					futures[i] = workflow.ExecuteActivity(sctx, stepActivity, si)
				}
			}
			outcomes := make([]run.StepOutcome, len(p.Batch))
			for i, fu := range futures {
				if err := fu.Get(ctx, &outcomes[i]); err != nil {
					outcomes[i] = run.StepOutcome{Token: p.Batch[i].ID, Fatal: fmt.Sprintf("step %q: %v", p.Batch[i].Node, err)}
				}
			}
			if ctx.Err() != nil {
				// Cancelled: the steps were cancelled too (and waited
				// for), their outcomes are dropped.
				return stop(ctx.Err())
			}
			answers = nil
			if err := advance(advanceInput{Pipeline: in.Pipeline, Outcomes: outcomes, Now: workflow.Now(ctx)}); err != nil {
				return stop(err)
			}
			continue
		}
		// The run waits: for a person, a message, a signal (the inbox), or
		// its next timer or retry (a durable timer).
		f.res, f.waiting = p.Result, true
		ready := func() bool { return len(f.inbox) > 0 }
		now := workflow.Now(ctx)
		woke := true
		switch {
		case p.NextDue.IsZero():
			if err := workflow.Await(ctx, ready); err != nil {
				return stop(err)
			}
		case p.NextDue.After(now):
			ok, err := workflow.AwaitWithTimeout(ctx, p.NextDue.Sub(now), ready)
			if err != nil {
				return stop(err)
			}
			woke = ok
		default:
			woke = ready()
		}
		in2 := advanceInput{Pipeline: in.Pipeline, Now: workflow.Now(ctx)}
		if !woke {
			// The timer fired: the run's clock is at least its due time,
			// whatever the worker's clock says.
			if in2.Now.Before(p.NextDue) {
				in2.Now = p.NextDue
			}
		} else {
			next := f.inbox[0]
			f.inbox = f.inbox[1:]
			in2.Delivery, in2.Answers = next.delivery, next.answers
			answers = next.answers
		}
		f.waiting = false
		if err := advance(in2); err != nil {
			var ae *temporal.ApplicationError
			if woke && errors.As(err, &ae) && ae.Type() == errInvalid {
				// A delivery or answer that no longer applies (another
				// one took its place first): the run waits on.
				workflow.GetLogger(ctx).Warn("dropped an inbound delivery", "err", err)
				continue
			}
			return stop(err)
		}
	}
	res, err := record()
	if err != nil {
		return stop(err)
	}
	return res, nil
}

// continueNow reports whether the workflow should continue as new now:
// asked to (ContinueAfter rounds, or Temporal's suggestion), with nothing
// in its inbox and no update running, which the new run would lose.
func (w *Worker) continueNow(ctx workflow.Context, in RunInput, rounds int, f *flow) bool {
	due := in.ContinueAfter > 0 && rounds >= in.ContinueAfter || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	return rounds > 0 && due && len(f.inbox) == 0 && f.cancel == nil && workflow.AllHandlersFinished(ctx)
}

// handlers installs the updates and the query.
func (w *Worker) handlers(ctx workflow.Context, f *flow) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*run.Result, error) { return f.res, nil }); err != nil {
		return err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateResume,
		func(ctx workflow.Context, answers map[string]any) error {
			f.inbox = append(f.inbox, inbound{answers: answers})
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(answers map[string]any) error {
			if len(answers) == 0 {
				return sdk.Errorf(sdk.CodeInvalid, "no answers: give --set answer=…")
			}
			if f.ended || !f.waiting || len(f.res.Waiting) == 0 || pendingAnswers(f) {
				return sdk.Errorf(sdk.CodeInvalid, "task %s is not waiting for an answer; drop --set", workflow.GetInfo(ctx).WorkflowExecution.ID)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateDeliver,
		func(ctx workflow.Context, d run.Delivery) error {
			f.inbox = append(f.inbox, inbound{delivery: &d})
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(d run.Delivery) error {
			id := workflow.GetInfo(ctx).WorkflowExecution.ID
			if f.ended {
				return sdk.Errorf(sdk.CodeInvalid, "task %s is %s; it waits for nothing", id, f.res.Status)
			}
			if !f.waiting {
				return sdk.Errorf(sdk.CodeInvalid, "task %s is running its steps; send once it waits", id)
			}
			var waits []store.Wait
			if f.res != nil {
				waits = f.res.Waits
			}
			if !run.Matches(waits, d) {
				return &run.NoWaiterError{Task: id, Kind: d.Kind, Name: d.Name, Key: d.Key, Waits: waits}
			}
			return nil
		}})
	if err != nil {
		return err
	}
	held := workflow.GetSignalChannel(ctx, SignalDeliver)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var d run.Delivery
			if !held.Receive(ctx, &d) {
				return
			}
			f.inbox = append(f.inbox, inbound{delivery: &d})
		}
	})
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel,
		func(ctx workflow.Context, c run.Cancelled) error {
			f.cancel = &c
			return nil
		},
		workflow.UpdateHandlerOptions{Validator: func(c run.Cancelled) error {
			id := workflow.GetInfo(ctx).WorkflowExecution.ID
			switch {
			case c.By == "":
				return sdk.Errorf(sdk.CodeInvalid, "cancel task %s: say who cancels", id)
			case f.ended:
				return sdk.Errorf(sdk.CodeInvalid, "task %s already %s", id, f.res.Status)
			case f.cancel != nil:
				return sdk.Errorf(sdk.CodeInvalid, "task %s is being cancelled already (%s)", id, f.cancel)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, UpdateFollow, func(ctx workflow.Context, until Until) (*run.Result, error) {
		// A cancelled run still ends (cancelled) and settles the follow.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		if err := workflow.Await(ctx, func() bool { return f.settled(until) }); err != nil {
			return nil, err
		}
		return f.res, nil
	})
}

// pendingAnswers reports whether answers are already on their way.
func pendingAnswers(f *flow) bool {
	for _, in := range f.inbox {
		if in.answers != nil {
			return true
		}
	}
	return false
}

// RunNow is the run as its workflow holds it (QueryProgress): its task,
// with the status, waits and incident of now; with full, the execution
// so far, the run state of its last step and the finished spans not yet
// staged into the store (those staged are there, under the execution).
type RunNow struct {
	Task store.Task `json:"task"`
	// Running are the steps of the batch running now (their nodes).
	Running   []string         `json:"running,omitempty"`
	Execution *store.Execution `json:"execution,omitempty"`
	State     json.RawMessage  `json:"state,omitempty"`
	Spans     []store.Span     `json:"spans,omitempty"`
}

// runNow builds QueryProgress's answer; it reads f, p and spans and
// changes nothing (a query must not).
func runNow(f *flow, p *run.Progress, spans []store.Span, full bool) *RunNow {
	n := &RunNow{Task: p.Snapshot.Task}
	n.Task.Status, n.Task.Waits, n.Task.Incident = store.StatusRunning, nil, nil
	if (f.waiting || f.ended) && f.res != nil {
		n.Task.Status, n.Task.Waits, n.Task.Incident = f.res.Status, f.res.Waits, f.res.Incident
	}
	if !f.waiting && !f.ended {
		for _, t := range p.Batch {
			n.Running = append(n.Running, t.Node)
		}
	}
	if full && p.Snapshot.Execution.ID != "" {
		e := p.Snapshot.Execution
		n.Execution, n.State, n.Spans = &e, p.Snapshot.State, spans
	}
	return n
}

// spanSize is about the size of sp as JSON, counted without encoding it
// (which would cost the workflow more than the rest of a step): field
// names and punctuation are a fixed allowance. With escapes (from
// versionSpanEscapes), the texts count as encoding/json writes them
// (jsonTextSize); without, as their bytes, which runs begun before
// replay with.
func spanSize(sp *store.Span, escapes bool) int {
	size := func(s string) int { return len(s) }
	if escapes {
		size = jsonTextSize
	}
	n := 300 + len(sp.Task) + len(sp.Execution) + len(sp.TraceID) + len(sp.SpanID) + len(sp.ParentSpanID) + size(sp.Name) +
		size(string(sp.Kind)) + size(sp.Status.Message) + attributesSize(sp.Attrs(), size)
	for _, l := range sp.Links {
		n += 60 + len(l.TraceID) + len(l.SpanID) + attributesSize(maps.All(l.Attributes), size)
	}
	return n
}

// attributesSize is about the size of attrs as JSON (spanSize), each
// text's counted by size: a sum, the same in any order, and the same for
// a span made in this process (its Call's attributes among attrs) as for
// the span decoded from its JSON.
func attributesSize(attrs iter.Seq2[string, store.Value], size func(string) int) int {
	n := 0
	for k, v := range attrs {
		n += size(k) + 28 + size(v.Str())
		for _, s := range v.List() {
			n += size(s) + 3
		}
	}
	return n
}

// jsonTextSize is the size of s inside a JSON string as encoding/json
// writes it, or a little more: a control character, <, > or & is \u00XX
// (some control characters are shorter), " and \ take a backslash, a
// byte of invalid UTF-8 is \ufffd and U+2028, U+2029 are \u2028, \u2029.
func jsonTextSize(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += int(jsonEscapeExtra[c])
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n += 5 // \ufffd for one byte
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += w
	}
	return n
}

// jsonEscapeExtra is the bytes encoding/json adds to an ASCII character
// in a string (jsonTextSize).
var jsonEscapeExtra = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\':
			t[c] = 1
		case c < ' ' || c == '<' || c == '>' || c == '&':
			t[c] = 5
		}
	}
	return t
}()
