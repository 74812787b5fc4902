package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A running task names the process that runs it: its Lease. Only one
// process holds a store for writing (the lock file, see lock.go), so a
// lease is live exactly when it is the lease of the process holding the
// store now; no heartbeat and no timeout is needed. The writer records
// its lease under keyLease when it opens the store, so a reader, whose
// snapshot the live writer made, knows it too; a reader that found no
// writer knows that no lease is live. A running task whose lease is not
// live reads as StatusInterrupted.

// keyLease holds the lease of the process that last opened the store for
// writing.
const keyLease = "m/lease"

// Lease is the claim of one process on the tasks it runs.
type Lease struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Started is when the process opened the store for writing: with the
	// pid and host it tells this holder from a later one that got the
	// same pid.
	Started time.Time `json:"started"`
}

// String names the lease's process.
func (l *Lease) String() string {
	return fmt.Sprintf("pid %d on %s (since %s)", l.PID, l.Host, l.Started.UTC().Format(time.RFC3339))
}

func (l *Lease) same(o *Lease) bool {
	return l != nil && o != nil && l.PID == o.PID && l.Host == o.Host && l.Started.Equal(o.Started)
}

// Incident is where and why a run stopped in StatusIncident.
type Incident struct {
	// Node is the routine element the run stopped at.
	Node string `json:"node"`
	// Kind says what went wrong: condition (a condition that errs or is
	// not a boolean), correlation (a message correlation key that is
	// null), retries (a step whose retries are used up), or fault
	// (another error the routine does not handle).
	Kind string `json:"kind"`
	// Error is the navigator's or the step's error.
	Error string `json:"error"`
	// Position is the element's file:line in the routine, when known.
	Position string    `json:"position,omitempty"`
	Created  time.Time `json:"created"`
}

// String is the incident in one line: "file:line: node: error" (the
// node left out when the error names it).
func (i *Incident) String() string {
	var b strings.Builder
	if i.Position != "" {
		b.WriteString(i.Position + ": ")
	}
	if i.Node != "" && !strings.Contains(i.Error, `"`+i.Node+`"`) {
		b.WriteString(i.Node + ": ")
	}
	b.WriteString(i.Error)
	return b.String()
}

// Cancellation says who cancelled a task, and why.
type Cancellation struct {
	// By is user@host of the person (or the API client) who cancelled.
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Operator is this process's user@host, as a Cancellation or an
// operator's event names who acted.
func Operator() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if v := os.Getenv("USER"); v != "" {
		name = v
	}
	return name + "@" + hostname()
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// openLease records a writer's lease (see keyLease); a reader reads the
// lease of the writer that made its snapshot, if one did.
func (s *Store) openLease(fromWriter bool) error {
	if s.ro {
		if !fromWriter {
			return nil
		}
		var l Lease
		err := s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyLease), &l) })
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("open store %s: read the writer's lease: %w", s.dir, err)
		}
		s.lease = &l
		return nil
	}
	l := &Lease{PID: os.Getpid(), Host: hostname(), Started: time.Now().UTC().Round(0)} // the wall clock: the store's may be a recorded one
	val, err := s.encode(l)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyLease), val) }); err != nil {
		return fmt.Errorf("open store %s: record the lease: %w", s.dir, err)
	}
	s.lease = l
	return nil
}

// Lease is the lease of this process when it holds the store for
// writing, nil for a reader.
func (s *Store) Lease() *Lease {
	if s.ro || s.lease == nil {
		return nil
	}
	l := *s.lease
	return &l
}

// Live reports whether l is the lease of the process holding the store
// now (this one, for a writer).
func (s *Store) Live(l *Lease) bool { return l.same(s.lease) }

// effective turns a running task whose owner is gone into an
// interrupted one, as every reader shows it. A task without a lease (an
// import, a remote journal) is taken at its word.
func (s *Store) effective(t *Task) {
	if t.Status == StatusRunning && t.Owner != nil && !s.Live(t.Owner) {
		t.Status = StatusInterrupted
	}
}

// settled drops what only a task in another status carries, as its
// status changes.
func settled(t *Task) {
	if t.Status != StatusRunning {
		t.Owner = nil
	}
	if t.Status != StatusIncident {
		t.Incident = nil
	}
	if t.Status != StatusCancelled {
		t.Cancelled = nil
	}
}

// ErrOwned marks a change refused because a live process runs the task:
// it must go through that process.
var ErrOwned = errors.New("the task is running in another process")

// ErrConflict marks a change refused because the task is not (or no
// longer) in a status that allows it: it ended, or another operator
// acted first.
var ErrConflict = errors.New("conflict")

// Claim marks a task running under this process's lease, in one write:
// the task must not be running under another live lease nor ended. want,
// when not empty, lists the statuses the task may be in (a retry claims
// an incident only). It returns the task as it was.
//
// A task running under this process's own lease is claimed: the caller
// (the run engine) knows whether its run is still in progress here.
func (s *Store) Claim(ctx context.Context, id string, want ...Status) (*Task, error) {
	if s.ro {
		return nil, fmt.Errorf("claim task %q: %w", id, ErrReadOnly)
	}
	var before Task
	var refused error
	err := s.UpdateTask(ctx, id, func(t *Task) error {
		before = *t
		s.effective(&before)
		if refused = claimable(&before, want, s.Live(before.Owner)); refused != nil {
			return refused
		}
		t.Status, t.Waits, t.Owner = StatusRunning, nil, s.Lease()
		settled(t)
		return nil
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	return &before, nil
}

// claimable says why t cannot be claimed, if it cannot. A running task
// read through effective is running under a live lease (own: this
// process's), or under none (a task written without one).
func claimable(t *Task, want []Status, own bool) error {
	switch {
	case t.Status == StatusRunning && t.Owner != nil && !own:
		return &StateError{Kind: ErrOwned, Msg: fmt.Sprintf("task %s is running in %s", t.ID, t.Owner)}
	case t.Status.Ended():
		return &StateError{Kind: ErrConflict, Msg: fmt.Sprintf("task %s already %s", t.ID, t.Status)}
	case len(want) > 0:
		st := t.Status
		if st == StatusRunning {
			st = StatusInterrupted // no run of it goes on (see above): a resume may take it
		}
		for _, w := range want {
			if st == w {
				return nil
			}
		}
		return &StateError{Kind: ErrConflict, Msg: fmt.Sprintf("task %s is %s, not %s", t.ID, t.Status, want[0])}
	}
	return nil
}

// StateError is a change refused because of the task's status; it
// matches its Kind (ErrOwned or ErrConflict).
type StateError struct {
	Kind error
	Msg  string
}

func (e *StateError) Error() string { return e.Msg }

// Is makes errors.Is(err, e.Kind) true.
func (e *StateError) Is(target error) bool { return target == e.Kind }

// EndTask ends a task that no live process runs, with its latest live
// execution: status (cancelled, for sextant cancel) and what fn adds to
// the task. The execution (named; "" for none) is written first, as a
// run's end is: a crash between the two writes leaves a task whose
// resume settles it (run.Runner's load), never one that runs again.
// As with Claim, a task running under this process's own lease is the
// caller's to judge: it checks that no run of it is in progress here.
func (s *Store) EndTask(ctx context.Context, id, execution string, st Status, fn func(*Task)) error {
	if s.ro {
		return fmt.Errorf("end task %q: %w", id, ErrReadOnly)
	}
	cur, err := s.Task(ctx, id)
	if err != nil {
		return err
	}
	if err := claimable(cur, nil, s.Live(cur.Owner)); err != nil {
		return err
	}
	end := func(t *Task) {
		t.Status, t.Waits = st, nil
		if fn != nil {
			fn(t)
		}
		settled(t)
	}
	if execution != "" {
		probe := *cur
		end(&probe)
		e, err := s.Execution(ctx, id, execution)
		if err != nil {
			return fmt.Errorf("end task %q: %w", id, err)
		}
		e.Status, e.Ended = st, s.Now()
		if c := probe.Cancelled; c != nil {
			e.Error = "cancelled by " + c.By
			if c.Reason != "" {
				e.Error += ": " + c.Reason
			}
		}
		if err := s.PutExecution(ctx, e); err != nil {
			return fmt.Errorf("end task %q: %w", id, err)
		}
	}
	var refused error
	err = s.UpdateTask(ctx, id, func(t *Task) error {
		now := *t
		s.effective(&now)
		if refused = claimable(&now, nil, s.Live(now.Owner)); refused != nil {
			return refused
		}
		end(t)
		return nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return fmt.Errorf("end task %q: %w", id, err)
	}
	return nil
}
