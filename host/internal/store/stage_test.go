package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestStageSpans: spans staged for a task not in the store are invisible
// (no task, no tree) until the task is written; then they are its
// execution's first spans, later spans number on from them, and staging
// the same spans again changes nothing.
func TestStageSpans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	span := func(seq uint64) Span {
		return Span{Task: "long", Execution: "long-e1", Seq: seq, Name: "step", Kind: SpanInternal,
			Start: t0.Add(time.Duration(seq) * time.Millisecond), End: t0.Add(time.Duration(seq+1) * time.Millisecond),
			Attributes: Attributes{"sextant.node": String("classify")}}
	}
	staged := []Span{span(1), span(2), span(3)}
	must(t, s.StageSpans(ctx, staged))
	must(t, s.StageSpans(ctx, []Span{span(1), span(2), span(3)})) // a retried call
	if _, err := s.Task(ctx, "long"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("task of staged spans: %v, want ErrNotFound", err)
	}
	if tasks, err := s.Tasks(ctx, Query{}); err != nil || len(tasks) != 0 {
		t.Fatalf("tasks: %v %v, want none", tasks, err)
	}
	if staged[0].TraceID != TraceIDFor("long", "long-e1") || staged[0].SpanID == "" {
		t.Errorf("staged span ids not derived: %+v", staged[0])
	}

	task := &Task{ID: "long", Pipeline: "p", Input: json.RawMessage(`{}`)}
	exec := &Execution{Task: "long", ID: "long-e1", Mode: "live", Strategy: StrategyRef{Name: "s", Version: "1.0.0", Hash: "abc"}}
	must(t, s.Begin(ctx, task, exec, &Checkpoint{Task: "long", Execution: "long-e1", State: []byte(`{}`)}))
	more := []Span{span(0), span(0)} // numbered by the store
	must(t, s.AppendSpans(ctx, more))
	if more[0].Seq != 4 || more[1].Seq != 5 {
		t.Errorf("spans after staged ones numbered %d, %d, want 4, 5", more[0].Seq, more[1].Seq)
	}
	tree, err := s.Tree(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	got := tree.Executions[0].Spans
	if len(got) != 5 {
		t.Fatalf("tree holds %d spans, want 5", len(got))
	}
	for i, sp := range got {
		if sp.Seq != uint64(i+1) || sp.SpanID != SpanIDFor("long", "long-e1", sp.Seq) {
			t.Errorf("span %d: seq %d id %s", i, sp.Seq, sp.SpanID)
		}
	}

	if err := s.StageSpans(ctx, []Span{span(0)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("staging a span without seq: %v, want ErrInvalid", err)
	}
	bad := span(9)
	bad.Execution = "no/slash"
	if err := s.StageSpans(ctx, []Span{bad}); err == nil {
		t.Error("staging a span with a bad execution id: no error")
	}
}
