package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// TestBegin: the task, its execution and the first checkpoint are written
// together; a second Begin with the same task id writes nothing.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	task := &Task{ID: "t1", Pipeline: "p", Input: json.RawMessage(`{"a":1}`)}
	ex := &Execution{ID: "e1", Mode: "live"}
	must(t, s.Begin(ctx, task, ex, &Checkpoint{State: []byte(`{"step":0}`)}))
	tree, err := s.Tree(ctx, "t1")
	must(t, err)
	if tree.Task.Status != StatusRunning || len(tree.Executions) != 1 {
		t.Fatalf("task %+v, %d executions", tree.Task, len(tree.Executions))
	}
	got := tree.Executions[0]
	if got.Execution.ID != "e1" || got.Execution.Task != "t1" || got.Execution.Status != StatusRunning || got.Execution.TraceID != TraceIDFor("t1", "e1") {
		t.Fatalf("execution %+v", got.Execution)
	}
	if got.Checkpoint == nil || got.Checkpoint.Task != "t1" || got.Checkpoint.Execution != "e1" || string(got.Checkpoint.State) != `{"step":0}` {
		t.Fatalf("checkpoint %+v", got.Checkpoint)
	}

	err = s.Begin(ctx, &Task{ID: "t1", Pipeline: "p"}, &Execution{ID: "e2"}, &Checkpoint{State: []byte(`{}`)})
	wantErr(t, err, `begin task "t1": already exists`)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("not ErrExists: %v", err)
	}
	if _, err := s.Execution(ctx, "t1", "e2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("execution of the refused Begin: %v", err)
	}
	wantErr(t, s.Begin(ctx, &Task{ID: "bad id", Pipeline: "p"}, &Execution{}, &Checkpoint{}), `begin task: task id "bad id" has a bad character ' ' (use letters, digits and . _ - : +)`)
}
