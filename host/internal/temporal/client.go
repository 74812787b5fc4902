package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Dial connects to a Temporal front end.
func Dial(ctx context.Context, hostPort, namespace string) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("temporal at %s: %w", hostPort, err)
	}
	return c, nil
}

// The memo fields of a run's workflow: its pipeline and tags, which a
// list of the runs going on shows and filters by (Running).
const (
	memoPipeline = "pipeline"
	memoTags     = "tags"
)

// Start starts a run on queue (the workflow id is the task id) and
// returns at once. A task id already used is an *ExistsError.
func Start(ctx context.Context, c client.Client, queue string, in RunInput) error {
	if in.Task == "" {
		return errors.New("start run: no task id")
	}
	if queue == "" {
		queue = DefaultTaskQueue
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: in.Task, TaskQueue: queue,
		Memo:                                     map[string]any{memoPipeline: in.Pipeline, memoTags: in.Tags},
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowName, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return &ExistsError{Task: in.Task}
	}
	if err != nil {
		return fmt.Errorf("start run %s: %w", in.Task, err)
	}
	return nil
}

// ExistsError is a task id a workflow has already: invalid input
// (sdk.ErrInvalid) and, to a server starting it, store.ErrExists.
type ExistsError struct{ Task string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("task %s exists on Temporal already", e.Task)
}

// Is makes the error sdk.ErrInvalid and store.ErrExists.
func (e *ExistsError) Is(target error) bool {
	return target == sdk.ErrInvalid || target == store.ErrExists
}

// Follow waits until the task's run ended or waits as until says, and
// returns its result.
func Follow(ctx context.Context, c client.Client, task string, until Until) (*run.Result, error) {
	var res *run.Result
	err := update(ctx, c, task, UpdateFollow, &res, until)
	var nf *serviceerror.NotFound
	// A NotFound for a running workflow is its start racing this call:
	// asked again a few times, never forever.
	for try := 0; errors.As(err, &nf) && try < maxRaceRetries; try++ {
		// The workflow closed (its result is the run's), was never
		// started, or started since the update was refused: waiting for
		// the result of a workflow that does not exist yet would wait
		// for it to start and then to end, and so would waiting for one
		// that is running and will wait for what the caller sends next.
		running, derr := isRunning(ctx, c, task)
		if derr != nil {
			return nil, err
		}
		if !running {
			return Result(ctx, c, task)
		}
		err = update(ctx, c, task, UpdateFollow, &res, until)
	}
	if isCompleted(err) {
		return Result(ctx, c, task)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// isRunning reports whether the task's workflow is running; an error
// when there is none.
func isRunning(ctx context.Context, c client.Client, task string) (bool, error) {
	if notFoundHook != nil {
		notFoundHook(task)
	}
	d, err := c.DescribeWorkflowExecution(ctx, task, "")
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Result waits for the task's workflow to close and returns the run's
// result (a cancelled run's too: the details of its cancellation).
func Result(ctx context.Context, c client.Client, task string) (*run.Result, error) {
	var res *run.Result
	err := c.GetWorkflow(ctx, task, "").Get(ctx, &res)
	var ce *temporal.CanceledError
	if errors.As(err, &ce) && ce.HasDetails() {
		err = ce.Details(&res)
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	return res, nil
}

// Cancel cancels the task's run, as sextant cancel does a local one: the
// workflow learns who cancels and why (UpdateCancel), then Temporal
// cancels it. A waiting run ends at once; a step in flight sees its
// context end at its next heartbeat, and the run, recorded cancelled once
// its steps stopped, is what Cancel returns. A run that has ended, or that
// another operator cancels at the same moment, is invalid input.
func Cancel(ctx context.Context, c client.Client, task string, by run.Cancelled) (*run.Result, error) {
	if err := update(ctx, c, task, UpdateCancel, nil, by); err != nil {
		return nil, err
	}
	if err := c.CancelWorkflow(ctx, task, ""); err != nil && !isCompleted(err) {
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			return nil, fmt.Errorf("cancel task %s: %w", task, err)
		}
	}
	res, err := Result(ctx, c, task)
	if err != nil {
		return nil, err
	}
	if res.Status != store.StatusCancelled {
		// The run ended another way before the cancel reached it.
		return res, sdk.Errorf(sdk.CodeInvalid, "task %s %s before the cancel reached it", task, res.Status)
	}
	return res, nil
}

// CancelHeld cancels the task's run without a worker: it signals who
// cancels and why (SignalCancel), then asks Temporal to cancel the
// workflow. Temporal keeps both until a worker takes the workflow, which
// then records the run cancelled as Cancel does. Temporal's terminate
// would end the workflow at once, but nothing would record the run in
// the store, nor stop its steps (RATIONALE "Why a Temporal cancel is an
// update first, and serve --temporal acts through the app layer").
func CancelHeld(ctx context.Context, c client.Client, task string, by run.Cancelled) error {
	if err := signal(ctx, c, task, SignalCancel, UpdateCancel, by); err != nil {
		return err
	}
	if err := c.CancelWorkflow(ctx, task, ""); err != nil && !isCompleted(err) {
		return fmt.Errorf("cancel task %s: %w", task, err)
	}
	return nil
}

// DeliverHeld delivers a message to the task's run without a worker:
// Temporal keeps it (SignalDeliver) until a worker takes the workflow,
// and the run takes it at its next wait.
func DeliverHeld(ctx context.Context, c client.Client, task string, d run.Delivery) error {
	return signal(ctx, c, task, SignalDeliver, UpdateDeliver, d)
}

// signal sends a signal to the task's running sextant workflow; a task
// with none is a *NoRunError, one whose workflow closed refused as
// endedErr says for update.
func signal(ctx context.Context, c client.Client, task, name, update string, arg any) error {
	d, err := c.DescribeWorkflowExecution(ctx, task, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf) || err == nil && d.GetWorkflowExecutionInfo().GetType().GetName() != WorkflowName:
		return &NoRunError{Task: task}
	case err != nil:
		return fmt.Errorf("task %s: %w", task, err)
	case d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return endedErr(task, update)
	}
	err = c.SignalWorkflow(ctx, task, "", name, arg)
	if errors.As(err, &nf) || isCompleted(err) {
		return endedErr(task, update) // closed since it was described
	}
	if err != nil {
		return fmt.Errorf("task %s: %w", task, err)
	}
	return nil
}

func isCompleted(err error) bool {
	var fp *serviceerror.FailedPrecondition
	return errors.As(err, &fp) // "workflow execution already completed"
}

// Resume answers the steps of task waiting for a person.
func Resume(ctx context.Context, c client.Client, task string, answers map[string]any) error {
	return update(ctx, c, task, UpdateResume, nil, answers)
}

// Deliver delivers a message or signal to the task's run.
func Deliver(ctx context.Context, c client.Client, task string, d run.Delivery) error {
	return update(ctx, c, task, UpdateDeliver, nil, d)
}

// Broadcast delivers the signal name to every running sextant workflow
// (of pipeline, when not "") that waits for it, oldest first, and returns
// their task ids in that order. None waiting is not an error: a BPMN
// signal nobody catches is lost. A run no worker answers for (within
// wait, when not 0) may wait for it: then the signal is delivered to
// none and the error is a *NoWorkerError, so that it is not lost on the
// runs no worker could be asked about.
func Broadcast(ctx context.Context, c client.Client, pipeline, name string, vars map[string]any, wait time.Duration) ([]string, error) {
	waiting, err := Running(ctx, c, Filter{Pipeline: pipeline, Status: store.StatusWaiting, Wait: wait})
	if err != nil {
		return nil, err
	}
	for _, s := range waiting {
		if s.NoWorker {
			return nil, fmt.Errorf("signal %q delivered to none: %w", name, &NoWorkerError{Task: s.Task.ID, Queue: s.queue})
		}
	}
	d := run.Delivery{Kind: store.WaitSignal, Name: name, Vars: vars}
	var out []string
	for i := len(waiting) - 1; i >= 0; i-- { // the list is newest first
		id := waiting[i].Task.ID
		if !run.Matches(waiting[i].Task.Waits, d) {
			continue
		}
		if err := Deliver(ctx, c, id, d); err != nil {
			return out, fmt.Errorf("task %s: %w", id, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// Status is the task's run result so far: nil before it first waited or
// ended.
func Status(ctx context.Context, c client.Client, task string) (*run.Result, error) {
	v, err := c.QueryWorkflow(ctx, task, "", QueryStatus)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, &NoRunError{Task: task}
		}
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	var res *run.Result
	if err := v.Get(&res); err != nil {
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	return res, nil
}

// endedErr refuses an update to a run whose workflow closed.
func endedErr(task, update string) error {
	if update == UpdateCancel {
		return sdk.Errorf(sdk.CodeInvalid, "task %s has ended on Temporal; nothing to cancel", task)
	}
	return sdk.Errorf(sdk.CodeInvalid, "task %s has ended on Temporal; it waits for nothing", task)
}

// update sends an update and waits for its answer; a refusal by the
// workflow's validator is invalid input (exit 2).
func update(ctx context.Context, c client.Client, task, name string, out any, arg any) error {
	return updateTry(ctx, c, task, name, out, arg, 0)
}

// notFoundHook, when set (by tests only), runs when a call was refused
// as NotFound, before the workflow is looked up: where a start racing
// the call lands.
var notFoundHook func(task string)

// maxRaceRetries bounds how often a call refused as NotFound by a
// workflow that turns out to be running is made again.
const maxRaceRetries = 5

func updateTry(ctx context.Context, c client.Client, task, name string, out any, arg any, retry int) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: task, UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, out)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return sdk.Errorf(sdk.CodeInvalid, "%s", ae.Message())
	}
	var nf *serviceerror.NotFound
	switch {
	case name == UpdateFollow:
	case errors.As(err, &nf):
		running, derr := isRunning(ctx, c, task)
		switch {
		case derr != nil:
			return &NoRunError{Task: task}
		case running && retry < maxRaceRetries:
			// Started since the update was refused: ask again.
			return updateTry(ctx, c, task, name, out, arg, retry+1)
		case running:
			return err
		}
		return endedErr(task, name)
	case isCompleted(err):
		return endedErr(task, name)
	}
	return err
}
