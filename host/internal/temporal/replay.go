package temporal

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

// The names a fanned-out replay is registered under: `sextant replay
// --temporal` starts ReplayWorkflowName on the task queue; it runs one
// child ReplayShardWorkflowName per shard, which runs the shard as one
// ReplayShardActivityName.
const (
	ReplayWorkflowName      = "sextant.replay"
	ReplayShardWorkflowName = "sextant.replay.shard"
	ReplayShardActivityName = "sextant.replay.shard.run"
)

// ReplayInvalidType is the application error type of a shard that can never
// succeed (the worker's checkout differs, the pipeline is invalid): it is
// not retried, and the CLI reports it as invalid input (exit status 2).
const ReplayInvalidType = "sextant.invalid"

// The activity timeouts and retries of a shard. A worker that dies stops
// heartbeating: after replayHeartbeatTimeout the shard is retried on
// another worker. (The SDK sends heartbeats at most every 80% of the
// timeout: 20 s leaves a live worker 4 s to spare on a busy machine.) replayShardTimeout only bounds a shard that hangs while
// its worker lives.
const (
	replayHeartbeatTimeout = 20 * time.Second
	replayShardTimeout     = 24 * time.Hour
	replayMaxAttempts      = 5
)

// ReplayInput is what every shard of one replay replays: the pipeline, the
// strategies and the settings of `sextant replay`, and where the recorded
// tasks are. Paths are relative to the project root (the directory of
// sextant.toml, else the working directory) of the CLI and of each worker,
// or absolute; the digests make a worker whose files differ fail instead
// of replaying something else.
type ReplayInput struct {
	Pipeline       string `json:"pipeline"`
	PipelineSHA256 string `json:"pipeline_sha256"`
	// BaselineHash is the content hash of the pipeline's strategy.
	BaselineHash string `json:"baseline_hash"`
	// Candidates are the candidate strategies' files' text, in order.
	Candidates []string `json:"candidates,omitempty"`
	// Dataset is a JSONL dataset (with its SHA-256), or, when empty,
	// Store is the store directory read, with StoreDigest its tasks'.
	Dataset       string `json:"dataset,omitempty"`
	DatasetSHA256 string `json:"dataset_sha256,omitempty"`
	Store         string `json:"store,omitempty"`
	StoreDigest   string `json:"store_digest,omitempty"`

	Sample     int    `json:"sample"`
	Seed       int64  `json:"seed"`
	OnMiss     string `json:"on_miss"`
	StratifyBy string `json:"stratify_by,omitempty"`
	// Workers is each shard's parallelism (replay --workers).
	Workers int `json:"workers"`
	// Shards is the number of shard activities (≥ 1).
	Shards int `json:"shards"`
}

// ReplayShardInput is one shard's activity input: the replay and the
// shard's 0-based index.
type ReplayShardInput struct {
	ReplayInput
	Shard int `json:"shard"`
}

// ReplayShardOutput is one shard's results.
type ReplayShardOutput struct {
	Shard int `json:"shard"`
	// Results are the replay.Results, one JSON line each, gzip-compressed:
	// Temporal bounds a payload (2 MB by default).
	Results []byte `json:"results"`
}

// ReplayOutput is the workflow's result: the workflows holding the shards'
// results, in shard order. Each shard's results are its own workflow's
// result, so that a replay is not bounded by one Temporal payload (2 MB by
// default) but each shard is.
type ReplayOutput struct {
	Shards []string `json:"shards"` // the shard workflows' ids
}

// maxReplayShardPayload bounds a shard's compressed results: the default
// data converter writes bytes in base64 (4/3 larger), and Temporal's
// default payload limit is 2 MB. Past it the shard fails as invalid, with
// the remedy, rather than leave its workflow retrying a completion the
// server refuses.
const maxReplayShardPayload = 1 << 20

// ReplayShardFunc replays one shard; the CLI implements it (it is `sextant
// replay --shard I/N`). An error marked with ReplayInvalid is final; any
// other is retried, on whichever worker takes the shard.
type ReplayShardFunc func(ctx context.Context, in ReplayShardInput) ([]replay.Result, error)

// RegisterReplay registers the replay workflow and its shard activity, run
// by shard, on a worker (a worker.Worker is a worker.Registry).
func RegisterReplay(w worker.Registry, shard ReplayShardFunc) {
	w.RegisterWorkflowWithOptions(replayWorkflow, workflow.RegisterOptions{Name: ReplayWorkflowName})
	w.RegisterWorkflowWithOptions(replayShardWorkflow, workflow.RegisterOptions{Name: ReplayShardWorkflowName})
	w.RegisterActivityWithOptions(replayShardActivity(shard), activity.RegisterOptions{Name: ReplayShardActivityName})
}

// ReplayInvalid marks err as final: the shard is not retried and the CLI
// exits 2 with its message.
func ReplayInvalid(err error) error {
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), ReplayInvalidType, nil)
}

// ReplayError is a replay that failed on Temporal: the first failed
// shard's error, as its worker reported it.
type ReplayError struct {
	Workflow string // the workflow's id
	Message  string // "shard I/N: …"
	// Invalid is set when the shard failed with an error marked with
	// ReplayInvalid (invalid input, exit status 2).
	Invalid bool
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("temporal replay %s: %s", e.Workflow, e.Message)
}

// IsReplayInvalid reports whether err is a replay that failed with an
// error marked with ReplayInvalid.
func IsReplayInvalid(err error) bool {
	var re *ReplayError
	return errors.As(err, &re) && re.Invalid
}

// failedShard is the workflow's error for shard i's failure: the worker's
// message (not the chain of wrappers around it) and its error type.
func failedShard(i, n int, err error) error {
	msg, typ := err.Error(), "sextant.shard"
	var app *sdktemporal.ApplicationError
	if errors.As(err, &app) {
		msg, typ = app.Message(), app.Type()
	}
	return sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("shard %d/%d: %s", i+1, n, msg), typ, nil)
}

// replayWorkflow runs every shard as a child workflow, at once, and
// returns their ids. It judges nothing: the CLI that started it reads the
// shards' results and judges the whole, as sextant merge judges CI shards.
func replayWorkflow(ctx workflow.Context, in ReplayInput) (ReplayOutput, error) {
	if in.Shards < 1 {
		return ReplayOutput{}, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("replay: %d shards: want at least 1", in.Shards), ReplayInvalidType, nil)
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	out := ReplayOutput{Shards: make([]string, in.Shards)}
	futures := make([]workflow.ChildWorkflowFuture, in.Shards)
	for i := range futures {
		out.Shards[i] = fmt.Sprintf("%s-shard-%d-of-%d", id, i+1, in.Shards)
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: out.Shards[i]})
		futures[i] = workflow.ExecuteChildWorkflow(cctx, ReplayShardWorkflowName, ReplayShardInput{ReplayInput: in, Shard: i})
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return ReplayOutput{}, passOn(err)
		}
	}
	return out, nil
}

// replayShardWorkflow runs one shard's activity, retried on any worker.
func replayShardWorkflow(ctx workflow.Context, in ReplayShardInput) (ReplayShardOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: replayShardTimeout,
		HeartbeatTimeout:    replayHeartbeatTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        replayMaxAttempts,
			NonRetryableErrorTypes: []string{ReplayInvalidType},
		},
	})
	var out ReplayShardOutput
	if err := workflow.ExecuteActivity(ctx, ReplayShardActivityName, in).Get(ctx, &out); err != nil {
		return ReplayShardOutput{}, failedShard(in.Shard, in.Shards, err)
	}
	return out, nil
}

// passOn is the replay's error for a failed shard workflow: the shard's
// own (its message and type), not the chain of wrappers around it.
func passOn(err error) error {
	var app *sdktemporal.ApplicationError
	if errors.As(err, &app) {
		return sdktemporal.NewNonRetryableApplicationError(app.Message(), app.Type(), nil)
	}
	return err
}

// replayShardActivity runs shard, heartbeating while it does, and packs
// its results.
func replayShardActivity(shard ReplayShardFunc) func(context.Context, ReplayShardInput) (ReplayShardOutput, error) {
	return func(ctx context.Context, in ReplayShardInput) (ReplayShardOutput, error) {
		if in.Shards < 1 || in.Shard < 0 || in.Shard >= in.Shards {
			return ReplayShardOutput{}, ReplayInvalid(fmt.Errorf("replay: shard %d of %d: want 0 ≤ shard < shards", in.Shard, in.Shards))
		}
		stop := heartbeatEvery(ctx, replayHeartbeatTimeout/5)
		defer stop() // through the encoding too: a large shard's takes seconds
		results, err := shard(ctx, in)
		if err != nil {
			return ReplayShardOutput{}, err
		}
		b, err := encodeReplayResults(results)
		if err != nil {
			return ReplayShardOutput{}, fmt.Errorf("replay: shard %d/%d: %w", in.Shard+1, in.Shards, err)
		}
		if len(b) > maxReplayShardPayload {
			return ReplayShardOutput{}, ReplayInvalid(fmt.Errorf("replay: %d results take %d bytes compressed, over the %d a shard's Temporal payload holds: fan out over more shards (--temporal-shards %d)",
				len(results), len(b), maxReplayShardPayload, in.Shards*(len(b)/maxReplayShardPayload+1)))
		}
		return ReplayShardOutput{Shard: in.Shard, Results: b}, nil
	}
}

// heartbeatEvery heartbeats the activity until stop is called, so that
// Temporal sees a live worker through a long shard and a dead one within
// the heartbeat timeout.
func heartbeatEvery(ctx context.Context, every time.Duration) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-exited }
}

// encodeReplayResults writes results as gzip-compressed JSON lines.
func encodeReplayResults(results []replay.Result) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxReplayShardBytes bounds one shard's decompressed results: a worker's
// output is input to the CLI, and a bad one must not exhaust its memory.
const maxReplayShardBytes = 1 << 30

// decodeReplayResults reads one shard's results; errors name the shard
// and the line.
func decodeReplayResults(shard, shards int, b []byte, limit int64) ([]replay.Result, error) {
	where := fmt.Sprintf("replay: shard %d/%d results", shard+1, shards)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	lim := &io.LimitedReader{R: zr, N: limit + 1}
	sc := bufio.NewScanner(lim)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	over := func() error { return fmt.Errorf("%s: over %d bytes", where, limit) }
	var out []replay.Result
	for n := 1; sc.Scan(); n++ {
		var r replay.Result
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			if lim.N <= 0 { // the line was cut at the limit
				return nil, over()
			}
			return nil, fmt.Errorf("%s:%d: %w", where, n, err)
		}
		if r.Task == "" || r.Hash == "" {
			return nil, fmt.Errorf("%s:%d: a result without a task or a strategy hash", where, n)
		}
		out = append(out, r)
	}
	if lim.N <= 0 {
		return nil, over()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return out, nil
}
