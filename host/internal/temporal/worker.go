package temporal

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultTaskQueue is the task queue workers poll and runs start on
// unless told otherwise.
const DefaultTaskQueue = "sextant"

// WorkerOptions configures a worker.
type WorkerOptions struct {
	// TaskQueue is the queue to poll (default DefaultTaskQueue).
	TaskQueue string
	// Pipelines are the pipelines the worker runs, by name.
	Pipelines Pipelines
	// Sink is where results land.
	Sink Sink
	// Heartbeat is how often a running step heartbeats (default 2 s; it
	// must be well under the runs' heartbeat timeout).
	Heartbeat time.Duration
	// OnStep, for tests, is called as a step activity starts, with the
	// step's context (which ends when the step is cancelled).
	OnStep func(ctx context.Context, task, token string)
	// OnAdvance, for tests, is called as a navigator call given a
	// batch's outcomes starts; an error fails the call (which is
	// retried).
	OnAdvance func(task string) error
	// Worker tunes the SDK's worker (concurrency, sticky cache).
	Worker worker.Options
	// Replay, when set, runs the shards of replays fanned out on this
	// task queue (RegisterReplay).
	Replay ReplayShardFunc
}

// Worker runs sextant's workflow and activities for one task queue.
type Worker struct {
	w    worker.Worker
	acts *activities
}

// NewWorker registers the workflow and activities on a worker of c.
func NewWorker(c client.Client, opts WorkerOptions) (*Worker, error) {
	if opts.Pipelines == nil || opts.Sink == nil {
		return nil, errors.New("temporal worker: pipelines and sink are required")
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = DefaultTaskQueue
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 2 * time.Second
	}
	wk := &Worker{acts: &activities{pipelines: opts.Pipelines, sink: opts.Sink, heartbeat: opts.Heartbeat, onStep: opts.OnStep,
		onAdvance: opts.OnAdvance}}
	wk.w = worker.New(c, opts.TaskQueue, opts.Worker)
	wk.w.RegisterWorkflowWithOptions(wk.Workflow, workflow.RegisterOptions{Name: WorkflowName})
	wk.w.RegisterActivityWithOptions(wk.acts.Step, activity.RegisterOptions{Name: stepActivity})
	wk.w.RegisterActivityWithOptions(wk.acts.Record, activity.RegisterOptions{Name: recordActivity})
	wk.w.RegisterActivityWithOptions(wk.acts.StageSpans, activity.RegisterOptions{Name: stageActivity})
	if opts.Replay != nil {
		RegisterReplay(wk.w, opts.Replay)
	}
	return wk, nil
}

// Start starts polling; Stop stops.
func (w *Worker) Start() error { return w.w.Start() }

// Stop stops the worker, letting running activities finish.
func (w *Worker) Stop() { w.w.Stop() }

// Run polls until interrupted (a signal, or a closed channel).
func (w *Worker) Run(stop <-chan any) error { return w.w.Run(stop) }
