package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// NoRunError is a task the cluster has no sextant run of: invalid input
// (sdk.ErrInvalid) and, to a server looking it up, store.ErrNotFound.
type NoRunError struct{ Task string }

func (e *NoRunError) Error() string { return fmt.Sprintf("task %s: no such run on Temporal", e.Task) }

// Is makes the error sdk.ErrInvalid and store.ErrNotFound.
func (e *NoRunError) Is(target error) bool {
	return target == sdk.ErrInvalid || target == store.ErrNotFound
}

// NoWorkerError is a run going on that no worker answered a query for:
// none polls its task queue, or none did within the caller's bound. It
// is sdk.ErrUnavailable: what needs a worker (a query, an update) cannot
// be done until one polls again.
type NoWorkerError struct {
	Task, Queue string
}

func (e *NoWorkerError) Error() string {
	return fmt.Sprintf("task %s: no worker is polling task queue %q (none answered); try again once a worker runs", e.Task, e.Queue)
}

// Is makes the error sdk.ErrUnavailable.
func (e *NoWorkerError) Is(target error) bool { return target == sdk.ErrUnavailable }

// Seen is a task's run as the cluster has it now: the task and, from
// Tree while the run goes on, its execution so far. NoWorker says that
// no worker answered the query for the run's status: the tree then holds
// only what the server records of it (running since it began, its
// pipeline and tags, no execution), and its status now is unknown.
type Seen struct {
	store.Tree
	NoWorker bool
	queue    string // the run's task queue
}

// Task is the task's run as the cluster has it now: id, pipeline, tags,
// when it began, and, while it goes on, its status now (running, or
// waiting with its waits) as the workflow has it; once it ended, how.
// wait, when not 0, bounds the query a running workflow is asked.
func Task(ctx context.Context, c client.Client, id string, wait time.Duration) (*Seen, error) {
	return describe(ctx, c, id, false, wait)
}

// Tree is Task with the run so far, while it goes on: its execution,
// the state of its last step (as the checkpoint) and the finished spans
// its workflow holds, not yet staged into the store (those staged are
// there, under the execution). A run that ended, or whose workers
// predate QueryProgress or do not answer, has no executions here.
func Tree(ctx context.Context, c client.Client, id string, wait time.Duration) (*Seen, error) {
	return describe(ctx, c, id, true, wait)
}

// Answering is nil when a worker answers for the task's run, or it
// ended; else a *NoWorkerError (or the run's lookup error). The calls
// that need a worker (updates) ask it first so that, with none polling,
// they are refused within wait instead of waiting for one.
func Answering(ctx context.Context, c client.Client, id string, wait time.Duration) error {
	s, err := describe(ctx, c, id, false, wait)
	if err == nil && s.NoWorker {
		err = &NoWorkerError{Task: id, Queue: s.queue}
	}
	return err
}

// describe is Task, and Tree with full.
func describe(ctx context.Context, c client.Client, id string, full bool, wait time.Duration) (*Seen, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, &NoRunError{Task: id}
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != WorkflowName {
		return nil, &NoRunError{Task: id}
	}
	t := taskOf(info)
	s := &Seen{Tree: store.Tree{Executions: []store.ExecutionTree{}}, queue: info.GetTaskQueue()}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		now, err := progress(ctx, c, t, full, wait)
		var nw *NoWorkerError
		switch {
		case errors.As(err, &nw):
			s.NoWorker = true
		case err != nil:
			return nil, err
		}
		s.Task = *t
		if now != nil && now.Execution != nil {
			s.Executions = append(s.Executions, execution(t, now))
		}
		return s, nil
	}
	r, err := Result(ctx, c, id)
	if err != nil {
		return nil, err
	}
	t.Status, t.Incident = r.Status, r.Incident
	s.Task = *t
	return s, nil
}

// execution is the execution so far of a run whose workflow answered now.
func execution(t *store.Task, now *RunNow) store.ExecutionTree {
	e := *now.Execution
	e.Status = t.Status
	x := store.ExecutionTree{Execution: e, Spans: now.Spans}
	if len(now.State) > 0 {
		x.Checkpoint = &store.Checkpoint{Task: t.ID, Execution: e.ID, State: now.State}
	}
	if x.Spans == nil {
		x.Spans = []store.Span{}
	}
	return x
}

// progress asks a running workflow for its run so far and sets t's
// status, waits and incident (and, from the run's own task, what the
// description lacks) from it. A workflow of workers that predate
// QueryProgress answers QueryStatus, whose last wait may be past. wait,
// when not 0, bounds the query; a query no worker answers is a
// *NoWorkerError (its Queue left for the caller to fill in).
func progress(ctx context.Context, c client.Client, t *store.Task, full bool, wait time.Duration) (*RunNow, error) {
	qctx, cancel := ctx, context.CancelFunc(func() {})
	if wait > 0 {
		qctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	v, err := c.QueryWorkflow(qctx, t.ID, "", QueryProgress, full)
	var qf *serviceerror.QueryFailed
	if errors.As(err, &qf) && strings.Contains(qf.Message, "unknown queryType") {
		r, err := Status(qctx, c, t.ID)
		if err == nil && r != nil {
			t.Status, t.Waits, t.Incident = r.Status, r.Waits, r.Incident
		}
		if ctx.Err() == nil && noWorker(err) {
			return nil, &NoWorkerError{Task: t.ID}
		}
		return nil, err
	}
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, &NoRunError{Task: t.ID}
	case err != nil && ctx.Err() == nil && noWorker(err):
		return nil, &NoWorkerError{Task: t.ID}
	case err != nil:
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	var now RunNow
	if err := v.Get(&now); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	if now.Task.ID == t.ID { // begun: the run's task is the whole one
		now.Task.Created = t.Created
		*t = now.Task
	}
	return &now, nil
}

// noWorker reports whether a query failed for want of a worker, its
// caller's context being alive: the server says it saw none poll the
// task queue lately, or the query timed out (by its own bound, or by the
// server's shorter one) before a worker took it.
func noWorker(err error) bool {
	var fp *serviceerror.FailedPrecondition
	var de *serviceerror.DeadlineExceeded
	var ce *serviceerror.Canceled
	return errors.As(err, &fp) && strings.Contains(strings.ToLower(fp.Message), "no poller") ||
		errors.As(err, &de) || errors.As(err, &ce) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Filter selects runs going on (Running): of Pipeline, with Status
// (running or waiting) and with Tag, begun from Since and before Until
// (each when set). Wait, when not 0, bounds each run's query.
type Filter struct {
	Pipeline     string
	Status       store.Status
	Tag          string
	Since, Until time.Time
	Wait         time.Duration
}

// listQueries bounds the status queries of one Running in flight.
const listQueries = 8

// Running lists the runs going on on the cluster that f selects, newest
// first, each with its status now as Task has it: one query per run,
// answered by a worker from the workflow's state, as the list of
// visibility records has no status but running. A run no worker answers
// for is listed as Task has it then (NoWorker), whatever f.Status, as
// its status now is unknown; once one run's query found no worker, the
// other runs of its task queue are not asked, so that a list with every
// worker down answers within one bound, not one per run.
func Running(ctx context.Context, c client.Client, f Filter) ([]*Seen, error) {
	var listed []*Seen
	var token []byte
	for {
		page, next, err := list(ctx, c, f, 0, token)
		if err != nil {
			return nil, err
		}
		listed = append(listed, page...)
		if token = next; len(token) == 0 {
			break
		}
	}
	return ask(ctx, c, f, listed)
}

// RunningPage is one page of Running: of the next size runs of the
// cluster's list (about: the server may give fewer) from token ("" for
// the first page), those f selects; next is the token of the page after,
// nil after the last. A token the server refuses is store.ErrBadCursor.
func RunningPage(ctx context.Context, c client.Client, f Filter, size int, token []byte) (runs []*Seen, next []byte, err error) {
	listed, next, err := list(ctx, c, f, size, token)
	var ia *serviceerror.InvalidArgument
	if len(token) > 0 && errors.As(err, &ia) {
		return nil, nil, fmt.Errorf("%w: the cluster refuses it: %s", store.ErrBadCursor, ia.Message)
	}
	if err != nil {
		return nil, nil, err
	}
	runs, err = ask(ctx, c, f, listed)
	return runs, next, err
}

// list is one page of the visibility records of the runs going on that
// f selects by what the records hold (all but the status), and the token
// of the page after (size 0: the server's page size).
func list(ctx context.Context, c client.Client, f Filter, size int, token []byte) ([]*Seen, []byte, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", WorkflowName)
	if !f.Since.IsZero() {
		q += fmt.Sprintf(" AND StartTime >= '%s'", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q += fmt.Sprintf(" AND StartTime < '%s'", f.Until.UTC().Format(time.RFC3339Nano))
	}
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: int32(min(size, 1000)), NextPageToken: token})
	if err != nil {
		return nil, nil, fmt.Errorf("list runs: %w", err)
	}
	var listed []*Seen
	for _, e := range resp.Executions {
		if t := taskOf(e); (f.Pipeline == "" || t.Pipeline == f.Pipeline) && (f.Tag == "" || slices.Contains(t.Tags, f.Tag)) {
			listed = append(listed, &Seen{Tree: store.Tree{Task: *t, Executions: []store.ExecutionTree{}}, queue: e.GetTaskQueue()})
		}
	}
	return listed, resp.NextPageToken, nil
}

// ask queries each listed run for its status now (at most listQueries at
// once) and keeps those still going on with f.Status.
func ask(ctx context.Context, c client.Client, f Filter, listed []*Seen) ([]*Seen, error) {
	errs := make([]error, len(listed))
	var unanswered sync.Map // task queues a query found no worker on
	sem := make(chan struct{}, listQueries)
	var wg sync.WaitGroup
	for i, s := range listed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, ok := unanswered.Load(s.queue); ok {
				s.NoWorker = true
				return
			}
			_, err := progress(ctx, c, &s.Task, false, f.Wait)
			var nw *NoWorkerError
			switch {
			case errors.Is(err, store.ErrNotFound):
				s.Task.Status = "" // ended between the list and the query
				err = nil
			case errors.As(err, &nw):
				unanswered.Store(s.queue, true)
				s.NoWorker = true
				err = nil
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := listed[:0]
	for _, s := range listed {
		if st := s.Task.Status; st != "" && !st.Ended() && (f.Status == "" || st == f.Status || s.NoWorker) {
			out = append(out, s)
		}
	}
	return out, nil
}

// taskOf is what a workflow's description says of its task.
func taskOf(info *workflowpb.WorkflowExecutionInfo) *store.Task {
	t := &store.Task{ID: info.GetExecution().GetWorkflowId(), Status: store.StatusRunning, Created: info.GetStartTime().AsTime()}
	if f := info.GetMemo().GetFields()[memoPipeline]; f != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(f, &t.Pipeline)
	}
	if f := info.GetMemo().GetFields()[memoTags]; f != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(f, &t.Tags)
	}
	return t
}
