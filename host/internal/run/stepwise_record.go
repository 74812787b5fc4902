package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// RunRecord is a run driven stepwise, as it lands in a store once it
// ended: what a local run would have written as it went.
type RunRecord struct {
	Task      store.Task      `json:"task"`
	Execution store.Execution `json:"execution"`
	// State is the last run state (the execution's checkpoint).
	State []byte       `json:"state"`
	Spans []store.Span `json:"spans"`
}

// RecordOf is the record of a stepwise run that ended with p.
func RecordOf(p *Progress, spans []store.Span) *RunRecord {
	return &RunRecord{Task: p.Snapshot.Task, Execution: p.Snapshot.Execution, State: p.Snapshot.State, Spans: spans}
}

// RecordRun writes a run driven stepwise into s. It may be called again
// for the same run (a retried call after a crash): a run already recorded
// is left alone, one recorded halfway is completed.
func RecordRun(ctx context.Context, s *store.Store, r *RunRecord) error {
	if r.Task.ID == "" || r.Execution.ID == "" || r.Execution.Task != r.Task.ID {
		return fmt.Errorf("record run: task %q and execution %q do not belong together", r.Task.ID, r.Execution.Task)
	}
	// Most records are their run's first: Begin refuses a task the store
	// has (ErrExists), and only then is the task read (a read settles the
	// store's journal into Badger first, which a new record need not
	// wait for).
	bt, be := r.Task, r.Execution
	bt.Status, be.Status, be.Error, bt.Cancelled = store.StatusRunning, store.StatusRunning, "", nil
	bc := &store.Checkpoint{Task: bt.ID, Execution: be.ID, Step: 0, State: r.State, Updated: be.Started}
	if err := s.Begin(ctx, &bt, &be, bc); errors.Is(err, store.ErrExists) {
		cur, err := s.Task(ctx, r.Task.ID)
		switch {
		case err != nil:
			return fmt.Errorf("record run %s: %w", r.Task.ID, err)
		case cur.Status == r.Task.Status && cur.Strategy.Hash == r.Task.Strategy.Hash:
			return nil // recorded before
		case cur.Status == store.StatusRunning && cur.Strategy.Hash == r.Task.Strategy.Hash:
			// recorded halfway by an earlier call: complete it
		default:
			return fmt.Errorf("record run %s: %w: a task with that id is already in the store (%s)", r.Task.ID, store.ErrExists, cur.Status)
		}
	} else if err != nil {
		return fmt.Errorf("record run %s: %w", r.Task.ID, err)
	}
	end := r.Execution.Ended
	if end.IsZero() {
		end = s.Now()
	}
	c := &store.Checkpoint{Task: r.Task.ID, Execution: r.Execution.ID, State: r.State, Updated: end}
	if st, err := decodeState(r.State); err == nil {
		c.Step = uint64(st.Steps)
	}
	for _, sp := range r.Spans {
		if sp.Task != r.Task.ID || sp.Execution != r.Execution.ID {
			return fmt.Errorf("record run %s: span %d belongs to %s/%s", r.Task.ID, sp.Seq, sp.Task, sp.Execution)
		}
	}
	if err := s.Checkpoint(ctx, c, r.Spans...); err != nil {
		return fmt.Errorf("record run %s: %w", r.Task.ID, err)
	}
	exec := r.Execution
	if err := s.PutExecution(ctx, &exec); err != nil {
		return fmt.Errorf("record run %s: %w", r.Task.ID, err)
	}
	switch r.Task.Status {
	case store.StatusWaiting:
		return s.SetTaskWaiting(ctx, r.Task.ID, r.Task.Waits)
	case store.StatusCancelled:
		return s.UpdateTask(ctx, r.Task.ID, func(t *store.Task) error {
			t.Status, t.Waits, t.Owner, t.Incident, t.Cancelled = store.StatusCancelled, nil, nil, nil, r.Task.Cancelled
			return nil
		})
	}
	return s.SetTaskStatus(ctx, r.Task.ID, r.Task.Status)
}
