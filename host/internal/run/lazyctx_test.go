package run

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLazyCtx drives a lazyCtx and the standard library context it stands
// for through the same events, and checks that they answer alike at
// every point: deadline, error, cause, values, Done, and contexts derived
// from them.
func TestLazyCtx(t *testing.T) {
	type key struct{}
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	cause := errors.New("the run was cancelled")
	for _, tc := range []struct {
		name      string
		parentDL  time.Time // zero: the parent has none
		deadline  time.Time // zero: none of its own
		look      bool      // ask for Done before the events
		derive    bool      // derive a context from it before the events
		cancel    bool      // cancel it
		endParent bool      // then cancel the parent, with cause
		withCause bool      // cancel it with a cause of its own (no deadline: context.WithCancelCause)
		late      bool      // cancel it after the parent
	}{
		{name: "untouched"},
		{name: "cancelled", cancel: true},
		{name: "cancelled after Done", look: true, cancel: true},
		{name: "cancelled, derived before", derive: true, cancel: true},
		{name: "parent cancelled", endParent: true},
		{name: "parent cancelled after Done", look: true, endParent: true},
		{name: "parent cancelled, derived before", derive: true, endParent: true},
		{name: "cancelled, then the parent", cancel: true, endParent: true},
		{name: "own deadline", deadline: future},
		{name: "own deadline passed", deadline: past},
		{name: "own deadline passed after Done", deadline: past, look: true},
		{name: "own deadline passed, derived before", deadline: past, derive: true},
		{name: "parent's deadline first", parentDL: future, deadline: future.Add(time.Hour)},
		{name: "own deadline first", parentDL: future.Add(time.Hour), deadline: future},
		{name: "parent's deadline passed", parentDL: past, deadline: future},
		{name: "parent's deadline only", parentDL: future},
		{name: "cancelled with cause", cancel: true, withCause: true},
		{name: "cancelled with cause after Done", look: true, cancel: true, withCause: true},
		{name: "cancelled with cause, derived before", derive: true, cancel: true, withCause: true},
		{name: "cancelled with cause, then the parent", cancel: true, endParent: true, withCause: true},
		{name: "parent cancelled, then it with cause", cancel: true, endParent: true, withCause: true, late: true},
		{name: "parent cancelled after Done, then it with cause", look: true, cancel: true, endParent: true, withCause: true, late: true},
		{name: "parent's deadline, cancelled with cause", parentDL: future, cancel: true, withCause: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := func() (context.Context, context.CancelCauseFunc) {
				p, end := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
				if !tc.parentDL.IsZero() {
					var stop context.CancelFunc
					p, stop = context.WithDeadline(p, tc.parentDL)
					t.Cleanup(stop)
				}
				return p, end
			}
			pStd, endStd := parent()
			pLazy, endLazy := parent()
			var std context.Context
			var cancelStd context.CancelFunc
			var causeStd context.CancelCauseFunc
			switch {
			case tc.withCause:
				std, causeStd = context.WithCancelCause(pStd)
				cancelStd = func() { causeStd(nil) }
			case tc.deadline.IsZero():
				std, cancelStd = context.WithCancel(pStd)
			default:
				std, cancelStd = context.WithDeadline(pStd, tc.deadline)
			}
			defer cancelStd()
			lazy := newLazyCtx(pLazy, tc.deadline)
			defer lazy.cancel()
			if tc.look {
				std.Done()
				lazy.Done()
			}
			var childStd, childLazy context.Context
			if tc.derive {
				var stop1, stop2 context.CancelFunc
				childStd, stop1 = context.WithCancel(std)
				childLazy, stop2 = context.WithCancel(lazy)
				defer stop1()
				defer stop2()
			}
			own := errors.New("cancelled by an operator")
			cancel := func() {
				if tc.withCause {
					causeStd(own)
					lazy.cancelCause(own)
				} else {
					cancelStd()
					lazy.cancel()
				}
			}
			if tc.cancel && !tc.late {
				cancel()
			}
			if tc.endParent {
				endStd(cause)
				endLazy(cause)
			}
			if tc.cancel && tc.late {
				cancel()
			}
			same(t, "ctx", std, lazy)
			if tc.derive {
				same(t, "derived before", childStd, childLazy)
			}
			afterStd, stop1 := context.WithCancel(std)
			afterLazy, stop2 := context.WithCancel(lazy)
			defer stop1()
			defer stop2()
			same(t, "derived after", afterStd, afterLazy)
			if v := lazy.Value(key{}); v != "v" {
				t.Errorf("Value = %v", v)
			}
		})
	}
}

// same fails unless a and b answer alike.
func same(t *testing.T, what string, a, b context.Context) {
	t.Helper()
	da, oka := a.Deadline()
	db, okb := b.Deadline()
	if !da.Equal(db) || oka != okb {
		t.Errorf("%s: deadline %v %v, want %v %v", what, db, okb, da, oka)
	}
	if a.Err() != b.Err() {
		t.Errorf("%s: Err = %v, want %v", what, b.Err(), a.Err())
	}
	if ca, cb := context.Cause(a), context.Cause(b); ca != cb {
		t.Errorf("%s: Cause = %v, want %v", what, cb, ca)
	}
	if isDone(a.Done()) != isDone(b.Done()) {
		t.Errorf("%s: Done closed %v, want %v", what, isDone(b.Done()), isDone(a.Done()))
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestLazyCtxCancelWakes checks that a goroutine waiting on a lazy
// context's Done wakes when it is cancelled, and one derived from it too.
func TestLazyCtxCancelWakes(t *testing.T) {
	lazy := newLazyCtx(context.Background(), time.Time{})
	derived, stop := context.WithCancel(lazy)
	defer stop()
	woke := make(chan error)
	go func() {
		<-derived.Done()
		woke <- derived.Err()
	}()
	lazy.cancel()
	if err := <-woke; err != context.Canceled {
		t.Fatalf("derived.Err() = %v", err)
	}
}
