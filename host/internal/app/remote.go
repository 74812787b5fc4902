package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// server is the backend of a store a sextant serve holds: its API.
type server struct {
	c       *serve.Client
	locked  *store.LockedError
	command string
}

func (b *server) Kind() Kind   { return Remote }
func (b *server) Close() error { return nil }

// URL is the server's address.
func (b *server) URL() string { return b.c.URL() }

// via prefixes err with what went through the server.
func (b *server) via(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s through sextant serve at %s: %w", what, b.c.URL(), err)
}

func (b *server) Run(ctx context.Context, req RunRequest) (*run.Result, error) {
	p := req.Prep.Pipeline
	if p.Evolve.Online {
		// An online pipeline learns as it runs and needs the store to itself.
		return nil, &HeldError{LockedError: b.locked, URL: b.c.URL(), Command: b.command}
	}
	file, err := filepath.Abs(p.File)
	if err != nil {
		return nil, err
	}
	in := req.Input
	res, err := b.c.Run(ctx, serve.RunRequest{Pipeline: p.Name, File: file, ID: in.ID, Input: in.Input, Truth: in.Truth, Tags: in.Tags})
	return res, apiErr(b.via("run", err), false)
}

func (b *server) Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error) {
	res, err := b.c.Resume(ctx, task, answers)
	return res, apiErr(err, false)
}

func (b *server) Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error) {
	if task == "" {
		return nil, &UsageError{fmt.Errorf("sextant serve at %s holds the store: name the TASK the keyed message is for (sextant send TASK --message %s --key %s)", b.c.URL(), d.Name, d.Key)}
	}
	res, err := b.c.Send(ctx, task, d.Name, d.Key, d.Vars)
	return res, apiErr(b.via("send", err), false)
}

func (b *server) Signal(ctx context.Context, pipe string, d run.Delivery) ([]*run.Result, error) {
	res, err := b.c.Signal(ctx, d.Name, pipe, d.Vars)
	if err != nil {
		return nil, apiErr(b.via("signal", err), false)
	}
	return res.Tasks, nil
}

func (b *server) Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error) {
	res, err := b.c.Cancel(ctx, task, c.By, c.Reason)
	return res, apiErr(b.via("cancel", err), true)
}

func (b *server) Retry(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	res, err := b.c.Retry(ctx, task, vars)
	return res, apiErr(err, true)
}

func (b *server) Set(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	res, err := b.c.Set(ctx, task, vars)
	return res, apiErr(err, true)
}

func (b *server) Feedback(ctx context.Context, req FeedbackRequest) ([]*store.Reward, error) {
	rs, err := b.c.AddRewards(ctx, req.Rewards)
	return rs, apiErr(err, false)
}

func (b *server) Import(ctx context.Context, name string, r io.Reader) (store.Counts, error) {
	got, err := b.c.Import(ctx, name, r)
	if err != nil {
		// a conflict is invalid, as a local import of tasks the store has
		return store.Counts{}, apiErr(b.via("import "+name, err), true)
	}
	return store.Counts{Tasks: got.Tasks, Executions: got.Executions, Spans: got.Spans, Rewards: got.Rewards,
		Recordings: got.Recordings, Checkpoints: got.Checkpoints}, nil
}

func (b *server) Decide(ctx context.Context, req DecideRequest) (*Decided, error) {
	if req.Approve && req.Dir != "" {
		// The server puts an approved strategy beside its own pipeline's.
		return nil, &UsageError{fmt.Errorf("--dir: sextant serve at %s holds the store and promotes beside the pipeline it serves; approve without --dir, or stop the server", b.c.URL())}
	}
	r, err := b.c.Decide(ctx, req.ID, req.Approve, serve.Decision{By: req.By, Note: req.Note})
	if err != nil {
		return nil, apiErr(b.via("review "+req.ID, err), false)
	}
	return &Decided{Review: r}, nil
}

func (b *server) Move(ctx context.Context, p *pipeline.Pipeline, m evolve.Move) (before, after *evolve.Live, err error) {
	what := m.Action + " " + p.Name
	if before, err = b.c.Live(ctx, p.Name); err != nil {
		return nil, nil, apiErr(b.via(what, err), false)
	}
	after, err = b.c.MoveLive(ctx, p.Name, m.Action == evolve.MoveRollback, serve.LiveMove{Version: m.Version, Reason: m.Reason, By: m.By, Expect: before.Live.Version})
	if err != nil {
		return nil, nil, apiErr(b.via(what, err), false)
	}
	return before, after, nil
}

// apiErr is an error answer of the server: bad input and unknown ids are
// invalid (exit 2), as they are without a server, and so is a conflict
// (the task ended, another operator acted first) when conflict says so.
func apiErr(err error, conflict bool) error {
	var ae *serve.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusNotFound || conflict && ae.Status == http.StatusConflict) {
		return invalid(err)
	}
	return err
}

// holder is the backend of a store another process holds that is not a
// server: a sextant run (run --wait, resume) serves cancels, and a run
// --wait deliveries, on the store's socket. Anything else fails with the
// lock error, which names the holder.
type holder struct {
	dir    string
	locked error
}

func (b *holder) Kind() Kind   { return Remote }
func (b *holder) Close() error { return nil }

func (b *holder) Run(context.Context, RunRequest) (*run.Result, error) { return nil, b.locked }
func (b *holder) Resume(context.Context, string, map[string]any) (*run.Result, error) {
	return nil, b.locked
}
func (b *holder) Retry(context.Context, string, map[string]any) (*run.Result, error) {
	return nil, b.locked
}
func (b *holder) Set(context.Context, string, map[string]any) (*run.Result, error) {
	return nil, b.locked
}
func (b *holder) Feedback(context.Context, FeedbackRequest) ([]*store.Reward, error) {
	return nil, b.locked
}
func (b *holder) Import(context.Context, string, io.Reader) (store.Counts, error) {
	return store.Counts{}, b.locked
}
func (b *holder) Decide(context.Context, DecideRequest) (*Decided, error) { return nil, b.locked }
func (b *holder) Move(context.Context, *pipeline.Pipeline, evolve.Move) (*evolve.Live, *evolve.Live, error) {
	return nil, nil, b.locked
}

// ask sends a request of kind op to the holder; what names it in errors.
func (b *holder) ask(ctx context.Context, op, what string, req, resp any) error {
	err := store.Ask(ctx, b.dir, op, req, resp)
	switch {
	case errors.Is(err, store.ErrNotServed):
		return b.locked
	case errors.Is(err, store.ErrInvalid):
		return invalid(err)
	case err != nil:
		return fmt.Errorf("%s through the process holding the store: %w", what, err)
	}
	return nil
}

func (b *holder) Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error) {
	var ans deliverAnswer
	if err := b.ask(ctx, deliverOp, "deliver", deliverRequest{Delivery: d, Task: task}, &ans); err != nil {
		return nil, err
	}
	if len(ans.Results) != 1 {
		return nil, fmt.Errorf("deliver through the process holding the store: %d results for one message", len(ans.Results))
	}
	return ans.Results[0], nil
}

func (b *holder) Signal(ctx context.Context, pipe string, d run.Delivery) ([]*run.Result, error) {
	var ans deliverAnswer
	if err := b.ask(ctx, deliverOp, "deliver", deliverRequest{Delivery: d, Pipeline: pipe}, &ans); err != nil {
		return nil, err
	}
	return ans.Results, nil
}

func (b *holder) Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error) {
	var res run.Result
	if err := b.ask(ctx, cancelOp, "cancel", cancelRequest{Task: task, By: c.By, Reason: c.Reason}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
