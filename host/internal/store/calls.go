package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// Call is one outside call recorded as a whole, as the recording proxy
// records each request: its task (created when it does not exist yet,
// else left as it is), a new finished execution, that execution's spans
// and, when the call was answered, its recording.
type Call struct {
	Task      *Task
	Execution *Execution
	Spans     []Span
	// Recording may be nil (a failed call, or one answered from a
	// recording in replay).
	Recording *Recording
	// Replayed is the hash of the recording that answered the call in
	// replay: the task is linked to it, as to a recording it made.
	Replayed string
}

// RecordCall writes c in one transaction: a reader sees the whole call
// or none of it, and a crash leaves no execution without its spans.
// Defaults are filled in as CreateTask, CreateExecution, AppendSpans and
// PutRecording fill them; spans must carry Seq numbers from 1 (their ids
// are derived when empty). Concurrent calls may share a task.
func (s *Store) RecordCall(ctx context.Context, c *Call) error {
	if s.ro {
		return fmt.Errorf("record call: store %s: %w", s.dir, ErrReadOnly)
	}
	t, e := c.Task, c.Execution
	if t.Created.IsZero() {
		t.Created = s.Now()
	}
	t.Created = t.Created.UTC()
	named := t.ID != "" // a Begin may name it too
	if !named {
		t.ID = s.ids.nextAt(t.Created)
	}
	if t.Status == "" {
		t.Status = StatusCompleted
	}
	t.Tags = normTags(t.Tags)
	if err := checkTask(t); err != nil {
		return fmt.Errorf("record call: %w", err)
	}
	e.Task = t.ID
	if e.Started.IsZero() {
		e.Started = s.Now()
	}
	if e.ID == "" {
		e.ID = s.ids.nextAt(e.Started)
	}
	if e.Status == "" {
		e.Status = StatusCompleted
	}
	e.Started, e.Ended = e.Started.UTC(), e.Ended.UTC()
	if e.TraceID == "" {
		e.TraceID = TraceIDFor(e.Task, e.ID)
	}
	where := func(err error) error { return fmt.Errorf("record call in task %q: %w", t.ID, err) }
	if err := checkExecution(e); err != nil {
		return where(err)
	}
	base := spanIDBase(t.ID, e.ID)
	for i := range c.Spans {
		sp := &c.Spans[i]
		sp.Task, sp.Execution = t.ID, e.ID
		if sp.Seq == 0 {
			return where(fmt.Errorf("span %q has no seq", sp.Name))
		}
		if sp.TraceID == "" {
			sp.TraceID = e.TraceID
		}
		if sp.SpanID == "" {
			sp.SpanID = spanIDFrom(base, sp.Seq)
		}
		if err := checkSpan(sp); err != nil {
			return where(err)
		}
	}
	r := c.Recording
	if r != nil {
		if r.Created.IsZero() {
			r.Created = s.Now()
		}
		r.Created = r.Created.UTC()
		if err := checkRecording(r); err != nil {
			return where(err)
		}
	}
	if c.Replayed != "" {
		if err := validID("recording hash", c.Replayed); err != nil {
			return where(err)
		}
	}
	tkvs, err := s.encodeTask(t, nil)
	if err != nil {
		return where(err)
	}
	eval, err := s.encode(e)
	if err != nil {
		return where(err)
	}
	// The execution is new (the transaction checks): every span is fresh.
	fresh := make([]fate, len(c.Spans))
	for i := range fresh {
		fresh[i] = fateFresh
	}
	kvs, _, err := s.encodeSpans(c.Spans, fresh, nil)
	if err != nil {
		return where(err)
	}
	var rval []byte
	if r != nil {
		if rval, err = s.encode(r); err != nil {
			return where(err)
		}
	}
	created := false
	write := func(mayCreate bool) error {
		return s.update(ctx, func(txn *badger.Txn) error { return s.recordCallIn(txn, c, mayCreate, &created, tkvs, eval, kvs, rval) })
	}
	if err := write(!named); errors.Is(err, errCallCreates) {
		// A task of a name the caller chose is created as CreateTask
		// creates one: with bmu held alone, counted, so that a Begin of
		// it that looked in Badger before looks again (appendBegin).
		s.bmu.Lock()
		err = write(true)
		if err == nil && created {
			s.created.Add(1)
		}
		s.bmu.Unlock()
		if err != nil {
			return where(err)
		}
	} else if err != nil {
		return where(err)
	}
	return nil
}

// errCallCreates is recordCallIn's answer when the call's task does not
// exist and it may not create it.
var errCallCreates = errors.New("the call creates its task")

// recordCallIn writes the call c (encoded: its task's kvs tkvs, its
// execution eval, its spans kvs, its recording rval) in txn; it creates
// the task if absent, when mayCreate, and then sets *created.
func (s *Store) recordCallIn(txn *badger.Txn, c *Call, mayCreate bool, created *bool, tkvs []kv, eval []byte, kvs []kv, rval []byte) error {
	t, e, r := c.Task, c.Execution, c.Recording
	*created = false
	key := taskKey(t.ID)
	ok, err := exists(txn, key)
	if err != nil {
		return err
	}
	if !ok && !mayCreate {
		return errCallCreates
	}
	if !ok {
		*created = true
		if err := setTask(txn, txn, t.ID, tkvs, false, false); err != nil {
			return err
		}
		if err := setTaskIndexes(txn, t); err != nil {
			return err
		}
		if err := s.setTaskDerived(txn, txn, txn, t, nil); err != nil {
			return err
		}
	}
	key = execKey(t.ID, e.ID)
	if ok, err := exists(txn, key); err != nil || ok {
		if ok {
			return fmt.Errorf("execution %q: %w", e.ID, ErrExists)
		}
		return err
	}
	if err := txn.Set(key, eval); err != nil {
		return err
	}
	// The execution and its calls go in the task's summary, as
	// putExecution and writeSpans put them.
	if p, ok, err := sumAt(txn, t.ID); err != nil {
		return err
	} else if ok {
		if err := txn.Set(sumExecKey(p, e.ID), sumExecValue(e)); err != nil {
			return err
		}
	}
	kvs = slices.Clone(kvs) // update may run this again: placeUsage rewrites keys
	if err := placeUsage(txn, kvs); err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := txn.Set(kv.k, kv.v); err != nil {
			return err
		}
	}
	if c.Replayed != "" {
		if err := setLinks(txn, txn, t.ID, []string{c.Replayed}); err != nil {
			return err
		}
	}
	if r != nil {
		s.noteRecording(r.Hash)
		if err := txn.Set(recordingKey(r.Hash), rval); err != nil {
			return err
		}
		return setLinks(txn, txn, t.ID, []string{r.Hash})
	}
	return nil
}
