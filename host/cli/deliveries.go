package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// The store has one writer. While a `sextant run --wait` holds it, send
// and signal hand their delivery to that process over the store's socket
// (store.Handle/Ask) instead of failing on the lock; it delivers to its own
// run through the run's inbox and to the store's other tasks as send and
// signal would. See RATIONALE.md, "Why deliveries to a run --wait go
// through the store's socket".

// deliverOp is the request kind on the store's socket.
const deliverOp = "deliver"

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

// askHolder hands a delivery to the process holding the store: a run
// --wait over the store's socket, or a sextant serve through its API. Any
// other holder leaves the lock error.
func (a *app) askHolder(ctx context.Context, loc storeLoc, req deliverRequest, locked error, asJSON bool) error {
	var ans deliverAnswer
	err := store.Ask(ctx, loc.dir, deliverOp, req, &ans)
	switch {
	case errors.Is(err, store.ErrNotServed):
		return a.askServer(ctx, loc, req, locked, asJSON)
	case errors.Is(err, store.ErrInvalid):
		return withInvalid(err)
	case err != nil:
		return fmt.Errorf("deliver through the process holding the store: %w", err)
	}
	if req.Delivery.Kind == store.WaitSignal {
		return a.reportSignal(req.Delivery.Name, ans.Results, asJSON)
	}
	if len(ans.Results) != 1 {
		return fmt.Errorf("deliver through the process holding the store: %d results for one message", len(ans.Results))
	}
	res := ans.Results[0]
	if res.Status == store.StatusRunning {
		if asJSON {
			return writeJSON(a.stdout, res)
		}
		fmt.Fprintf(a.stdout, "message %q delivered to task %s; its run goes on in the process that holds the store\n", req.Delivery.Name, res.Task)
		return nil
	}
	return a.report(res, asJSON, loc)
}

// holder serves deliveries for a `run --wait` of task own: to own
// through inbox while its run goes on (until ended is closed), to other
// tasks of s as send and signal do.
type holder struct {
	a        *app
	s        *store.Store
	clk      clock.Clock
	own      string
	pipeline string // own's pipeline name
	inbox    chan<- run.Inbound
	ended    <-chan struct{}
}

// serve is the store.Handler of deliverOp.
func (h *holder) serve(ctx context.Context, body json.RawMessage) (any, error) {
	var req deliverRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("read the delivery: %w", err)
	}
	d := req.Delivery
	var out deliverAnswer
	switch d.Kind {
	case store.WaitMessage:
		task := req.Task
		if task == "" {
			var err error
			if task, err = h.correlate(ctx, d); err != nil {
				return nil, remoteErr(err)
			}
		}
		if task == h.own {
			switch err := h.toOwn(ctx, d); {
			case err == nil:
				out.Results = append(out.Results, &run.Result{Task: task, Status: store.StatusRunning})
				return out, nil
			case !errors.Is(err, errOwnEnded):
				return nil, remoteErr(err)
			}
		}
		res, err := h.a.deliverStored(ctx, h.s, h.clk, task, d)
		if err != nil {
			return nil, remoteErr(err)
		}
		out.Results = append(out.Results, res)
	case store.WaitSignal:
		skip := ""
		if req.Pipeline == "" || req.Pipeline == h.pipeline {
			switch err := h.toOwn(ctx, d); {
			case err == nil:
				skip = h.own
				out.Results = append(out.Results, &run.Result{Task: h.own, Status: store.StatusRunning})
			case errors.Is(err, run.ErrNoWaiter):
				skip = h.own // waits for something else: the signal is not for it
			case !errors.Is(err, errOwnEnded):
				return nil, remoteErr(err)
			}
		}
		res, err := h.a.broadcast(ctx, h.s, h.clk, d, req.Pipeline, skip)
		out.Results = append(out.Results, res...)
		if err != nil {
			return nil, remoteErr(err)
		}
	default:
		return nil, fmt.Errorf("deliver %q: %w", d.Kind, store.ErrInvalid)
	}
	return out, nil
}

// correlate finds the task a keyed message is for: the holder's own run
// first, when its subscription matches (its waits are stored while it
// waits), else the oldest other waiting task.
func (h *holder) correlate(ctx context.Context, d run.Delivery) (string, error) {
	t, err := h.s.Task(ctx, h.own)
	if err == nil && t.Status == store.StatusWaiting {
		for _, w := range t.Waits {
			if w.Kind == store.WaitMessage && (w.Name == d.Name || w.Event == d.Name) && w.Correlation == d.Key {
				return h.own, nil
			}
		}
	}
	return correlate(ctx, h.s, d, "")
}

// errOwnEnded: the holder's run has ended; deliveries to its task go the
// stored way (which says the task is over).
var errOwnEnded = errors.New("the run has ended")

// toOwn hands d to the holder's own run and waits for the run to take it.
func (h *holder) toOwn(ctx context.Context, d run.Delivery) error {
	done := make(chan error, 1)
	select {
	case h.inbox <- run.Inbound{Delivery: d, Done: done}:
	case <-h.ended:
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
	var ee *exitError
	if errors.Is(err, sdk.ErrInvalid) || errors.As(err, &ee) && ee.code == ExitInvalid {
		return invalidRemote{err}
	}
	return err
}

type invalidRemote struct{ error }

func (e invalidRemote) Unwrap() error        { return e.error }
func (e invalidRemote) Is(target error) bool { return target == store.ErrInvalid }

// askServer delivers through the API of a sextant serve that holds the
// store, or returns locked when none does.
func (a *app) askServer(ctx context.Context, loc storeLoc, req deliverRequest, locked error, asJSON bool) error {
	srv, err := serve.ViaServer(loc.dir, locked)
	if err != nil {
		return err
	}
	d := req.Delivery
	if d.Kind == store.WaitSignal {
		res, err := srv.Signal(ctx, d.Name, req.Pipeline, d.Vars)
		if err != nil {
			return apiErr(fmt.Errorf("signal through sextant serve at %s: %w", srv.URL(), err))
		}
		return a.reportSignal(d.Name, res.Tasks, asJSON)
	}
	if req.Task == "" {
		return usageErr(fmt.Errorf("sextant serve at %s holds the store: name the TASK the keyed message is for (sextant send TASK --message %s --key %s)", srv.URL(), d.Name, d.Key))
	}
	res, err := srv.Send(ctx, req.Task, d.Name, d.Key, d.Vars)
	if err != nil {
		return apiErr(fmt.Errorf("send through sextant serve at %s: %w", srv.URL(), err))
	}
	return a.report(res, asJSON, loc)
}
