package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestGroupCommitConcurrent has many runs checkpoint and record at once,
// one of them checkpointing an execution that does not exist: every
// other write lands, and only that one fails, every time.
func TestGroupCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	const workers, steps = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		id := fmt.Sprintf("grp-%d", w)
		seed(t, s, id, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step := uint64(1); step <= steps; step++ {
				rec := &Recording{Hash: fmt.Sprintf("%s-%d", id, step), Kind: RecordChat, Task: id,
					Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}
				if err := s.PutRecording(ctx, rec); err != nil {
					errs <- err
					return
				}
				sp := Span{Task: id, Execution: id + "-e1", Name: "step", Start: t0}
				if err := s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: id + "-e1", Step: step, State: []byte("{}")}, sp); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	seed(t, s, "ghost", 0)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range steps {
			err := s.CheckpointExecution(ctx, &Checkpoint{Task: "ghost", Execution: "no-such", State: []byte("{}")}, func(*Execution) {})
			if !errors.Is(err, ErrNotFound) {
				errs <- fmt.Errorf("checkpoint of a missing execution: %v, want not found", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range workers {
		id := fmt.Sprintf("grp-%d", w)
		c, err := s.LatestCheckpoint(ctx, id, id+"-e1")
		must(t, err)
		spans, err := s.Spans(ctx, id, id+"-e1")
		must(t, err)
		if c.Step != steps || len(spans) != steps {
			t.Errorf("%s: checkpoint at step %d with %d spans, want %d and %d", id, c.Step, len(spans), steps, steps)
		}
		if _, err := s.Recording(ctx, fmt.Sprintf("%s-%d", id, steps)); err != nil {
			t.Errorf("%s: last recording: %v", id, err)
		}
	}
}

// TestFinishExecution ends an execution and sets its task's status in
// one write, with the root span written last below every other seq.
func TestFinishExecution(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	task := &Task{ID: "fin", Pipeline: "p", Input: json.RawMessage(`{}`)}
	ex := &Execution{Mode: "live"}
	must(t, s.Begin(ctx, task, ex, &Checkpoint{State: []byte("{}")}))
	// Steps' spans from seq 2 (seq 1 is the root, written at the end);
	// seq 3 is a provider call, whose usage goes to the task's summary.
	for seq := uint64(2); seq <= 4; seq++ {
		sp := Span{Task: "fin", Execution: ex.ID, Seq: seq, Name: "step", Start: t0}
		if seq == 3 {
			sp.Attributes = Attributes{AttrGenAIUsageInputTokens: Int(7), AttrGenAIUsageOutputTokens: Int(5), "sextant.cost_usd": Float(0.5)}
		}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: "fin", Execution: ex.ID, Step: seq - 1, State: []byte("{}")}, sp))
	}
	root := Span{Task: "fin", Execution: ex.ID, Seq: 1, Name: "run", Start: t0}
	must(t, s.FinishExecution(ctx, &Checkpoint{Task: "fin", Execution: ex.ID, Step: 3, State: []byte("{}")},
		func(e *Execution) { e.Status, e.Ended = StatusCompleted, t0.Add(time.Minute) }, StatusCompleted, root))
	got, err := s.Task(ctx, "fin")
	must(t, err)
	e, err := s.Execution(ctx, "fin", ex.ID)
	must(t, err)
	if got.Status != StatusCompleted || e.Status != StatusCompleted {
		t.Fatalf("task %s, execution %s; want both completed", got.Status, e.Status)
	}
	spans, err := s.Spans(ctx, "fin", ex.ID)
	must(t, err)
	for i, sp := range spans {
		if sp.Seq != uint64(i+1) {
			t.Fatalf("span %d has seq %d: spans out of order %+v", i, sp.Seq, spans)
		}
	}
	if len(spans) != 4 || spans[0].Name != "run" {
		t.Fatalf("got %d spans, first %q; want 4, run first", len(spans), spans[0].Name)
	}
	tasks, err := s.Tasks(ctx, Query{Status: StatusCompleted})
	must(t, err)
	if len(tasks) != 1 || tasks[0].ID != "fin" {
		t.Fatalf("completed tasks %v, want fin", tasks)
	}
	if tasks, err = s.Tasks(ctx, Query{Status: StatusRunning}); err != nil || len(tasks) != 0 {
		t.Fatalf("running tasks %v (%v), want none", tasks, err)
	}
	var sums []TaskSummary
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error { sums = append(sums, *ts); return nil }))
	if len(sums) != 1 || sums[0].Status != StatusCompleted || len(sums[0].Executions) != 1 || !sums[0].Executions[0].Ended ||
		!slices.Equal(sums[0].Executions[0].Calls, []CallUsage{{Seq: 3, Tokens: 12, CostUSD: 0.5}}) {
		t.Fatalf("summaries %+v, want fin completed, one ended execution with the call at seq 3", sums)
	}
	// An unknown status writes nothing.
	if err := s.FinishExecution(ctx, &Checkpoint{Task: "fin", Execution: ex.ID}, nil, "done"); err == nil {
		t.Fatal("FinishExecution with an unknown status: no error")
	}
}
