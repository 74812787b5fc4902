package run

import (
	"context"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// Cancel ends a stepwise run cancelled, as a local run ends when Cancel
// reaches it: what its steps in flight did is dropped (the scheduler
// abandoned them), the snapshot keeps what the run had handed over, and
// the execution and the task end cancelled, the task with who and why.
// now is the scheduler's clock.
func (s *Stepper) Cancel(ctx context.Context, snap Snapshot, c *Cancelled, now time.Time) (*Progress, error) {
	e, j, err := s.load(snap, now)
	if err != nil {
		return nil, err
	}
	res, err := e.cancelled(ctx, c)
	if err != nil {
		return nil, err
	}
	p, err := e.progress(j, time.Time{})
	if err != nil {
		return nil, err
	}
	t := &p.Snapshot.Task
	t.Waits, t.Owner, t.Incident = nil, nil, nil
	t.Cancelled = &store.Cancellation{By: c.By, Reason: c.Reason, At: e.r.cfg.Clock().UTC()}
	p.Result = res
	return p, nil
}
