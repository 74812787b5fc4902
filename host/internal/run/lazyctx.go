package run

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyCtx is context.WithCancelCause(parent), or
// context.WithDeadline(parent, deadline) when deadline is set, made only
// when something needs it: the context of a run (track), a step and a
// provider call. Most steps and calls end
// without anything asking for their Done channel (an expression, an
// in-process provider that answers at once), and the standard library's
// contexts cost a timer, a closure and the parent's map of children each
// time. Until the context is made, lazyCtx answers as it would: its
// deadline is the earlier of its own and its parent's, its error is its
// parent's, or DeadlineExceeded once its deadline has passed, or Canceled
// once cancelled. Done, and Err or Value once it has ended, make the real
// context, which answers from then on (so context.Cause and the contexts
// derived from it see a real context). See RATIONALE.md, "Why a step's
// and a call's contexts are made when asked for, not up front".
type lazyCtx struct {
	parent   context.Context
	deadline time.Time // none of its own when zero
	mu       sync.Mutex
	real     atomic.Pointer[realCtx]
	// ended is set by cancel before the real context is made: making it
	// then cancels it. detached says the cancel came while the parent
	// was live and the deadline ahead: the context ended as cancelled,
	// whatever its parent does after.
	ended    atomic.Bool
	detached bool
}

// realCtx is the context a lazyCtx stands for, once made: cancel ends
// one with a deadline, cancelCause one without.
type realCtx struct {
	ctx         context.Context
	cancel      context.CancelFunc
	cancelCause context.CancelCauseFunc
}

// end cancels r's context, with cause when it has no deadline (a nil
// cause is context.Canceled).
func (r *realCtx) end(cause error) {
	if r.cancelCause != nil {
		r.cancelCause(cause)
	} else {
		r.cancel()
	}
}

// newLazyCtx is a lazyCtx of parent; a zero deadline means none.
func newLazyCtx(parent context.Context, deadline time.Time) *lazyCtx {
	return &lazyCtx{parent: parent, deadline: deadline}
}

// make returns the real context, making it if need be.
func (c *lazyCtx) make() context.Context {
	if r := c.real.Load(); r != nil {
		return r.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.real.Load(); r != nil {
		return r.ctx
	}
	r := &realCtx{}
	switch {
	case c.detached:
		// Values still come from the parent; Deadline answers itself.
		r.ctx, r.cancelCause = context.WithCancelCause(context.WithoutCancel(c.parent))
	case c.deadline.IsZero():
		r.ctx, r.cancelCause = context.WithCancelCause(c.parent)
	default:
		r.ctx, r.cancel = context.WithDeadline(c.parent, c.deadline)
	}
	if c.ended.Load() {
		r.end(nil)
	}
	c.real.Store(r)
	return r.ctx
}

// over reports whether the context has ended on its own account
// (cancelled, or past its deadline) without the real one being made.
//
// time.Until reads only the monotonic clock when the deadline carries a
// reading (deadlines are made from time.Now), where !time.Now().Before
// reads the wall clock as well, and compares the same readings.
func (c *lazyCtx) over() bool {
	return c.ended.Load() || !c.deadline.IsZero() && time.Until(c.deadline) <= 0
}

// Deadline implements context.Context: the earlier of the parent's and
// its own, as context.WithDeadline's.
func (c *lazyCtx) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if c.deadline.IsZero() || ok && d.Before(c.deadline) {
		return d, ok
	}
	return c.deadline, true
}

// Done implements context.Context.
func (c *lazyCtx) Done() <-chan struct{} { return c.make().Done() }

// Err implements context.Context.
func (c *lazyCtx) Err() error {
	if r := c.real.Load(); r != nil {
		return r.ctx.Err()
	}
	if c.ended.Load() {
		return c.make().Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if c.over() {
		return c.make().Err()
	}
	return nil
}

// Value implements context.Context.
func (c *lazyCtx) Value(key any) any {
	if r := c.real.Load(); r != nil {
		return r.ctx.Value(key)
	}
	if c.over() {
		return c.make().Value(key)
	}
	return c.parent.Value(key)
}

// cancel cancels the context. Unless the real context was made, it is
// only marked: whoever looks at the context afterwards makes it, and
// finds it ended as it would have ended then.
func (c *lazyCtx) cancel() {
	c.mu.Lock()
	r := c.real.Load()
	if r == nil && !c.ended.Load() {
		// Ended by this cancel, unless its parent or its deadline ended
		// it already.
		c.detached = c.parent.Err() == nil && !c.over()
		c.ended.Store(true)
	}
	c.mu.Unlock()
	if r != nil {
		r.end(nil)
	}
}

// cancelCause is cancel with cause, as context.WithCancelCause's
// function: the context's cause, unless it has a deadline of its own
// (then it ends as cancel ends it) or has ended already. A cause is
// rare (an operator's cancel), so it makes the real context rather than
// keep the cause until then.
func (c *lazyCtx) cancelCause(cause error) {
	if cause == nil {
		c.cancel()
		return
	}
	c.make()
	c.real.Load().end(cause)
}
