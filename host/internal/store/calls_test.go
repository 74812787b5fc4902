package store

import (
	"context"
	"encoding/json"
	"testing"
)

// TestRecordCallSummary: a call the recording proxy records puts its
// execution and its usage in its task's summary, for a task it creates
// and for one a run created (Begin), as every other write of executions
// and spans does: the summary and usage entries are what a rebuild from
// the records makes, and the summaries list the call.
func TestRecordCallSummary(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	must(t, s.Begin(ctx, &Task{ID: "run", Pipeline: "p"}, &Execution{ID: "run-e1"}, &Checkpoint{State: []byte(`{}`)}))
	for _, task := range []string{"call", "run"} {
		must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: task, Pipeline: "proxy", Input: json.RawMessage(`{}`)},
			Execution: &Execution{ID: task + "-e2"}, Spans: []Span{callSpan(task, task+"-e2", 1, 40, 7, 0.01)}}))
	}
	checkDerived(t, s)
	calls := map[string]int{}
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
		for _, e := range ts.Executions {
			calls[e.ID] += len(e.Calls)
		}
		return nil
	}))
	if calls["call-e2"] != 1 || calls["run-e2"] != 1 {
		t.Errorf("calls in the summaries: %v, want 1 for call-e2 and run-e2", calls)
	}
}
