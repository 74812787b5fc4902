package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// leaseOf is the lease a run recorded into j holds on its task: the
// lease of the process holding the store, nil for other journals
// (replays, remote stores), whose tasks are taken at their word.
func leaseOf(j Journal) *store.Lease {
	if s, ok := j.(*store.Store); ok {
		return s.Lease()
	}
	return nil
}

// claim marks a recorded task running under this process's lease before
// its run goes on: it must be in one of the statuses want, and no run of
// it may be in progress in another live process (track refuses a second
// run here). An operator who
// comes second (two resumes, a resume and a retry) gets an error that
// says who runs it, and nothing changes.
func (r *Runner) claim(ctx context.Context, taskID string, want ...store.Status) error {
	_, err := r.cfg.Store.Claim(ctx, taskID, want...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrOwned) {
		if t, _ := r.cfg.Store.Task(ctx, taskID); t != nil && t.Status == store.StatusIncident {
			err = incidentRefusal(t)
		}
		return refused{err}
	}
	return err
}

// inIncident refuses to resume or deliver to a task stopped in an
// incident: sextant retry continues it.
func (e *exec) inIncident() error {
	if e.task.Status == store.StatusIncident {
		return refused{incidentRefusal(e.task)}
	}
	return nil
}

func incidentRefusal(t *store.Task) error {
	return &store.StateError{Kind: store.ErrConflict, Msg: fmt.Sprintf("task %s stopped in an incident (%s); sextant retry %s continues it", t.ID, t.Incident, t.ID)}
}

// refused is a change refused because of the task's status: bad input to
// the CLI (exit 2) and a conflict to the API (409), matching both
// sdk.ErrInvalid and the store's error.
type refused struct{ error }

func (e refused) Unwrap() error        { return e.error }
func (e refused) Is(target error) bool { return target == sdk.ErrInvalid }
