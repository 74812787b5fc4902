package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is the fixed clock of the tests.
var t0 = time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC)

// stepClock returns a clock that moves one second per reading.
func stepClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Second) }
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig() Config {
	return NewConfig().WithClock(stepClock()).WithLogger(quietLog())
}

func openTest(t testing.TB, cfgs ...Config) *Store {
	t.Helper()
	cfg := testConfig()
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), ".sextant"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %q", want)
	}
	if err.Error() != want {
		t.Fatalf("error\n got: %s\nwant: %s", err, want)
	}
}

// seed writes a task with one execution of n spans and returns them.
func seed(t testing.TB, s *Store, id string, n int) (*Task, *Execution) {
	t.Helper()
	ctx := context.Background()
	task := &Task{ID: id, Pipeline: "email-triage", Input: json.RawMessage(`{"body":"hi"}`), Tags: []string{"easy"}}
	must(t, s.CreateTask(ctx, task))
	e := &Execution{Task: id, ID: id + "-e1", Mode: "live", Strategy: StrategyRef{Name: "email-handler", Version: "2.0.0", Hash: "abc"}}
	must(t, s.CreateExecution(ctx, e))
	spans := make([]Span, n)
	for i := range spans {
		spans[i] = Span{
			Task: id, Execution: e.ID, Name: "step", Kind: SpanInternal,
			Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(time.Duration(i+1) * time.Millisecond),
			Attributes: Attributes{"sextant.node": String("classify"), "n": Int(int64(i))},
		}
	}
	if n > 0 {
		must(t, s.AppendSpans(ctx, spans))
	}
	return task, e
}

func TestTaskLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	task := &Task{Pipeline: "email-triage", Input: json.RawMessage(`{"body":"x"}`), Tags: []string{"b", "a", "b"}}
	must(t, s.CreateTask(ctx, task))
	if len(task.ID) != 26 || task.Status != StatusRunning || !task.Created.Equal(t0.Add(time.Second)) {
		t.Fatalf("defaults not filled: %+v", task)
	}
	got, err := s.Task(ctx, task.ID)
	must(t, err)
	if want := []string{"a", "b"}; !equalStrings(got.Tags, want) {
		t.Fatalf("tags %v, want %v", got.Tags, want)
	}
	must(t, s.SetTaskStatus(ctx, task.ID, StatusWaiting))
	must(t, s.AddTags(ctx, task.ID, "c"))
	got, err = s.Task(ctx, task.ID)
	must(t, err)
	if got.Status != StatusWaiting || !equalStrings(got.Tags, []string{"a", "b", "c"}) {
		t.Fatalf("after update: %+v", got)
	}
	list, err := s.Tasks(ctx, Query{Tag: "c"})
	must(t, err)
	if len(list) != 1 || list[0].ID != task.ID {
		t.Fatalf("tag index not updated: %+v", list)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTaskErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	must(t, s.CreateTask(ctx, &Task{ID: "t1", Pipeline: "p"}))
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"bad id", func() error { return s.CreateTask(ctx, &Task{ID: "a/b", Pipeline: "p"}) },
			`create task: task id "a/b" has a bad character '/' (use letters, digits and . _ - : +)`},
		{"leading dot", func() error { return s.CreateTask(ctx, &Task{ID: ".hidden", Pipeline: "p"}) },
			`create task: task id ".hidden" must start with a letter or digit`},
		{"no pipeline", func() error { return s.CreateTask(ctx, &Task{ID: "t2"}) },
			`create task: pipeline name is empty`},
		{"bad status", func() error { return s.CreateTask(ctx, &Task{ID: "t2", Pipeline: "p", Status: "done"}) },
			`create task: task "t2": unknown status "done"`},
		{"bad input", func() error {
			return s.CreateTask(ctx, &Task{ID: "t2", Pipeline: "p", Input: json.RawMessage(`{`)})
		}, `create task: task "t2": input is not valid JSON`},
		{"exists", func() error { return s.CreateTask(ctx, &Task{ID: "t1", Pipeline: "p"}) },
			`create task "t1": already exists`},
		{"not found", func() error { _, err := s.Task(ctx, "nope"); return err },
			`read task "nope": not found`},
		{"update missing", func() error { return s.SetTaskStatus(ctx, "nope", StatusFailed) },
			`update task "nope": not found`},
		{"update bad status", func() error { return s.SetTaskStatus(ctx, "t1", "paused") },
			`update task "t1": unknown status "paused"`},
		{"id change", func() error { return s.UpdateTask(ctx, "t1", func(t *Task) error { t.ID = "t9"; return nil }) },
			`update task "t1": the id cannot change (to "t9")`},
		{"bad query", func() error { _, err := s.Tasks(ctx, Query{Status: "x"}); return err },
			`list tasks: unknown status "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, tt.run(), tt.want) })
	}
	if _, err := s.Task(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestTasksQuery(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	add := func(id, pipeline string, st Status, tags ...string) {
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: pipeline, Status: st, Tags: tags}))
	}
	add("a", "p1", StatusCompleted, "hard")
	add("b", "p2", StatusFailed)
	add("c", "p1", StatusFailed, "hard")
	add("d", "p1", StatusRunning)
	ids := func(q Query) string {
		ts, err := s.Tasks(ctx, q)
		must(t, err)
		out := ""
		for _, t := range ts {
			out += t.ID
		}
		return out
	}
	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"all newest first", Query{}, "dcba"},
		{"pipeline", Query{Pipeline: "p1"}, "dca"},
		{"status", Query{Status: StatusFailed}, "cb"},
		{"tag", Query{Tag: "hard"}, "ca"},
		{"tag and status", Query{Tag: "hard", Status: StatusCompleted}, "a"},
		{"pipeline and status", Query{Pipeline: "p1", Status: StatusFailed}, "c"},
		{"limit", Query{Limit: 2}, "dc"},
		{"no match", Query{Pipeline: "p3"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(tt.q); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTasksQueryStatus: a query by status, and by pipeline and status
// (by the status indexes; for completed, which they leave out, a walk
// of the time or pipeline index filtered by the summaries), lists what
// filtering every task lists, newest first, page by page, tasks and
// summaries, with tasks interleaved every way.
func TestTasksQueryStatus(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	pipes := []string{"p1", "p2", "p3"}
	sts := []Status{StatusCompleted, StatusFailed, StatusRunning, StatusWaiting}
	var all []Task
	for i := range 90 {
		tk := Task{ID: fmt.Sprintf("t%03d", i), Pipeline: pipes[(i*i)%3], Status: sts[(i/2+i/7)%4], Created: t0.Add(time.Duration(i) * time.Second)}
		must(t, s.CreateTask(ctx, &tk))
		all = append(all, tk)
	}
	must(t, s.SetTaskStatus(ctx, "t010", StatusFailed))
	all[10].Status = StatusFailed
	must(t, s.SetTaskStatus(ctx, "t011", StatusCompleted))
	all[11].Status = StatusCompleted
	for _, p := range append(pipes, "") {
		for _, st := range sts {
			var want []string
			for i := len(all) - 1; i >= 0; i-- {
				if (p == "" || all[i].Pipeline == p) && all[i].Status == st {
					want = append(want, all[i].ID)
				}
			}
			var got []string
			q := Query{Pipeline: p, Status: st, Limit: 4}
			for {
				page, next, err := s.TaskPage(ctx, q)
				must(t, err)
				for _, tk := range page {
					got = append(got, tk.ID)
				}
				if next == "" {
					break
				}
				q.After = next
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %v, want %v", p, st, got, want)
			}
			got = got[:0]
			for _, ts := range summaries(t, s, Query{Pipeline: p, Status: st}) {
				got = append(got, ts.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: summaries %v, want %v", p, st, got, want)
			}
		}
	}
}
