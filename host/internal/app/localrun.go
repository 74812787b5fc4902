package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// The store has one writer. While a local run goes on, the process that
// runs it serves requests of other processes on the store's socket
// (store.Handle/Ask): cancelOp always, deliverOp when the run waits in the
// foreground (run --wait). See RATIONALE.md, "Why deliveries to a run
// --wait go through the store's socket".
const (
	cancelOp  = "cancel"
	deliverOp = "deliver"
)

// cancelRequest asks the holder of the store to cancel a task.
type cancelRequest struct {
	Task   string `json:"task"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// deliverRequest is a message (to Task, or correlated by Delivery.Key) or
// a signal (to the waiting tasks of Pipeline, or all).
type deliverRequest struct {
	Delivery run.Delivery `json:"delivery"`
	Task     string       `json:"task,omitempty"`
	Pipeline string       `json:"pipeline,omitempty"`
}

// deliverAnswer is how the deliveries went: one result per task reached;
// the holder's own run, which goes on there, is reported running.
type deliverAnswer struct {
	Results []*run.Result `json:"results"`
}

func (l *local) Run(ctx context.Context, req RunRequest) (*run.Result, error) {
	prep, in := req.Prep, req.Input
	exp, flush, err := l.telemetry(ctx)
	if err != nil {
		return nil, err
	}
	defer flush()
	defer l.serveCancels()()
	cfg := l.config(exp)
	cfg.OnStep = req.OnStep
	if req.Wait {
		// The run waits here for its timers, and for messages and
		// signals that other processes hand to this one.
		cfg.Sleep = l.o.Clock.Sleep
		if in.ID == "" {
			in.ID = l.s.NewID()
		}
		inbox, ended := make(chan run.Inbound), make(chan struct{})
		cfg.Inbox = inbox
		w := &waiter{l: l, own: in.ID, pipeline: prep.Pipeline.Name, inbox: inbox, ended: ended}
		l.s.Handle(deliverOp, w.serve)
		defer l.s.Handle(deliverOp, nil)
		defer close(ended)
	}
	if err := FollowLive(ctx, l.s, prep, l.o.Logger); err != nil {
		return nil, err
	}
	online := prep.Pipeline.Evolve.Online && l.o.Learner != nil
	base := prep.Strategy
	if online {
		if base, err = l.o.Learner.Head(ctx, l.s, prep); err != nil {
			return nil, err
		}
	}
	res, err := prep.Runner(cfg).Start(ctx, in)
	if err != nil {
		return nil, err
	}
	if online {
		if err := l.o.Learner.Learn(ctx, l.s, prep, base, res, in.Input, in.Truth); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// serveCancels serves cancelOp on the store's socket while a run goes on
// (a cancel from another process); call the returned func once it ended.
func (l *local) serveCancels() func() {
	l.s.Handle(cancelOp, func(ctx context.Context, body json.RawMessage) (any, error) {
		var req cancelRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("read the cancel request: %w", err)
		}
		res, err := run.Cancel(ctx, l.s, req.Task, &run.Cancelled{By: req.By, Reason: req.Reason})
		if err != nil {
			return nil, remoteErr(notFound(err))
		}
		return res, nil
	})
	return func() { l.s.Handle(cancelOp, nil) }
}

// waiter serves deliveries for a run --wait of task own: to own through
// inbox while its run goes on (until ended is closed), to other tasks of
// the store as Send and Signal do.
type waiter struct {
	l        *local
	own      string
	pipeline string // own's pipeline name
	inbox    chan<- run.Inbound
	ended    <-chan struct{}
}

// serve is the store.Handler of deliverOp.
func (w *waiter) serve(ctx context.Context, body json.RawMessage) (any, error) {
	var req deliverRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("read the delivery: %w", err)
	}
	var out deliverAnswer
	var err error
	switch req.Delivery.Kind {
	case store.WaitMessage:
		out.Results, err = w.message(ctx, req)
	case store.WaitSignal:
		out.Results, err = w.signal(ctx, req)
	default:
		return nil, fmt.Errorf("deliver %q: %w", req.Delivery.Kind, store.ErrInvalid)
	}
	if err != nil {
		return nil, remoteErr(err)
	}
	return out, nil
}

// message delivers a message: to the holder's own run first, when it is
// for it (its waits are stored while it waits), else as Send does.
func (w *waiter) message(ctx context.Context, req deliverRequest) ([]*run.Result, error) {
	d, task := req.Delivery, req.Task
	if task == "" {
		var err error
		if task, err = run.Correlate(ctx, w.l.s, d, w.own); err != nil {
			return nil, err
		}
	}
	if task == w.own {
		switch err := w.toOwn(ctx, d); {
		case err == nil:
			return []*run.Result{{Task: task, Status: store.StatusRunning}}, nil
		case !errors.Is(err, errOwnEnded):
			return nil, err
		}
	}
	res, err := w.l.Send(ctx, task, d)
	if err != nil {
		return nil, err
	}
	return []*run.Result{res}, nil
}

// signal delivers a signal to the holder's own run (when of the pipeline
// asked for) and to the store's other tasks that wait for it.
func (w *waiter) signal(ctx context.Context, req deliverRequest) ([]*run.Result, error) {
	var out []*run.Result
	skip := ""
	if req.Pipeline == "" || req.Pipeline == w.pipeline {
		switch err := w.toOwn(ctx, req.Delivery); {
		case err == nil:
			skip = w.own
			out = append(out, &run.Result{Task: w.own, Status: store.StatusRunning})
		case errors.Is(err, run.ErrNoWaiter):
			skip = w.own // waits for something else: the signal is not for it
		case !errors.Is(err, errOwnEnded):
			return nil, err
		}
	}
	res, err := w.l.broadcast(ctx, req.Pipeline, skip, req.Delivery)
	return append(out, res...), err
}

// errOwnEnded: the holder's run has ended; deliveries to its task go the
// stored way (which says the task is over).
var errOwnEnded = errors.New("the run has ended")

// toOwn hands d to the holder's own run and waits for the run to take it.
func (w *waiter) toOwn(ctx context.Context, d run.Delivery) error {
	done := make(chan error, 1)
	select {
	case w.inbox <- run.Inbound{Delivery: d, Done: done}:
	case <-w.ended:
		return errOwnEnded
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remoteErr marks an invalid-input error (exit 2) for the asker.
func remoteErr(err error) error {
	if errors.Is(err, sdk.ErrInvalid) {
		return invalidRemote{err}
	}
	return err
}

type invalidRemote struct{ error }

func (e invalidRemote) Unwrap() error        { return e.error }
func (e invalidRemote) Is(target error) bool { return target == store.ErrInvalid }
