package run

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Cancelling a run. A run in progress in this process is tracked by task
// id while it drives (track); Cancel ends its context with a *Cancelled
// cause, the steps running see their context end (a provider or tool call
// in flight is abandoned, never recorded), and the run records itself
// cancelled (exec.cancelled). A task that no process runs (waiting, in an
// incident, interrupted) is ended in the store directly. A task that
// another live process runs is that process's to cancel: the CLI asks it
// over the store's socket or its API.

// Cancelled is why a run was cancelled: the cause its context ends with.
type Cancelled struct {
	// By is who cancelled: user@host, or the API client.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

func (c *Cancelled) Error() string {
	if c.Reason == "" {
		return "cancelled by " + c.By
	}
	return "cancelled by " + c.By + ": " + c.Reason
}

// ErrNotCancellable marks a cancel refused because the task already ended
// or another operator is acting on it.
var ErrNotCancellable = errors.New("cannot cancel")

// notCancellable is an ErrNotCancellable with its own message.
type notCancellable struct{ error }

func (e *notCancellable) Unwrap() error { return e.error }
func (e *notCancellable) Is(target error) bool {
	return target == ErrNotCancellable || target == sdk.ErrInvalid
}

// active is the runs in progress in this process, by task id.
var active activeRuns

// activeRuns is a map of the runs in progress under a mutex rather than
// a sync.Map, whose every store allocates (the key boxed, an entry): a
// map keeps its room as runs come and go.
type activeRuns struct {
	mu   sync.Mutex
	runs map[string]*activeRun
}

// add registers a as task's run, unless task has one already.
func (m *activeRuns) add(task string, a *activeRun) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[task]; ok {
		return false
	}
	if m.runs == nil {
		m.runs = map[string]*activeRun{}
	}
	m.runs[task] = a
	return true
}

// remove removes a, if it is still task's run.
func (m *activeRuns) remove(task string, a *activeRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs[task] == a {
		delete(m.runs, task)
	}
}

// get is task's run, if one is in progress.
func (m *activeRuns) get(task string) (*activeRun, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.runs[task]
	return a, ok
}

type activeRun struct {
	task string
	// ctx is the run's context, which Cancel ends with its *Cancelled
	// (made by the first that looks at it: most runs end uncancelled,
	// and nothing waits on their context).
	ctx lazyCtx
	mu  sync.Mutex
	by  *Cancelled // set by the first Cancel
	// done is closed once the run has ended (ended); it is made by the
	// first Cancel that waits for it (ended), since most runs end
	// without one.
	done  chan struct{}
	ended bool
}

// track registers task's run as in progress until the returned run's
// untrack is called; the context it returns is the one Cancel ends. A
// task whose run is in progress here already is refused: the second of
// two operators acting at once gets the error, and nothing changes.
func track(ctx context.Context, task string) (context.Context, *activeRun, error) {
	return trackIn(ctx, task, new(activeRun))
}

// trackIn is track registering a, which is new (the caller's room).
func trackIn(ctx context.Context, task string, a *activeRun) (context.Context, *activeRun, error) {
	a.task, a.ctx.parent = task, ctx
	if !active.add(task, a) {
		a.ctx.cancel()
		return nil, nil, refused{&store.StateError{Kind: store.ErrOwned, Msg: fmt.Sprintf("task %s is running in this process", task)}}
	}
	return &a.ctx, a, nil
}

// untrack ends what track began: the run is no longer in progress.
func (a *activeRun) untrack() {
	active.remove(a.task, a)
	a.mu.Lock()
	a.ended = true
	if a.done != nil {
		close(a.done)
	}
	a.mu.Unlock()
	a.ctx.cancel()
}

// endedCh is a channel closed once the run has ended.
func (a *activeRun) endedCh() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
		if a.ended {
			close(a.done)
		}
	}
	return a.done
}

// cancelOf is the *Cancelled that ended ctx, or nil.
func cancelOf(ctx context.Context) *Cancelled {
	if ctx.Err() == nil {
		return nil // not done, so no cause: the common case costs no allocation
	}
	var c *Cancelled
	if errors.As(context.Cause(ctx), &c) {
		return c
	}
	return nil
}

// Running reports whether task's run is in progress in this process.
func Running(task string) bool {
	_, ok := active.get(task)
	return ok
}

// Cancel cancels task: its run in progress in this process, which it
// waits for, or else the stored task, when no live process runs it. A task
// that has ended, or that another operator cancels at the same moment, is
// ErrNotCancellable; one that another live process runs is store.ErrOwned.
func Cancel(ctx context.Context, s *store.Store, task string, c *Cancelled) (*Result, error) {
	if a, ok := active.get(task); ok {
		a.mu.Lock()
		first := a.by == nil
		if first {
			a.by = c
		}
		a.mu.Unlock()
		if !first {
			return nil, &notCancellable{fmt.Errorf("task %s is being cancelled already (%s)", task, a.by)}
		}
		a.ctx.cancelCause(c)
		select {
		case <-a.endedCh():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t, err := s.Task(ctx, task)
		if err != nil {
			return nil, err
		}
		res := &Result{Task: task, Status: t.Status}
		if t.Status != store.StatusCancelled {
			// The run ended another way before it saw the cancel.
			return res, &notCancellable{fmt.Errorf("task %s %s before the cancel reached it", task, t.Status)}
		}
		res.Error = c.Error()
		return res, nil
	}
	return cancelStored(ctx, s, task, c)
}

// cancelStored ends a task that no live process runs, with its latest
// live execution.
func cancelStored(ctx context.Context, s *store.Store, task string, c *Cancelled) (*Result, error) {
	tree, err := s.Head(ctx, task)
	if err != nil {
		return nil, err
	}
	exec := ""
	for i := range tree.Executions {
		if tree.Executions[i].Execution.Mode != "replay" {
			exec = tree.Executions[i].Execution.ID
		}
	}
	err = s.EndTask(ctx, task, exec, store.StatusCancelled, func(t *store.Task) {
		t.Cancelled = &store.Cancellation{By: c.By, Reason: c.Reason, At: s.Now()}
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, &notCancellable{err}
	}
	if err != nil {
		return nil, err
	}
	return &Result{Task: task, Execution: exec, Status: store.StatusCancelled, Error: c.Error()}, nil
}

// cancelled records the end of a cancelled run: what its steps in flight
// did is dropped (drive drained them), the last checkpoint keeps what the
// run had handed over, and the execution and the task end cancelled, the
// task with who and why.
func (e *exec) cancelled(ctx context.Context, c *Cancelled) (*Result, error) {
	ctx = context.WithoutCancel(ctx)
	clear(e.st.Done)
	clear(e.st.Waiting)
	msg := c.Error()
	root := e.rootSpan(store.StatusCancelled, msg)
	root.Status = store.SpanStatus{Code: store.CodeError, Message: msg}
	j := e.r.cfg.Journal
	if ce, ok := j.(checkpointExecutioner); ok {
		cp, err := e.checkpointRecord()
		if err != nil {
			return nil, err
		}
		ended := e.r.cfg.Clock()
		if err := ce.CheckpointExecution(ctx, cp, func(ex *store.Execution) { e.ended(ex, store.StatusCancelled, msg, ended) }, root); err != nil {
			return nil, err
		}
	} else {
		if err := e.checkpoint(ctx, root); err != nil {
			return nil, err
		}
		ex, err := j.Execution(ctx, e.task.ID, e.id)
		if err != nil {
			return nil, err
		}
		e.ended(ex, store.StatusCancelled, msg, e.r.cfg.Clock())
		if err := j.PutExecution(ctx, ex); err != nil {
			return nil, err
		}
	}
	if e.r.cfg.OnSpans != nil {
		e.r.cfg.OnSpans([]store.Span{root})
	}
	if s, ok := j.(*store.Store); ok {
		err := s.UpdateTask(ctx, e.task.ID, func(t *store.Task) error {
			t.Status, t.Waits, t.Owner, t.Incident = store.StatusCancelled, nil, nil, nil
			t.Cancelled = &store.Cancellation{By: c.By, Reason: c.Reason, At: s.Now()}
			return nil
		})
		if err != nil {
			return nil, err
		}
	} else if err := j.SetTaskStatus(ctx, e.task.ID, store.StatusCancelled); err != nil {
		return nil, err
	}
	return e.result(store.StatusCancelled, msg), nil
}
