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

// Task is the task's run as the cluster has it now, in the store's form:
// id, pipeline, tags, when it began, and, while it goes on, its status
// now (running, or waiting with its waits) as the workflow has it; once
// it ended, how.
func Task(ctx context.Context, c client.Client, id string) (*store.Task, error) {
	t, _, err := describe(ctx, c, id, false)
	return t, err
}

// Tree is Task with the run so far, while it goes on: its execution,
// the state of its last step (as the checkpoint) and the finished spans
// its workflow holds, not yet staged into the store (those staged are
// there, under the execution). A run that ended, or whose workers
// predate QueryProgress, has no executions here.
func Tree(ctx context.Context, c client.Client, id string) (*store.Tree, error) {
	t, now, err := describe(ctx, c, id, true)
	if err != nil {
		return nil, err
	}
	tr := &store.Tree{Task: *t, Executions: []store.ExecutionTree{}}
	if now != nil && now.Execution != nil {
		e := *now.Execution
		e.Status = t.Status
		x := store.ExecutionTree{Execution: e, Spans: now.Spans}
		if len(now.State) > 0 {
			x.Checkpoint = &store.Checkpoint{Task: t.ID, Execution: e.ID, State: now.State}
		}
		if x.Spans == nil {
			x.Spans = []store.Span{}
		}
		tr.Executions = append(tr.Executions, x)
	}
	return tr, nil
}

// describe is Task and, for a run going on, what QueryProgress answers.
func describe(ctx context.Context, c client.Client, id string, full bool) (*store.Task, *RunNow, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil, &NoRunError{Task: id}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != WorkflowName {
		return nil, nil, &NoRunError{Task: id}
	}
	t := taskOf(info)
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		now, err := progress(ctx, c, t, full)
		return t, now, err
	}
	r, err := Result(ctx, c, id)
	if err != nil {
		return nil, nil, err
	}
	t.Status, t.Incident = r.Status, r.Incident
	return t, nil, nil
}

// progress asks a running workflow for its run so far and sets t's
// status, waits and incident (and, from the run's own task, what the
// description lacks) from it. A workflow of workers that predate
// QueryProgress answers QueryStatus, whose last wait may be past.
func progress(ctx context.Context, c client.Client, t *store.Task, full bool) (*RunNow, error) {
	v, err := c.QueryWorkflow(ctx, t.ID, "", QueryProgress, full)
	var qf *serviceerror.QueryFailed
	if errors.As(err, &qf) && strings.Contains(qf.Message, "unknown queryType") {
		r, err := Status(ctx, c, t.ID)
		if err == nil && r != nil {
			t.Status, t.Waits, t.Incident = r.Status, r.Waits, r.Incident
		}
		return nil, err
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, &NoRunError{Task: t.ID}
	}
	if err != nil {
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

// Filter selects runs going on (Running): of Pipeline, with Status
// (running or waiting) and with Tag, begun from Since and before Until
// (each when set).
type Filter struct {
	Pipeline     string
	Status       store.Status
	Tag          string
	Since, Until time.Time
}

// listQueries bounds the status queries of one Running in flight.
const listQueries = 8

// Running lists the runs going on on the cluster that f selects, newest
// first, each with its status now as Task has it: one query per run,
// answered by a worker from the workflow's state, as the list of
// visibility records has no status but running.
func Running(ctx context.Context, c client.Client, f Filter) ([]*store.Task, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", WorkflowName)
	if !f.Since.IsZero() {
		q += fmt.Sprintf(" AND StartTime >= '%s'", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q += fmt.Sprintf(" AND StartTime < '%s'", f.Until.UTC().Format(time.RFC3339Nano))
	}
	var listed []*store.Task
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		for _, e := range resp.Executions {
			if t := taskOf(e); (f.Pipeline == "" || t.Pipeline == f.Pipeline) && (f.Tag == "" || slices.Contains(t.Tags, f.Tag)) {
				listed = append(listed, t)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	errs := make([]error, len(listed))
	sem := make(chan struct{}, listQueries)
	var wg sync.WaitGroup
	for i, t := range listed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := progress(ctx, c, t, false)
			if errors.Is(err, store.ErrNotFound) {
				t.Status = "" // ended between the list and the query
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
	for _, t := range listed {
		if t.Status != "" && !t.Status.Ended() && (f.Status == "" || t.Status == f.Status) {
			out = append(out, t)
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
