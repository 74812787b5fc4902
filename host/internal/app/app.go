// Package app is what a user can do to tasks — run, resume, send, signal,
// cancel, retry, set, feedback, import, review decisions, promote and
// rollback — behind one interface, Backend, with one implementation per
// place the tasks live: a store this process holds (local), a process that
// holds the store (remote: a sextant serve through its API, or a sextant
// run --wait over the store's socket), or a Temporal cluster. Open decides
// which applies, once per command, by one rule (RATIONALE "Why one rule
// picks the backend"); the CLI parses flags, calls the backend and prints.
package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Kind names a backend.
type Kind string

// The backends Open chooses between.
const (
	Local    Kind = "local"    // this process holds the store
	Remote   Kind = "remote"   // another process holds it: a sextant serve, or a run --wait
	Temporal Kind = "temporal" // the tasks run on a Temporal cluster
)

// Backend is what a user can do to tasks. An operation a backend cannot
// do fails with an error that says why (and, for a store held by another
// process, names it).
type Backend interface {
	// Kind is the backend's kind.
	Kind() Kind
	// Run starts a run of a prepared pipeline.
	Run(ctx context.Context, req RunRequest) (*run.Result, error)
	// Resume continues a task, answering its waiting steps (nil: none).
	Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error)
	// Send delivers a message to task, or, with task "", to the task its
	// correlation key names.
	Send(ctx context.Context, task string, d run.Delivery) (*run.Result, error)
	// Signal broadcasts a signal to the waiting tasks (of pipeline, when
	// not "") that wait for it.
	Signal(ctx context.Context, pipeline string, d run.Delivery) ([]*run.Result, error)
	// Cancel ends a task for good.
	Cancel(ctx context.Context, task string, c run.Cancelled) (*run.Result, error)
	// Retry continues a task stopped in an incident, assigning vars first.
	Retry(ctx context.Context, task string, vars map[string]any) (*run.Result, error)
	// Set assigns variables of a waiting task, or one in an incident.
	Set(ctx context.Context, task string, vars map[string]any) (*run.Result, error)
	// Feedback records rewards on one task, all of them or none.
	Feedback(ctx context.Context, req FeedbackRequest) ([]*store.Reward, error)
	// Import reads a JSONL export (named name in errors), all or nothing.
	Import(ctx context.Context, name string, r io.Reader) (store.Counts, error)
	// Decide approves or rejects a review request.
	Decide(ctx context.Context, req DecideRequest) (*Decided, error)
	// Move moves a pipeline's live strategy version (promote, rollback),
	// expecting the version live when it starts: an operator who moved it
	// in between makes it fail rather than be silently undone.
	Move(ctx context.Context, p *pipeline.Pipeline, m evolve.Move) (before, after *evolve.Live, err error)
	// Close releases what the backend holds (the store, a connection).
	Close() error
}

// Target says where a command's tasks are.
type Target struct {
	// Store is the store's directory.
	Store string
	// Create lets Open make the store (run, import); otherwise it must
	// exist.
	Create bool
	// Pipeline, when set, gives the store its [store] settings
	// (redaction, fsync).
	Pipeline *pipeline.Pipeline
	// Temporal, when its Addr is set, is the cluster the tasks run on.
	Temporal TemporalTarget
}

// DefaultQueryTimeout is how long serve, resume, send, signal and cancel
// --temporal wait for a worker to answer one query of a running workflow
// (--query-timeout): a
// worker answers in milliseconds, and with none polling a query would
// wait as long as the request that asks it.
const DefaultQueryTimeout = 5 * time.Second

// DefaultTaskQueue is temporal.DefaultTaskQueue, spelt out so that the
// CLI's flags build without Temporal's SDK (-tags notemporal).
const DefaultTaskQueue = "sextant"

// TemporalTarget is a Temporal cluster: --temporal, --namespace,
// --task-queue and --local-steps.
type TemporalTarget struct {
	Addr, Namespace, Queue string
	LocalSteps             bool
	// QueryTimeout bounds each query asked of a running workflow (serve
	// --temporal: 0 is DefaultQueryTimeout; elsewhere 0 waits as long as
	// the caller): a run no worker answers for within it is shown from
	// the cluster's record, a message or cancel to it left with Temporal
	// (on the command line), and anything else that needs a worker of it
	// refused.
	QueryTimeout time.Duration
}

// Options are what a backend needs of its caller.
type Options struct {
	Logger *slog.Logger
	// Clock is the time local runs see (nil: the wall clock).
	Clock clock.Clock
	// Prepare prepares a pipeline file for a local run (plugins found as
	// the caller finds them).
	Prepare func(ctx context.Context, path string) (*run.Prepared, error)
	// OTLPEndpoint is where local runs export spans live ("": the
	// environment's, or off).
	OTLPEndpoint string
	// Learner is the online adapter of [evolve] online pipelines; nil:
	// they do not learn.
	Learner Learner
	// Command names the command in errors ("sextant run").
	Command string
}

// RunRequest is a run to start.
type RunRequest struct {
	// Prep is the prepared pipeline; the caller closes it.
	Prep *run.Prepared
	// Input is the task: its id ("" generates one), input, truth, tags
	// and start event.
	Input run.Input
	// Wait keeps the run in the foreground through its timers, retry
	// delays, messages and signals, until it ends or waits for a person.
	Wait bool
	// OnStep, when set, is told of each step as it finishes (local runs).
	OnStep func(run.StepEvent)
}

// FeedbackRequest is rewards on one task.
type FeedbackRequest struct {
	Rewards []*store.Reward
	// Pipeline, when set, is the pipeline file whose online adapter
	// learns from the reward.
	Pipeline string
}

// DecideRequest is a person's decision on a review request.
type DecideRequest struct {
	ID       string
	Approve  bool
	By, Note string
	// Dir is where an approved strategy file goes ("": beside the
	// pipeline's strategy).
	Dir string
	// Pipeline is the pipeline whose live version an approved candidate
	// becomes (needed by a local approve).
	Pipeline *pipeline.Pipeline
	Now      time.Time
}

// Decided is a decision taken: the request, and, for a local approve, the
// pipeline's live version it made.
type Decided struct {
	Review *evolve.ReviewRequest
	Live   *evolve.Live
}

// Open returns the backend for t, by the one rule: a Temporal address
// means Temporal; else the store, when this process can hold it, is local;
// else, held by a sextant serve, its API; else, held by another process
// (a sextant run --wait), that process over the store's socket.
func Open(ctx context.Context, t Target, o Options) (Backend, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if t.Temporal.Addr != "" {
		return openTemporal(ctx, t.Temporal, o)
	}
	mode := Update
	if t.Create {
		mode = Create
	}
	s, fresh, err := openStore(ctx, t.Store, mode, t.Pipeline, o.Logger)
	if err == nil {
		return &local{s: s, dir: t.Store, fresh: fresh, o: o}, nil
	}
	var le *store.LockedError
	if !errors.As(err, &le) {
		return nil, err
	}
	if c, ok := serve.Discover(t.Store, le.PID); ok {
		return &server{c: c, locked: le, command: o.Command}, nil
	}
	return &holder{dir: t.Store, locked: err}, nil
}

// UsageError is a command-line mistake a backend found: a flag or
// argument it cannot honour (exit 2, with the command's usage hint).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// IsInvalid reports whether err is bad input: a value a plugin or the
// application refused (sdk.ErrInvalid) or one the store refused (an id or
// tag it cannot hold: store.ErrInvalid), which a command reports with the
// exit status of invalid input, not that of a failed run.
func IsInvalid(err error) bool {
	return errors.Is(err, sdk.ErrInvalid) || errors.Is(err, store.ErrInvalid)
}

// InvalidError is input a backend refused (exit 2): an unknown task, a
// delivery nothing waits for, a change that conflicts.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Is makes the error sdk.ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == sdk.ErrInvalid }

func invalid(err error) error { return &InvalidError{err} }

// notFound makes an unknown task invalid input.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return invalid(err)
	}
	return err
}
