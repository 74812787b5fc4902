package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/dag"
	_ "github.com/sextant-dev/sextant/plugins/script"
)

// TestStepwiseMatchesLocal drives pipelines through the Stepper seam (as
// the Temporal workflow does, every call on a fresh snapshot) and checks
// the recorded run equals a local run's: result, trace and spans.
func TestStepwiseMatchesLocal(t *testing.T) {
	for _, c := range []struct {
		name, file string
		input      map[string]any
	}{
		{"chain10", "testdata/chain10/pipeline.toml", map[string]any{"topic": "t"}},
		{"research-report (parallel DAG batches)", "../../../pipelines/research-report/pipeline.toml",
			map[string]any{"question": "Should we use an embedded key-value store for agent traces?"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			local, remote := openStore(t), openStore(t)
			prep := prepare(t, c.file)
			want, err := prep.Runner(run.Config{Store: local}).Start(ctx, run.Input{ID: "task-1", Input: c.input})
			if err != nil {
				t.Fatal(err)
			}
			stp := prepare(t, c.file).NewStepper(run.Config{}, remote)
			p, err := stp.Begin(ctx, run.Input{ID: "task-1", Execution: "exec-1", Input: c.input}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			p, spans := driveStepwise(t, stp, p)
			if err := run.RecordRun(ctx, remote, run.RecordOf(p, spans)); err != nil {
				t.Fatal(err)
			}
			if err := run.RecordRun(ctx, remote, run.RecordOf(p, spans)); err != nil {
				t.Fatalf("record again: %v", err)
			}
			got := stepwiseShape(t, remote, p.Result)
			if w := stepwiseShape(t, local, want); got != w {
				t.Errorf("stepwise run differs from the local run\n--- got\n%s--- want\n%s", got, w)
			}
		})
	}
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stepwiseShape(t *testing.T, s *store.Store, res *run.Result) string {
	t.Helper()
	tree, err := s.Tree(context.Background(), res.Task)
	if err != nil {
		t.Fatal(err)
	}
	r := *res
	r.Execution = ""
	js, _ := json.Marshal(r)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s %d %v\n", js, tree.Task.Status, len(tree.Executions), tree.Executions[0].Execution.Trace)
	spans := tree.Executions[0].Spans
	sort.Slice(spans, func(i, j int) bool { return spans[i].Seq < spans[j].Seq })
	for _, sp := range spans {
		delete(sp.Attributes, "sextant.latency_ms")
		a, _ := json.Marshal(sp.Attributes)
		fmt.Fprintf(&b, "%d %s %s %s %s\n", sp.Seq, sp.Name, sp.Kind, sp.Status.Code, a)
	}
	fmt.Fprintf(&b, "recordings %d\n", len(tree.Recordings))
	return b.String()
}

// TestStepperRunnerDerived: the runner a stepwise call derives from its
// stepper's base is the one NewRunner would make, so a field NewRunner
// sets that derive forgets fails here rather than in a Temporal run.
func TestStepperRunnerDerived(t *testing.T) {
	for _, file := range []string{"testdata/chain10/pipeline.toml", "testdata/events/pipeline.toml"} {
		derived, made := run.DerivedRunner(prepare(t, file).NewStepper(run.Config{}, nil))
		if !reflect.DeepEqual(derived, made) {
			t.Errorf("%s: the derived runner differs from NewRunner's\n%+v\n%+v", file, derived, made)
		}
	}
}

// TestRecordRunHalfwayOrTaken: RecordRun completes a record an earlier
// call left halfway (the task begun, nothing after), and refuses a task
// of that id the store has from elsewhere (ErrExists).
func TestRecordRunHalfwayOrTaken(t *testing.T) {
	ctx := context.Background()
	rec := openStore(t)
	stp := prepare(t, "testdata/chain10/pipeline.toml").NewStepper(run.Config{}, rec)
	p, err := stp.Begin(ctx, run.Input{ID: "task-1", Execution: "exec-1", Input: map[string]any{"topic": "t"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	spans := p.Spans
	for !p.Ended() {
		var outs []run.StepOutcome
		for _, tok := range p.Batch {
			o, err := stp.RunStep(ctx, p.Snapshot, tok.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, *o)
		}
		if p, err = stp.Advance(ctx, p.Snapshot, outs, nil, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		spans = append(spans, p.Spans...)
	}
	r := run.RecordOf(p, spans)
	begin := func(s *store.Store, hash string) {
		task, exec := r.Task, r.Execution
		task.Status, exec.Status, exec.Ended = store.StatusRunning, store.StatusRunning, time.Time{}
		task.Strategy.Hash = hash
		if err := s.Begin(ctx, &task, &exec, &store.Checkpoint{State: r.State}); err != nil {
			t.Fatal(err)
		}
	}
	halfway := openStore(t)
	begin(halfway, r.Task.Strategy.Hash)
	if err := run.RecordRun(ctx, halfway, r); err != nil {
		t.Fatalf("record over a halfway record: %v", err)
	}
	tree, err := halfway.Tree(ctx, "task-1")
	if err != nil {
		t.Fatal(err)
	}
	if tree.Task.Status != store.StatusCompleted || len(tree.Executions) != 1 || len(tree.Executions[0].Spans) != len(spans) {
		t.Errorf("halfway record completed as %s with %d executions, want completed with %d spans", tree.Task.Status, len(tree.Executions), len(spans))
	}
	taken := openStore(t)
	begin(taken, "another-strategy")
	if err := run.RecordRun(ctx, taken, r); !errors.Is(err, store.ErrExists) {
		t.Errorf("record over another task of that id: %v, want ErrExists", err)
	}
}
