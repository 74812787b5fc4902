package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBeginScratchRecycled journals runs back to back, each Begin's and
// checkpoint's keys and values (summary, status index, execution summary,
// usage) carved from a scratch the next one reuses, and applies them all
// in one transaction: every task's derived entries are what its records
// give, and its summary says what each run wrote. Half the tasks have
// tags, so their Begins have more entries than a record's room holds. A value the journal kept
// by reference rather than copied would read as a later run's.
func TestBeginScratchRecycled(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	const n = 8
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		task := &Task{ID: id, Pipeline: strings.Repeat("p", 1+7*i), Strategy: StrategyRef{Version: fmt.Sprintf("v%d", i)}}
		for k := range 10 * (i % 2) { // more entries than a new journal record has room for (recKVs)
			task.Tags = append(task.Tags, fmt.Sprintf("tag%d", k))
		}
		ex := &Execution{ID: id + "-e", Mode: []string{"", "replay"}[i%2]}
		must(t, s.Begin(ctx, task, ex, &Checkpoint{State: []byte(`{}`)}))
		spans := []Span{callSpan(id, ex.ID, 1, int64(i), 1, 0.5), callSpan(id, ex.ID, 2, 100, int64(i), 0)}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex.ID, State: []byte(`{"step":1}`)}, spans...))
		if i%3 != 2 {
			end := func(e *Execution) {
				e.Status, e.Ended = StatusCompleted, e.Started.Add(time.Duration(i+1)*time.Millisecond)
			}
			must(t, s.FinishExecution(ctx, &Checkpoint{Task: id, Execution: ex.ID, State: []byte(`{"step":2}`)}, end, StatusCompleted))
		}
	}
	if got := s.jr.pending.Load(); got < 2*n {
		t.Fatalf("%d records pending, want every run's: the test applies none of them alone", got)
	}
	must(t, s.applyPending())
	checkDerived(t, s)
	seen := 0
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
		var i int
		if _, err := fmt.Sscanf(ts.ID, "s%d", &i); err != nil {
			return err
		}
		seen++
		status, ended := StatusCompleted, true
		if i%3 == 2 {
			status, ended = StatusRunning, false
		}
		if ts.Pipeline != strings.Repeat("p", 1+7*i) || ts.Version != fmt.Sprintf("v%d", i) || ts.Status != status || len(ts.Executions) != 1 {
			t.Errorf("%s: summary %+v", ts.ID, ts)
			return nil
		}
		es := ts.Executions[0]
		wantCalls := []CallUsage{{1, int64(i) + 1, 0.5}, {2, 100 + int64(i), 0}}
		if es.Mode != []string{"", "replay"}[i%2] || es.Ended != ended || !slices.Equal(es.Calls, wantCalls) ||
			ended && es.Latency != time.Duration(i+1)*time.Millisecond {
			t.Errorf("%s: execution summary %+v, want calls %v", ts.ID, es, wantCalls)
		}
		return nil
	}))
	if seen != n {
		t.Errorf("%d summaries, want %d", seen, n)
	}
}

// TestSummaryAppendersMatch: the appending forms of the summary and
// status index encoders write, after bytes already in the buffer, what
// the allocating forms return (a redacted value included).
func TestSummaryAppendersMatch(t *testing.T) {
	s := openTest(t)
	at := time.Date(2026, 11, 29, 1, 0, 0, 7, time.UTC)
	lead := []byte("lead")
	for _, tk := range []Task{
		{ID: "t1", Status: StatusRunning, Pipeline: "p", Created: at},
		{ID: "t2", Status: StatusFailed, Pipeline: "token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", Created: at, Strategy: StrategyRef{Version: "2"}},
	} {
		want, err := s.sumTaskValue(&tk)
		must(t, err)
		got, err := s.appendSumTaskValue(slices.Clone(lead), &tk)
		must(t, err)
		if !bytes.HasPrefix(got, lead) || !bytes.Equal(got[len(lead):], want) {
			t.Errorf("appendSumTaskValue %q, want %q after %q", got, want, lead)
		}
		if got := appendStatusIndexKey(slices.Clone(lead), tk.Status, tk.Created, tk.ID); !bytes.Equal(got[len(lead):], fieldIndexKey(pStatus, string(tk.Status), tk.Created, tk.ID)) {
			t.Errorf("appendStatusIndexKey %q", got)
		}
		want = append(append(append(append([]byte(pPipeStatus), tk.Pipeline...), 0), tk.Status...), 0)
		want = append(binary.BigEndian.AppendUint64(want, invTime(tk.Created)), tk.ID...)
		if got := appendPipeStatusKey(slices.Clone(lead), tk.Pipeline, tk.Status, tk.Created, tk.ID); !bytes.Equal(got[len(lead):], want) {
			t.Errorf("appendPipeStatusKey %q, want %q", got, want)
		}
	}
	for _, e := range []Execution{{}, {Mode: "replay"}, {Mode: "live", Started: at, Ended: at.Add(1500 * time.Microsecond)}, {Mode: "x\"y", Started: at, Ended: at.Add(time.Second)}} {
		want := `{}`
		switch {
		case e.Mode == "x\"y":
			want = `{"mode":"x\"y","latency_us":1000000}`
		case e.Mode == "replay":
			want = `{"mode":"replay"}`
		case !e.Ended.IsZero():
			want = `{"latency_us":1500}`
		}
		got := appendSumExecValue(slices.Clone(lead), &e)
		if !bytes.Equal(got[len(lead):], append([]byte{schemaVersion}, want...)) || !bytes.Equal(sumExecValue(&e), got[len(lead):]) {
			t.Errorf("appendSumExecValue(%+v) %q, want %q", e, got, want)
		}
	}
}

// TestCloneTaskInRoom: copies of tasks carved from one room equal their
// tasks, do not change with them, and are their own: an append to one's
// input or truth writes into no other copy, nor into a prefix carved
// after it.
func TestCloneTaskInRoom(t *testing.T) {
	var room keepRoom
	var tasks, clones []*Task
	var prefixes [][]byte
	for i := range 3 * keepChunk / 2 { // past a block of tasks
		task := &Task{ID: fmt.Sprintf("t%d", i), Input: json.RawMessage(fmt.Sprintf(`{"q":%d}`, i)), Truth: json.RawMessage(`"a"`),
			Owner: &Lease{PID: i, Host: "h"}}
		if i%7 == 0 {
			task.Input = json.RawMessage(`"` + strings.Repeat("x", keepBytes) + `"`) // made alone
		}
		tasks = append(tasks, task)
		clones = append(clones, cloneTaskIn(task, &room))
		prefixes = append(prefixes, appendSumPrefix(room.room(len(pSum)+8+len(task.ID)+1), task.Created, task.ID))
	}
	for i, c := range clones {
		c.Input = append(c.Input, '!')
		c.Truth = append(c.Truth, '!')
		c.Owner.PID = -1
		if i > 0 && clones[i-1].Owner.PID != -1 {
			t.Fatalf("clone %d's lease is clone %d's", i, i-1)
		}
	}
	for i, c := range clones {
		task := tasks[i]
		want := *task
		want.Input = append(slices.Clone(task.Input), '!')
		want.Truth = json.RawMessage(`"a"!`)
		want.Owner = &Lease{PID: -1, Host: "h"}
		if !reflect.DeepEqual(c, &want) {
			t.Errorf("clone %d: %+v, want %+v", i, c, &want)
		}
		if task.Owner.PID != i || string(task.Truth) != `"a"` {
			t.Errorf("task %d changed with its clone: %+v", i, task)
		}
		if p := sumPrefix(task.Created, task.ID); !bytes.Equal(prefixes[i], p) {
			t.Errorf("prefix %d: %q, want %q", i, prefixes[i], p)
		}
	}
}

// TestCheckpointExecutionFresh: the execution each update is given is
// its own as stored, whatever an update before it (of another execution,
// on a recycled scratch) set: an error, a mode, an end.
func TestCheckpointExecutionFresh(t *testing.T) {
	ctx := context.Background()
	for _, hold := range []bool{true, false} { // the journal's value, Badger's
		s := openTest(t)
		for i := range 3 {
			id := fmt.Sprintf("f%d", i)
			must(t, s.Begin(ctx, &Task{ID: id, Pipeline: "p"}, &Execution{ID: id + "-e"}, &Checkpoint{State: []byte(`{}`)}))
			if !hold {
				must(t, s.applyPending())
			}
			var seen Execution
			must(t, s.FinishExecution(ctx, &Checkpoint{Task: id, Execution: id + "-e", State: []byte(`{}`)}, func(e *Execution) {
				seen = *e
				e.Status, e.Error, e.Mode, e.Ended = StatusFailed, "boom", "replay", e.Started.Add(time.Second)
			}, StatusFailed))
			if seen.ID != id+"-e" || seen.Task != id || seen.Error != "" || seen.Mode != "" || !seen.Ended.IsZero() || seen.Status != StatusRunning {
				t.Errorf("hold %v: update of %s was given %+v", hold, id, seen)
			}
		}
	}
}
