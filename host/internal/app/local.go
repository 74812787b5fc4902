package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/telemetry"
)

// Learner is the online adapter ([evolve] online) a local backend runs
// around the runs of an online pipeline, which learns as it runs.
type Learner interface {
	// Head switches prep to the version the next task runs under and
	// returns the configured strategy.
	Head(ctx context.Context, s *store.Store, prep *run.Prepared) (*strategy.Strategy, error)
	// TaskStrategy switches prep, about to continue task, to the version
	// the task started under.
	TaskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string)
	// Learn learns from a run that ended (res) of a task started under
	// base with input and truth.
	Learn(ctx context.Context, s *store.Store, prep *run.Prepared, base *strategy.Strategy, res *run.Result, input map[string]any, truth json.RawMessage) error
	// Resumed learns from a resumed run that ended.
	Resumed(ctx context.Context, s *store.Store, prep *run.Prepared, res *run.Result) error
	// Feedback learns from a reward on task of the pipeline file path.
	Feedback(ctx context.Context, s *store.Store, path, task string, reward float64) error
}

// local is the backend of a store this process holds.
type local struct {
	s     *store.Store
	dir   string
	fresh bool // Open created the store
	o     Options
}

func (l *local) Kind() Kind { return Local }

// Store is the store a local backend holds, for the commands that read
// it after acting on it.
func (l *local) Store() *store.Store { return l.s }

func (l *local) Close() error {
	if l.s == nil {
		return nil
	}
	return l.s.Close()
}

// telemetry starts live span export when an endpoint is configured (nil:
// off); the returned func flushes it (failures are logged, never the
// command's).
func (l *local) telemetry(ctx context.Context) (*telemetry.Exporter, func(), error) {
	exp, err := telemetry.New(ctx, telemetry.Config{Endpoint: l.o.OTLPEndpoint, Service: "sextant",
		Content: telemetry.CaptureContentFromEnv(), Recordings: l.s, Redactor: l.s.Redactor(), Logger: l.o.Logger})
	if err != nil {
		return nil, nil, err
	}
	return exp, func() {
		if err := exp.Shutdown(context.WithoutCancel(ctx)); err != nil {
			l.o.Logger.Warn("telemetry shutdown", "err", err)
		}
	}, nil
}

func (l *local) config(exp *telemetry.Exporter) run.Config {
	return run.Config{Store: l.s, Logger: l.o.Logger, Clock: l.o.Clock.Now, OnSpans: exp.Spans}
}

// taskRun is what continuing one recorded task needs: the pipeline the
// task was run with, under the strategy version it started with.
type taskRun struct {
	prep   *run.Prepared
	runner *run.Runner
	done   func()
}

func (l *local) taskRun(ctx context.Context, task string) (*taskRun, error) {
	file, err := run.PipelineOf(ctx, l.s, task)
	if err != nil {
		return nil, notFound(err)
	}
	prep, err := l.o.Prepare(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", task, err)
	}
	if prep.Pipeline.Evolve.Online && l.o.Learner != nil {
		l.o.Learner.TaskStrategy(ctx, l.s, prep, task)
	}
	taskStrategy(ctx, l.s, prep, task)
	exp, flush, err := l.telemetry(ctx)
	if err != nil {
		prep.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &taskRun{prep: prep, runner: prep.Runner(l.config(exp)), done: func() {
		flush()
		prep.Close(context.WithoutCancel(ctx))
	}}, nil
}

func (l *local) Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error) {
	tr, err := l.taskRun(ctx, task)
	if err != nil {
		return nil, err
	}
	defer tr.done()
	defer l.serveCancels()()
	res, err := tr.runner.Resume(ctx, task, answers)
	if err != nil {
		return nil, notFound(err)
	}
	if tr.prep.Pipeline.Evolve.Online && l.o.Learner != nil {
		if err := l.o.Learner.Resumed(ctx, l.s, tr.prep, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (l *local) Retry(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	tr, err := l.taskRun(ctx, task)
	if err != nil {
		return nil, err
	}
	defer tr.done()
	defer l.serveCancels()()
	res, err := tr.runner.Retry(ctx, task, vars)
	return res, notFound(err)
}

func (l *local) Set(ctx context.Context, task string, vars map[string]any) (*run.Result, error) {
	tr, err := l.taskRun(ctx, task)
	if err != nil {
		return nil, err
	}
	defer tr.done()
	res, err := tr.runner.Set(ctx, task, vars)
	return res, notFound(err)
}

func (l *local) Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error) {
	if task == "" {
		var err error
		if task, err = run.Correlate(ctx, l.s, d, ""); err != nil {
			return nil, err
		}
	}
	tr, err := l.taskRun(ctx, task)
	if err != nil {
		return nil, err
	}
	defer tr.done()
	res, err := tr.runner.Deliver(ctx, task, d)
	return res, notFound(err)
}

func (l *local) Signal(ctx context.Context, pipe string, d run.Delivery) ([]*run.Result, error) {
	return l.broadcast(ctx, pipe, "", d)
}

// broadcast is Signal to every task but skip, preparing each pipeline
// once.
func (l *local) broadcast(ctx context.Context, pipe, skip string, d run.Delivery) ([]*run.Result, error) {
	preps := map[string]*run.Prepared{}
	defer func() {
		for _, p := range preps {
			p.Close(context.WithoutCancel(ctx))
		}
	}()
	return run.Broadcast(ctx, l.s, pipe, skip, d.Name, d.Vars, func(ctx context.Context, file string) (*run.Runner, error) {
		prep := preps[file]
		if prep == nil {
			var err error
			if prep, err = l.o.Prepare(ctx, file); err != nil {
				return nil, err
			}
			preps[file] = prep
		}
		return prep.Runner(run.Config{Store: l.s, Logger: l.o.Logger, Clock: l.o.Clock.Now}), nil
	})
}

func (l *local) Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error) {
	res, err := run.Cancel(ctx, l.s, task, &c)
	return res, notFound(err)
}

func (l *local) Feedback(ctx context.Context, req FeedbackRequest) ([]*store.Reward, error) {
	if err := l.s.AddRewards(ctx, req.Rewards); err != nil {
		return nil, invalid(err) // an unknown task, execution or span
	}
	if req.Pipeline == "" || l.o.Learner == nil {
		return req.Rewards, nil
	}
	for _, r := range req.Rewards {
		if r.Dimension == "" {
			// An online pipeline learns from the unnamed dimension at once.
			if err := l.o.Learner.Feedback(ctx, l.s, req.Pipeline, r.Task, r.Value); err != nil {
				return nil, err
			}
		}
	}
	return req.Rewards, nil
}

func (l *local) Import(ctx context.Context, name string, r io.Reader) (store.Counts, error) {
	n, err := l.s.Import(ctx, r, name)
	if err != nil {
		if l.fresh {
			l.s.Close()
			l.s = nil
			os.RemoveAll(l.dir) // leave no empty store behind a failed import
		}
		return n, invalid(err)
	}
	return n, nil
}

func (l *local) Decide(ctx context.Context, req DecideRequest) (*Decided, error) {
	if !req.Approve {
		r, err := evolve.Reject(ctx, l.s, req.ID, req.By, req.Note, req.Now)
		if err != nil {
			return nil, notFound(err)
		}
		return &Decided{Review: r}, nil
	}
	if req.Pipeline == nil {
		return nil, &UsageError{fmt.Errorf("approve needs --pipeline: the approved candidate becomes that pipeline's live strategy version")}
	}
	r, live, err := evolve.ApproveLive(ctx, l.s, req.Pipeline, req.Dir, req.ID, req.By, req.Note, req.Now)
	if err != nil {
		return nil, notFound(err)
	}
	return &Decided{Review: r, Live: live}, nil
}

func (l *local) Move(ctx context.Context, p *pipeline.Pipeline, m evolve.Move) (before, after *evolve.Live, err error) {
	if before, err = evolve.GetLive(ctx, l.s, p); err != nil {
		return nil, nil, err
	}
	m.Expect = before.Live.Version
	after, err = evolve.MoveLive(ctx, l.s, p, m)
	return before, after, err
}
