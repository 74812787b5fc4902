package serve

import (
	"context"
	"errors"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// liveRun is a run this server is carrying out now. Messages and signals
// for its task go to it through its inbox (run.Config.Inbox), so that a
// boundary event on a running step fires while the step runs, as under
// run --wait, instead of the sender waiting for the run to return.
type liveRun struct {
	pipeline string // the pipeline's name
	inbox    chan run.Inbound
	ended    chan struct{}
}

// runConfig returns the configuration of a run of task id (of the named
// pipeline) and the function to call once the run has returned.
func (s *Server) runConfig(id, pipeline string) (run.Config, func()) {
	l := &liveRun{pipeline: pipeline, inbox: make(chan run.Inbound), ended: make(chan struct{})}
	s.live.Store(id, l)
	cfg := run.Config{Store: s.opts.Store, Logger: s.opts.Logger, Inbox: l.inbox}
	return cfg, func() {
		s.live.CompareAndDelete(id, l)
		close(l.ended)
	}
}

// errNotLive: the task has no run in this server that took the delivery;
// it goes to the stored task instead.
var errNotLive = errors.New("no live run")

// toLive hands d to task id's live run and returns what the run made of
// it: nil when delivered, a *run.NoWaiterError when the run does not wait
// for it, errNotLive when there is no live run or it returned first.
func (s *Server) toLive(ctx context.Context, id string, d run.Delivery) error {
	v, ok := s.live.Load(id)
	if !ok {
		return errNotLive
	}
	l := v.(*liveRun)
	done := make(chan error, 1)
	select {
	case l.inbox <- run.Inbound{Delivery: d, Done: done}:
	case <-l.ended:
		return errNotLive
	case <-ctx.Done():
		return ctx.Err()
	}
	// A run that took a delivery always answers (run.Inbound.Done).
	return <-done
}

// signalLive hands the signal d to every live run of the pipeline named
// pipe (of any, when "") that waits for it, and returns those that took it.
func (s *Server) signalLive(ctx context.Context, pipe string, d run.Delivery) ([]*run.Result, error) {
	var ids []string
	s.live.Range(func(k, v any) bool {
		if pipe == "" || v.(*liveRun).pipeline == pipe {
			ids = append(ids, k.(string))
		}
		return true
	})
	var out []*run.Result
	for _, id := range ids {
		switch err := s.toLive(ctx, id, d); {
		case err == nil:
			out = append(out, &run.Result{Task: id, Status: store.StatusRunning})
		case errors.Is(err, errNotLive), errors.Is(err, run.ErrNoWaiter):
		default:
			return out, err
		}
	}
	return out, nil
}
