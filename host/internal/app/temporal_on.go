//go:build !notemporal

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// onTemporal is the backend of tasks that run as workflows of a Temporal
// cluster (task id = workflow id); the workers record them in their store.
type onTemporal struct {
	c client.Client
	t TemporalTarget
	// wait bounds each query of a running workflow, and what needs a
	// worker asks one first (--query-timeout); 0 (run --temporal): a
	// call waits for a worker as long as its caller does.
	wait time.Duration
	// hold leaves a message or a cancel with Temporal when no worker
	// answers (the command line), rather than refusing it (serve).
	hold bool
	// cursors seals the list's cursors: a server's cursors are good
	// until it stops.
	cursors *serve.Sealer
}

func openTemporal(ctx context.Context, t TemporalTarget, _ Options) (Backend, error) {
	c, err := temporal.Dial(ctx, t.Addr, t.Namespace)
	if err != nil {
		return nil, err
	}
	if t.Queue == "" {
		t.Queue = temporal.DefaultTaskQueue
	}
	b := &onTemporal{c: c, t: t, wait: t.QueryTimeout, hold: true, cursors: serve.NewSealer()}
	return b, nil
}

// held is the result of a message or cancel Temporal holds for want of a
// worker (nw): the run goes on until a worker takes it.
func held(task, what string, nw *temporal.NoWorkerError) *run.Result {
	return &run.Result{Task: task, Status: store.StatusRunning, Error: fmt.Sprintf(
		"%s held by Temporal: no worker is polling task queue %q; the run takes it once one does", what, nw.Queue)}
}

func (b *onTemporal) Kind() Kind { return Temporal }

func (b *onTemporal) Close() error {
	b.c.Close()
	return nil
}

// Run starts the workflow and follows it: until it ends or waits for
// anything, or, with Wait, until it ends or waits for a person.
func (b *onTemporal) Run(ctx context.Context, req RunRequest) (*run.Result, error) {
	in := req.Input
	if in.ID == "" {
		in.ID = temporal.NewTaskID(time.Now())
	}
	if err := b.start(ctx, req.Prep, in); err != nil {
		return nil, err
	}
	until := temporal.UntilWait
	if req.Wait {
		until = temporal.UntilPerson
	}
	return temporal.Follow(ctx, b.c, in.ID, until)
}

// Start is sextant serve --temporal's POST /api/v1/runs: it starts the
// workflow of task in.ID as Run does and, with follow, follows it until
// it ends or waits for anything; else it returns once the cluster has it.
func (b *onTemporal) Start(ctx context.Context, prep *run.Prepared, in run.Input, follow bool) (*run.Result, error) {
	if err := b.start(ctx, prep, in); err != nil || !follow {
		return nil, err
	}
	return temporal.Follow(ctx, b.c, in.ID, temporal.UntilWait)
}

// start starts the workflow of task in.ID (set) on prep's pipeline.
func (b *onTemporal) start(ctx context.Context, prep *run.Prepared, in run.Input) error {
	if prep.Pipeline.Evolve.Online {
		return invalid(errors.New("--temporal: this pipeline learns as it runs ([evolve] online = true), which needs the store to itself; run it without --temporal"))
	}
	ri := temporal.RunInput{Pipeline: prep.Pipeline.Name, Task: in.ID, Input: in.Input,
		Truth: in.Truth, Tags: in.Tags, Start: in.Start, LocalSteps: b.t.LocalSteps}
	if prep.Pipeline.Strategy.Pin || prep.Pipeline.Strategy.File == "" {
		// The worker must run the strategy seen here; otherwise it runs
		// the live version, which the store it writes to holds.
		ri.Strategy = prep.Strategy.Hash()
	}
	if t := prep.Pipeline.Limits.Timeout; t > 0 {
		ri.StepTimeout = t.Std()
	}
	return temporal.Start(ctx, b.c, b.t.Queue, ri)
}

// answering refuses, within b.wait, what needs a worker of the task's
// run when none answers for it (serve --temporal): an update, and
// following the run, wait for a worker as long as their caller does.
func (b *onTemporal) answering(ctx context.Context, task string) error {
	if b.wait == 0 {
		return nil
	}
	return temporal.Answering(ctx, b.c, task, b.wait)
}

// Resume answers a run's waiting steps and follows it.
func (b *onTemporal) Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error) {
	if err := b.answering(ctx, task); err != nil {
		return nil, err
	}
	if len(answers) > 0 {
		if err := temporal.Resume(ctx, b.c, task, answers); err != nil {
			return nil, err
		}
	}
	return temporal.Follow(ctx, b.c, task, temporal.UntilWait)
}

// Send delivers a message to a run and follows it.
func (b *onTemporal) Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error) {
	if task == "" {
		return nil, &UsageError{errors.New("with --temporal, name the TASK to send to")}
	}
	err := b.answering(ctx, task)
	if nw := (*temporal.NoWorkerError)(nil); b.hold && errors.As(err, &nw) {
		if err := temporal.DeliverHeld(ctx, b.c, task, d); err != nil {
			return nil, err
		}
		res := held(task, fmt.Sprintf("%s %q", d.Kind, d.Name), nw)
		res.Error += " at its next wait, if it waits for it then (else the worker drops it, logging why)"
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	if err := temporal.Deliver(ctx, b.c, task, d); err != nil {
		return nil, err
	}
	return temporal.Follow(ctx, b.c, task, temporal.UntilWait)
}

// Signal broadcasts a signal to the runs waiting for it and follows each.
func (b *onTemporal) Signal(ctx context.Context, pipe string, d run.Delivery) ([]*run.Result, error) {
	tasks, err := temporal.Broadcast(ctx, b.c, pipe, d.Name, d.Vars, b.wait)
	if err != nil {
		return nil, err
	}
	var results []*run.Result
	for _, t := range tasks {
		res, err := temporal.Follow(ctx, b.c, t, temporal.UntilWait)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// Task is a task's run as the cluster has it now (sextant serve
// --temporal shows a run its store lacks so).
func (b *onTemporal) Task(ctx context.Context, id string) (*serve.ClusterRun, error) {
	s, err := temporal.Task(ctx, b.c, id, b.wait)
	if err != nil {
		return nil, err
	}
	return clusterRun(s), nil
}

// Tree is a task's run as the cluster has it now, with its execution so
// far while it goes on.
func (b *onTemporal) Tree(ctx context.Context, id string) (*serve.ClusterRun, error) {
	s, err := temporal.Tree(ctx, b.c, id, b.wait)
	if err != nil {
		return nil, err
	}
	return clusterRun(s), nil
}

// Running lists a page of the runs going on on the cluster that f
// selects, newest first, each with its status now: of about limit runs
// of Temporal's list from after, whose page token the cursor is.
func (b *onTemporal) Running(ctx context.Context, f serve.ClusterFilter, limit int, after string) ([]*serve.ClusterRun, string, error) {
	token, ok := b.cursors.Unseal(after)
	if !ok {
		return nil, "", fmt.Errorf("%w: cursor %.40q is not one this server gave", store.ErrBadCursor, after)
	}
	seen, next, err := temporal.RunningPage(ctx, b.c, temporal.Filter{Pipeline: f.Pipeline, Status: f.Status, Tag: f.Tag,
		Since: f.Since, Until: f.Until, Wait: b.wait}, limit, token)
	if err != nil {
		return nil, "", err
	}
	out := make([]*serve.ClusterRun, len(seen))
	for i, s := range seen {
		out[i] = clusterRun(s)
	}
	return out, b.cursors.Seal(next), nil
}

// clusterRun is a run as the cluster has it, in serve's terms.
func clusterRun(s *temporal.Seen) *serve.ClusterRun {
	r := &serve.ClusterRun{Tree: s.Tree}
	if s.NoWorker {
		r.Workers = serve.WorkersNone
	}
	return r
}

// ServeCluster is sextant serve's --temporal: a function that connects to
// the cluster of t, whose runs the server then shows and operates when
// its store lacks them; with no address, none.
func ServeCluster(t TemporalTarget, o Options) func(context.Context) (serve.Cluster, error) {
	if t.Addr == "" {
		return nil
	}
	return func(ctx context.Context) (serve.Cluster, error) {
		b, err := openTemporal(ctx, t, o)
		if err != nil {
			return nil, err
		}
		ot := b.(*onTemporal)
		if ot.hold = false; ot.wait == 0 {
			ot.wait = DefaultQueryTimeout
		}
		return ot, nil
	}
}

var _ serve.Cluster = (*onTemporal)(nil)

// Cancel cancels a run's workflow; the workers record it. A run no
// worker answers for is refused on serve --temporal, and on the command
// line cancelled by Temporal once a worker takes it, who and why held
// with it (RATIONALE "Why a Temporal cancel is an update first, and
// serve --temporal acts through the app layer").
func (b *onTemporal) Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error) {
	err := b.answering(ctx, task)
	if nw := (*temporal.NoWorkerError)(nil); b.hold && errors.As(err, &nw) {
		if err := temporal.CancelHeld(ctx, b.c, task, c); err != nil {
			return nil, err
		}
		return held(task, "cancel by "+c.By, nw), nil
	}
	if err != nil {
		return nil, err
	}
	return temporal.Cancel(ctx, b.c, task, c)
}

// errStore is what Temporal leaves to the store its workers write to.
func errStore(what string) error {
	return &UsageError{fmt.Errorf("--temporal: %s acts on the store the workers write to: run it without --temporal", what)}
}

func (b *onTemporal) Retry(context.Context, string, map[string]any) (*run.Result, error) {
	return nil, errStore("retry")
}
func (b *onTemporal) Set(context.Context, string, map[string]any) (*run.Result, error) {
	return nil, errStore("set")
}
func (b *onTemporal) Feedback(context.Context, FeedbackRequest) ([]*store.Reward, error) {
	return nil, errStore("feedback")
}
func (b *onTemporal) Import(context.Context, string, io.Reader) (store.Counts, error) {
	return store.Counts{}, errStore("import")
}
func (b *onTemporal) Decide(context.Context, DecideRequest) (*Decided, error) {
	return nil, errStore("review")
}
func (b *onTemporal) Move(context.Context, *pipeline.Pipeline, evolve.Move) (*evolve.Live, *evolve.Live, error) {
	return nil, nil, errStore("promote and rollback")
}
