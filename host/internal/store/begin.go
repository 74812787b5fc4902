package store

import (
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// Begin stores a new task, its first execution and that execution's first
// checkpoint in one transaction, synced before it returns. A run started
// with Begin is resumable from the moment the task exists: a crash can
// leave no task, or a task with a checkpoint, never a task without one.
// Defaults are filled in as CreateTask, CreateExecution and Checkpoint fill
// them; the execution's and checkpoint's task id is t.ID.
func (s *Store) Begin(ctx context.Context, t *Task, e *Execution, c *Checkpoint) error {
	if s.ro {
		return fmt.Errorf("begin task: store %s: %w", s.dir, ErrReadOnly)
	}
	if t.Created.IsZero() {
		t.Created = s.Now()
	}
	t.Created = t.Created.UTC()
	if t.ID == "" {
		t.ID = s.ids.nextAt(t.Created)
	}
	if t.Status == "" {
		t.Status = StatusRunning
	}
	t.Tags = normTags(t.Tags)
	if err := checkTask(t); err != nil {
		return fmt.Errorf("begin task: %w", err)
	}
	where := func(err error) error { return fmt.Errorf("begin task %q: %w", t.ID, err) }
	e.Task, c.Task = t.ID, t.ID
	if e.Started.IsZero() {
		e.Started = s.Now()
	}
	if e.ID == "" {
		e.ID = s.ids.nextAt(e.Started)
	}
	c.Execution = e.ID
	if e.Status == "" {
		e.Status = StatusRunning
	}
	e.Started, e.Ended = e.Started.UTC(), e.Ended.UTC()
	if e.TraceID == "" {
		e.TraceID = TraceIDFor(e.Task, e.ID)
	}
	if err := checkExecution(e); err != nil {
		return where(err)
	}
	if c.Updated.IsZero() {
		c.Updated = s.Now()
	}
	c.Updated = c.Updated.UTC()
	tkvs, err := s.encodeTask(t, nil)
	if err != nil {
		return where(err)
	}
	eval, err := s.encode(e)
	if err != nil {
		return where(err)
	}
	state, err := s.red.redactOpaque(c.State)
	if err != nil {
		return where(err)
	}
	cc := *c
	cc.State = state
	cval, err := encodeCheckpoint(&cc)
	if err != nil {
		return where(err)
	}
	// A new task's keys are none that a journaled record writes: no need
	// to apply the journal first.
	err = s.updateRaw(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, taskKey(t.ID)); err != nil || ok {
			if ok {
				return ErrExists
			}
			return err
		}
		if err := setTask(txn, t.ID, tkvs, false, false); err != nil {
			return err
		}
		if err := setTaskIndexes(txn, t); err != nil {
			return err
		}
		if err := s.setTaskDerived(txn, t, nil); err != nil {
			return err
		}
		if err := txn.Set(execKey(t.ID, e.ID), eval); err != nil {
			return err
		}
		if err := txn.Set(sumExecKey(sumPrefix(t.Created, t.ID), e.ID), sumExecValue(e)); err != nil {
			return err
		}
		failpoint.Hit(failpoint.CheckpointCommit)
		return txn.Set(checkpointKey(t.ID, e.ID), cval)
	})
	if err != nil {
		return where(err)
	}
	s.seqs.fresh(t.ID, e.ID, sumPrefix(t.Created, t.ID))
	failpoint.Hit(failpoint.CheckpointCommitted)
	if !s.noSync {
		if err := s.syncer.sync(s.db); err != nil {
			return where(fmt.Errorf("sync: %w", err))
		}
	}
	failpoint.Hit(failpoint.CheckpointSynced)
	return nil
}
