package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
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

// TestBeginFloor: Begin skips its look in Badger for a task whose keys
// sort after every task key in the store, and only then. Each case's id
// sorts after all before it; each task arrives another way first — by
// CreateTask, an import, a Begin still pending, a Begin applied — and a
// Begin of it is refused, not journaled twice.
func TestBeginFloor(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	var looks atomic.Int32
	setTestHook(func(p string) {
		if p == "begin-looked" {
			looks.Add(1)
		}
	})
	defer setTestHook(nil)
	begin := func(id string) error {
		return s.Begin(ctx, &Task{ID: id, Pipeline: "p"}, &Execution{ID: id + "-e"}, &Checkpoint{State: []byte(`{}`)})
	}
	must(t, begin("b1")) // looks: no floor yet
	must(t, begin("b2"))
	if n := looks.Load(); n != 1 {
		t.Fatalf("%d looks in Badger for two new tasks, want 1: the floor spares none, the test tests nothing", n)
	}

	other, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	must(t, other.CreateTask(ctx, &Task{ID: "f6", Pipeline: "p"}))
	var export bytes.Buffer
	_, err = other.Export(ctx, &export, ExportOptions{})
	must(t, err)
	must(t, other.Close())

	for _, c := range []struct {
		id     string
		before func()
	}{
		{"c3", func() { must(t, s.CreateTask(ctx, &Task{ID: "c3", Pipeline: "p"})) }},
		{"d4", func() { must(t, begin("d4")) }},
		{"e5", func() {
			must(t, begin("e5"))
			must(t, s.applyPending())
		}},
		{"f6", func() {
			_, err := s.Import(ctx, bytes.NewReader(export.Bytes()), "export")
			must(t, err)
		}},
	} {
		c.before()
		if err := begin(c.id); !errors.Is(err, ErrExists) {
			t.Errorf("%s: Begin of a task that exists: %v, want ErrExists", c.id, err)
		}
	}
}

// TestBeginBacklog: a Begin that finds journalBacklog records pending
// applies them before it journals its own.
func TestBeginBacklog(t *testing.T) {
	holdJournal(t)
	old := journalBacklog
	journalBacklog = 50
	t.Cleanup(func() { journalBacklog = old })
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	for i := range journalBacklog {
		must(t, s.PutRecording(ctx, &Recording{Hash: fmt.Sprintf("r%d", i), Kind: RecordChat, Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}))
	}
	must(t, s.Begin(ctx, &Task{ID: "t", Pipeline: "p"}, &Execution{ID: "e"}, &Checkpoint{State: []byte(`{}`)}))
	if n := s.jr.pending.Load(); n != 1 {
		t.Errorf("%d records pending after a Begin past the backlog, want 1 (its own)", n)
	}
}

// TestBeginIndexKeys: the index entries Begin journals are setTaskIndexes',
// each key its own slice (an append to one never writes into the next).
func TestBeginIndexKeys(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 0, 0, 5, time.UTC)
	for _, task := range []*Task{
		{ID: "t1", Pipeline: "p", Created: at},
		{ID: "01JABCDEFGHJKMNPQRSTVWXYZ0", Pipeline: "", Created: at, Tags: []string{"a", "bb", "c\x00d"}},
	} {
		var want []kv
		must(t, setTaskIndexes(kvSetter{&want}, task))
		buf := make([]byte, 3, 8) // bytes carved before, and an array to outgrow
		got := appendTaskIndexes([]kv{{k: []byte("x")}}, task, &checkpointScratch{buf: &buf})[1:]
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", task.ID, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].k, want[i].k) || got[i].v != nil || cap(got[i].k) != len(got[i].k) {
				t.Errorf("%s entry %d: %q (cap %d), %q; want %q, nil", task.ID, i, got[i].k, cap(got[i].k), got[i].v, want[i].k)
			}
		}
	}
}

// TestCloneTask: Begin's copy of a task equals it and shares nothing the
// caller may change.
func TestCloneTask(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC)
	for _, task := range []*Task{
		{ID: "t1", Input: json.RawMessage(`{"q":1}`), Truth: json.RawMessage(`"a"`), Tags: []string{"x"},
			Rules: map[string]string{"r": "v"}, Owner: &Lease{PID: 7, Host: "h", Started: at}},
		{ID: "t2", Truth: json.RawMessage(`2`)},
		{ID: "t3", Input: json.RawMessage(`{}`), Truth: json.RawMessage{}},
		{ID: "t4"},
	} {
		c := cloneTask(task)
		if !reflect.DeepEqual(c, task) {
			t.Fatalf("clone %+v\n of %+v", c, task)
		}
		if len(task.Input) > 0 {
			task.Input[0] = '!'
		}
		if len(task.Truth) > 0 {
			task.Truth[0] = '!'
		}
		if task.Owner != nil {
			task.Owner.Host = "other"
		}
		if task.Rules != nil {
			task.Rules["r"] = "changed"
		}
		if bytes.HasPrefix(c.Input, []byte("!")) || bytes.HasPrefix(c.Truth, []byte("!")) ||
			c.Owner != nil && c.Owner.Host != "h" || c.Rules != nil && c.Rules["r"] != "v" {
			t.Errorf("%s: the clone changed with the task: %+v", task.ID, c)
		}
		if c.Input != nil {
			c.Input = append(c.Input, '1')
			if len(c.Truth) > 0 && c.Truth[0] == '1' {
				t.Errorf("%s: an append to the clone's input wrote its truth", task.ID)
			}
		}
	}
}

// TestSharedRules: copies of equal rules share one map, which a change
// to the task's own map does not reach; other rules get a copy of
// their own.
func TestSharedRules(t *testing.T) {
	rules := map[string]string{"default": "h1", "other": "h2"}
	a := cloneTask(&Task{ID: "a", Rules: rules})
	b := cloneTask(&Task{ID: "b", Rules: map[string]string{"default": "h1", "other": "h2"}})
	if reflect.ValueOf(a.Rules).UnsafePointer() != reflect.ValueOf(b.Rules).UnsafePointer() {
		t.Error("equal rules were copied twice")
	}
	rules["default"] = "changed"
	if a.Rules["default"] != "h1" {
		t.Errorf("a copy's rules changed with the task's: %v", a.Rules)
	}
	c := cloneTask(&Task{ID: "c", Rules: rules})
	if c.Rules["default"] != "changed" || b.Rules["default"] != "h1" {
		t.Errorf("changed rules: copies %v and %v", c.Rules, b.Rules)
	}
	if d := cloneTask(&Task{ID: "d"}); d.Rules != nil {
		t.Errorf("no rules copied as %v", d.Rules)
	}
}
