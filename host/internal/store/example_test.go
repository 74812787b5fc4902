package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// A run records its task, one execution, a step's spans with the
// checkpoint after the step, and `sextant show` reads it all back.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "sextant")
	defer os.RemoveAll(tmp)
	clock := func() time.Time { return time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC) }
	s, err := store.Open(ctx, filepath.Join(tmp, ".sextant"), store.NewConfig().WithClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	task := &store.Task{ID: "task-1", Pipeline: "email-triage", Input: json.RawMessage(`{"body":"hi"}`)}
	_ = s.CreateTask(ctx, task)
	exec := &store.Execution{Task: task.ID, ID: "e1", Mode: "live"}
	_ = s.CreateExecution(ctx, exec)
	step := store.Span{Task: task.ID, Execution: exec.ID, Name: "classify", Start: clock(), End: clock().Add(time.Second),
		Attributes: store.Attributes{"api_key": store.String("hunter2")}}
	_ = s.Checkpoint(ctx, &store.Checkpoint{Task: task.ID, Execution: exec.ID, Step: 1, State: []byte(`{"vars":{}}`)}, step)

	tree, _ := s.Tree(ctx, "task-1")
	for _, e := range tree.Executions {
		for _, sp := range e.Spans {
			fmt.Println(e.Execution.ID, sp.Seq, sp.Name, sp.End.Sub(sp.Start), sp.Attributes["api_key"].Str())
		}
		fmt.Println("checkpoint after step", e.Checkpoint.Step)
	}
	// Output:
	// e1 1 classify 1s [REDACTED]
	// checkpoint after step 1
}
