package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// CreateTask stores a new task. It fills in what t leaves empty: the id
// (a new ULID), the created time (the store's clock) and the status
// (running). Tags are sorted and de-duplicated. The stored copy is
// redacted. A task id that exists already is ErrExists.
func (s *Store) CreateTask(ctx context.Context, t *Task) error {
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
		return fmt.Errorf("create task: %w", err)
	}
	kvs, err := s.encodeTask(t, nil)
	if err != nil {
		return fmt.Errorf("create task %q: %w", t.ID, err)
	}
	s.bmu.Lock()
	defer s.bmu.Unlock()
	err = s.update(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, taskKey(t.ID)); err != nil || ok {
			if ok {
				return ErrExists
			}
			return err
		}
		if err := setTask(txn, txn, t.ID, kvs, false, false); err != nil {
			return err
		}
		if err := setTaskIndexes(txn, t); err != nil {
			return err
		}
		return s.setTaskDerived(txn, txn, txn, t, nil)
	})
	if err != nil {
		return fmt.Errorf("create task %q: %w", t.ID, err)
	}
	s.created.Add(1) // under bmu: a Begin that looked in Badger before looks again
	return nil
}

func checkTask(t *Task) error {
	if err := validID("task id", t.ID); err != nil {
		return err
	}
	if err := validLabel("pipeline name", t.Pipeline); err != nil {
		return err
	}
	for _, tag := range t.Tags {
		if err := validLabel("tag", tag); err != nil {
			return err
		}
	}
	if !t.Status.Valid() || t.Status == StatusInterrupted {
		return fmt.Errorf("task %q: unknown status %q", t.ID, t.Status)
	}
	if len(t.Input) > 0 && !json.Valid(t.Input) {
		return fmt.Errorf("task %q: input is not valid JSON", t.ID)
	}
	if len(t.Truth) > 0 && !json.Valid(t.Truth) {
		return fmt.Errorf("task %q: truth is not valid JSON", t.ID)
	}
	return nil
}

func normTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	tags = slices.Clone(tags)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// setter is what a transaction and a write batch have in common.
type setter interface{ Set(k, v []byte) error }

func setTaskIndexes(txn setter, t *Task) error {
	if err := txn.Set(timeIndexKey(t.Created, t.ID), nil); err != nil {
		return err
	}
	if err := txn.Set(fieldIndexKey(pPipe, t.Pipeline, t.Created, t.ID), nil); err != nil {
		return err
	}
	for _, tag := range t.Tags {
		if err := txn.Set(fieldIndexKey(pTag, tag, t.Created, t.ID), nil); err != nil {
			return err
		}
	}
	return nil
}

func deleteTaskIndexes(txn *badger.Txn, t *Task) error {
	if err := txn.Delete(timeIndexKey(t.Created, t.ID)); err != nil {
		return err
	}
	if err := txn.Delete(fieldIndexKey(pPipe, t.Pipeline, t.Created, t.ID)); err != nil {
		return err
	}
	for _, tag := range t.Tags {
		if err := txn.Delete(fieldIndexKey(pTag, tag, t.Created, t.ID)); err != nil {
			return err
		}
	}
	return nil
}

// Task reads one task; an unknown id is ErrNotFound.
func (s *Store) Task(ctx context.Context, id string) (*Task, error) {
	if err := validID("task id", id); err != nil {
		return nil, fmt.Errorf("read task: %w", err)
	}
	if d := s.lostFor(taskPrefix(id)); d != nil {
		return nil, fmt.Errorf("read task %q: %w", id, d)
	}
	var t Task
	err := s.view(ctx, func(txn *badger.Txn) error { return getTask(txn, id, &t) })
	if err != nil {
		return nil, fmt.Errorf("read task %q: %w", id, err)
	}
	s.effective(&t)
	return &t, nil
}

// UpdateTask changes a task in one transaction: fn gets the stored task
// and edits it in place. The id cannot change; indexes follow the other
// fields. fn may run more than once if a concurrent writer conflicts, so
// it must only edit the task.
func (s *Store) UpdateTask(ctx context.Context, id string, fn func(*Task) error) error {
	if err := validID("task id", id); err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	err := s.update(ctx, func(txn *badger.Txn) error { return s.updateTaskTxn(txn, id, fn) })
	if err != nil {
		return fmt.Errorf("update task %q: %w", id, err)
	}
	return nil
}

// updateTaskTxn is UpdateTask's change inside txn.
func (s *Store) updateTaskTxn(txn *badger.Txn, id string, fn func(*Task) error) error {
	return s.updateTask(txn, txn, id, fn, nil, nil)
}

// updateTask is updateTaskTxn; with unset not nil, the task's status
// index entries are not in txn but in *unset, to be set later (the
// applier's task created in the same transaction): they are replaced
// there, not deleted from txn, which would write tombstones of keys that
// were never written. With cur not nil, the task is *cur rather than
// read from txn: the applier's task as Begin set it in the same
// transaction (jrec.begun), its body inline; cur is not changed. The
// task and its summary are set through w (txn, or the applier).
func (s *Store) updateTask(txn *badger.Txn, w setter, id string, fn func(*Task) error, unset *[]kv, cur *Task) error {
	old, hadBody := cur, false
	if old == nil {
		old = new(Task)
		if err := get(txn, taskKey(id), old); err != nil {
			return err
		}
		// The body is carried over, not checked: it is written again
		// only if fn changed it.
		var err error
		if hadBody, err = readBody(txn, old, false); err != nil {
			return err
		}
	}
	// The changed task: the applier's, which nothing keeps past this
	// call, for the applier's many updates.
	var t *Task
	if a, ok := w.(*applier); ok {
		t = &a.task
	} else {
		t = new(Task)
	}
	*t = *old
	t.Tags = slices.Clone(old.Tags)
	if err := fn(t); err != nil {
		return err
	}
	if t.ID != id {
		return fmt.Errorf("the id cannot change (to %q)", t.ID)
	}
	t.Created = t.Created.UTC()
	t.Tags = normTags(t.Tags)
	if err := checkTask(t); err != nil {
		return err
	}
	var small [2]kv // the record and its body keys, as a rule
	kvs, keep, err := s.encodeTaskUpdate(t, old, hadBody, small[:0], w)
	if err != nil {
		return err
	}
	// Indexes of fields that did not change stay as they are: a status
	// change then writes the task and its status keys only.
	same := t.Created.Equal(old.Created) && t.Pipeline == old.Pipeline && slices.Equal(t.Tags, old.Tags)
	if !same {
		if err := deleteTaskIndexes(txn, old); err != nil {
			return err
		}
	}
	var idx setter = txn
	switch {
	case unset == nil:
		if err := deleteTaskDerived(txn, w, old, t); err != nil {
			return err
		}
	case !sameStatusKeys(old, t):
		*unset = (*unset)[:0]
		idx = kvSetter{unset}
	}
	if err := setTask(txn, w, id, kvs, hadBody, keep); err != nil {
		return err
	}
	if !same {
		if err := setTaskIndexes(txn, t); err != nil {
			return err
		}
	}
	return s.setTaskDerived(txn, w, idx, t, old)
}

// statusFilter passes the tasks of a walk whose summary says status st
// (a task without one has no status index entry either). it walks the
// summaries beside the walk: they are in the same order.
type statusFilter struct {
	st  Status
	it  *badger.Iterator
	buf []byte
}

// match reports whether the task of an index key ending in <inv:8><task>
// is in the filter's status. A summary that does not read is the task's
// damage (d): the walk leaves the task out and reports it, as a list of
// all tasks does a record that does not read.
func (f *statusFilter) match(inv uint64, task []byte) (ok bool, d *DamageError, err error) {
	f.buf = binary.BigEndian.AppendUint64(append(f.buf[:0], pSum...), inv)
	f.buf = append(append(f.buf, task...), '/', sumTask)
	// The walk's order is not quite the summaries': a task id that
	// another one starts (run-1, run-1-a) sorts first in an index but
	// after it here ("/" > "-"), so the iterator may have to go back.
	if !f.it.Valid() || !bytes.Equal(f.it.Item().Key(), f.buf) {
		f.it.Seek(f.buf)
	}
	if !f.it.Valid() || !bytes.Equal(f.it.Item().Key(), f.buf) {
		return false, nil, nil
	}
	var st Status
	err = f.it.Item().Value(func(val []byte) error {
		js, err := unseal(f.buf, val)
		if err != nil {
			return err
		}
		l := lit{b: js}
		v, ok := parseSumTaskHead(&l)
		if !ok {
			if err := decode(f.buf, val, &v); err != nil {
				return err
			}
		}
		st = v.Status
		return nil
	})
	if err != nil {
		if errors.As(asDamage(slices.Clone(f.buf), err), &d) {
			d.Task = string(task)
			return false, d, nil
		}
		return false, nil, err
	}
	return st == f.st, nil, nil
}

// SetTaskStatus changes a task's status.
func (s *Store) SetTaskStatus(ctx context.Context, id string, st Status) error {
	if !st.Valid() {
		return fmt.Errorf("update task %q: unknown status %q", id, st)
	}
	return s.UpdateTask(ctx, id, s.setStatus(st))
}

// setStatus is the change of a task SetTaskStatus makes.
func (s *Store) setStatus(st Status) func(*Task) error {
	return func(t *Task) error {
		t.Status = st
		if st != StatusWaiting {
			t.Waits = nil
		}
		if st == StatusRunning {
			t.Owner = s.Lease() // whoever sets a task running runs it
		}
		settled(t)
		return nil
	}
}

// SetTaskWaiting marks a task waiting for waits, in one write.
func (s *Store) SetTaskWaiting(ctx context.Context, id string, waits []Wait) error {
	return s.UpdateTask(ctx, id, func(t *Task) error {
		t.Status = StatusWaiting
		t.Waits = waits
		settled(t)
		return nil
	})
}

// AddTags adds tags to a task.
func (s *Store) AddTags(ctx context.Context, id string, tags ...string) error {
	return s.UpdateTask(ctx, id, func(t *Task) error { t.Tags = append(t.Tags, tags...); return nil })
}

// Tasks lists the tasks matching q, newest first.
func (s *Store) Tasks(ctx context.Context, q Query) ([]Task, error) {
	var out []Task
	err := s.EachTask(ctx, q, func(t *Task) error {
		out = append(out, *t)
		return nil
	})
	return out, err
}

// errStop ends a scan early without an error.
var errStop = errors.New("stop")

// EachTask calls fn for each task matching q, newest first, without
// holding the whole list in memory. An error from fn stops the scan and
// is returned.
func (s *Store) EachTask(ctx context.Context, q Query, fn func(*Task) error) error {
	return s.eachTask(ctx, q, func(t *Task, _ string) error { return fn(t) })
}

// TaskPage lists at most q.Limit tasks matching q, newest first, and
// the cursor that continues the listing (q.After), "" after the last.
func (s *Store) TaskPage(ctx context.Context, q Query) ([]Task, string, error) {
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("list tasks: a page needs a limit")
	}
	var out []Task
	var next string
	more := false
	limit := q.Limit
	q.Limit++ // one more, to know whether there is a next page
	err := s.eachTask(ctx, q, func(t *Task, cursor string) error {
		if len(out) == limit {
			more = true
			return errStop
		}
		out = append(out, *t)
		next = cursor
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if !more {
		next = "" // no cursor to an empty page when the last page is full
	}
	return out, next, nil
}

func (s *Store) eachTask(ctx context.Context, q Query, fn func(t *Task, cursor string) error) error {
	if q.Status != "" && !q.Status.Valid() {
		return fmt.Errorf("list tasks: unknown status %q", q.Status)
	}
	var after []byte
	if q.After != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.After)
		if err != nil || len(b) <= 8 {
			return fmt.Errorf("list tasks: %w: cursor %.40q is not one this store gave", ErrBadCursor, q.After)
		}
		after = b
	}
	var skipped []*DamageError
	err := s.view(ctx, func(txn *badger.Txn) error { return s.eachTaskTxn(ctx, txn, q, after, &skipped, fn) })
	if errors.Is(err, errStop) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	if len(skipped) > 0 {
		return &SkippedError{Op: "list tasks", Skipped: skipped}
	}
	return nil
}

// ErrBadCursor marks a pagination cursor that does not decode.
var ErrBadCursor = errors.New("bad cursor")

// eachTaskTxn calls fn for each task matching q. A task that cannot be
// read because the store is damaged is added to skipped and the scan goes
// on; so is an index that a damaged table may have held part of.
func (s *Store) eachTaskTxn(ctx context.Context, txn *badger.Txn, q Query, after []byte, skipped *[]*DamageError, fn func(*Task, string) error) error {
	n := 0
	return s.walkIndex(ctx, txn, q, after, skipped, func(id string, _ time.Time, suffix []byte) error {
		var t Task
		if err := getTask(txn, id, &t); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil // an index entry racing a rewrite
			}
			if d := taskDamage(id, err); d != nil {
				*skipped = append(*skipped, d)
				return nil
			}
			return fmt.Errorf("task %q: %w", id, err)
		}
		s.effective(&t)
		if (q.Pipeline != "" && t.Pipeline != q.Pipeline) ||
			(q.Status != "" && t.Status != q.Status) ||
			(q.Tag != "" && !slices.Contains(t.Tags, q.Tag)) ||
			(q.Match != nil && !q.Match(&t)) {
			return nil
		}
		if err := fn(&t, base64.RawURLEncoding.EncodeToString(suffix)); err != nil {
			return err
		}
		n++
		if q.Limit > 0 && n >= q.Limit {
			return errStop
		}
		return nil
	})
}

// walkIndex calls fn with the id, created time and index key suffix
// (<inv:8><task>, the cursor) of each task the most selective index for q
// lists, newest first, from after on, within q's time bounds, and with a
// reward tagged q.RewardTag if set. The index may list more than q
// selects: fn filters on the rest.
func (s *Store) walkIndex(ctx context.Context, txn *badger.Txn, q Query, after []byte, skipped *[]*DamageError, fn func(id string, created time.Time, suffix []byte) error) error {
	// Every index key ends in <inv:8><task>, newest first, so a cursor
	// (that suffix) and the time bounds work on each. The status indexes
	// are derived keys: used only when complete (s.indexed).
	var prefix []byte
	if q.Status == StatusInterrupted {
		q.Status = StatusRunning // stored so; the lease tells them apart (lease.go)
	}
	var only *statusFilter // the status of a walk of an index of all statuses
	switch {
	case q.Tag != "":
		prefix = fieldIndexPrefix(pTag, q.Tag)
	case q.Status != "" && !indexedStatus(q.Status) && s.indexed:
		prefix = []byte(pTime)
		if q.Pipeline != "" {
			prefix = fieldIndexPrefix(pPipe, q.Pipeline)
		}
		only = &statusFilter{st: q.Status}
	case q.Status != "" && q.Pipeline != "" && s.indexed:
		prefix = pipeStatusPrefix(q.Pipeline, q.Status)
	case q.Status != "" && s.indexed:
		prefix = fieldIndexPrefix(pStatus, string(q.Status))
	case q.Pipeline != "":
		prefix = fieldIndexPrefix(pPipe, q.Pipeline)
	default:
		prefix = []byte(pTime)
	}
	if d := s.lostFor(prefix); d != nil {
		d.Err = fmt.Errorf("the task index may miss tasks: %w", d.Err)
		*skipped = append(*skipped, d)
	}
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	it := txn.NewIterator(opts)
	defer it.Close()
	start := slices.Clone(prefix)
	if !q.Until.IsZero() {
		start = binary.BigEndian.AppendUint64(start, invTime(q.Until))
	}
	if after != nil {
		if a := append(slices.Clone(prefix), after...); bytes.Compare(a, start) > 0 {
			start = a
		}
	}
	var stopInv uint64
	if !q.Since.IsZero() {
		stopInv = invTime(q.Since)
	}
	if only != nil {
		opts.Prefix = []byte(pSum)
		only.it = txn.NewIterator(opts)
		defer only.it.Close()
	}
	for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		key := it.Item().Key()
		suffix := key[len(prefix):]
		if after != nil && bytes.Equal(suffix, after) {
			continue
		}
		if len(suffix) <= 8 {
			continue
		}
		inv := binary.BigEndian.Uint64(suffix)
		if stopInv != 0 && inv > stopInv {
			return nil // older than Since, and so is the rest
		}
		id := string(suffix[8:])
		// A task with damaged records is left out and said so before its
		// summary is read: what that says of it may be as old as the
		// table that still holds it.
		if d := s.lostFor(taskPrefix(id)); d != nil {
			*skipped = append(*skipped, d)
			continue
		}
		if only != nil {
			ok, d, err := only.match(inv, suffix[8:])
			if err != nil {
				return err
			}
			if d != nil {
				*skipped = append(*skipped, d)
			}
			if !ok {
				continue
			}
		}
		if q.RewardTag != "" {
			ok, err := exists(txn, rewardTagKey(q.RewardTag, id))
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		created := time.Unix(0, int64(math.MaxUint64-inv)).UTC()
		if err := fn(id, created, suffix); err != nil {
			return err
		}
	}
	return nil
}
