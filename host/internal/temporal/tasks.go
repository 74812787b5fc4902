package temporal

import (
	"context"
	"errors"
	"fmt"

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
// id, pipeline, when it began, and, once it first waited or ended, its
// status, waits and incident (running before).
func Task(ctx context.Context, c client.Client, id string) (*store.Task, error) {
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
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		r, err := Status(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if r != nil {
			t.Status, t.Waits, t.Incident = r.Status, r.Waits, r.Incident
		}
		return t, nil
	}
	r, err := Result(ctx, c, id)
	if err != nil {
		return nil, err
	}
	t.Status, t.Incident = r.Status, r.Incident
	return t, nil
}

// Running lists the runs going on on the cluster (of pipeline, when not
// ""), newest first, as Task shows them before their first wait.
func Running(ctx context.Context, c client.Client, pipeline string) ([]*store.Task, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", WorkflowName)
	var out []*store.Task
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		for _, e := range resp.Executions {
			if t := taskOf(e); pipeline == "" || t.Pipeline == pipeline {
				out = append(out, t)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return out, nil
		}
	}
}

// taskOf is what a workflow's description says of its task.
func taskOf(info *workflowpb.WorkflowExecutionInfo) *store.Task {
	t := &store.Task{ID: info.GetExecution().GetWorkflowId(), Status: store.StatusRunning, Created: info.GetStartTime().AsTime()}
	if f := info.GetMemo().GetFields()[memoPipeline]; f != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(f, &t.Pipeline)
	}
	return t
}
