package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

// ReplayClientOptions say where `sextant replay --temporal` runs a replay.
type ReplayClientOptions struct {
	HostPort  string // the Temporal front end, HOST:PORT
	Namespace string
	TaskQueue string // the queue the workers poll
	Logger    *slog.Logger
}

// RunReplay starts the replay workflow on the task queue, waits for it and
// returns each shard's results (its shard workflow's result), in shard
// order. Cancelling ctx cancels the
// workflow.
func RunReplay(ctx context.Context, o ReplayClientOptions, in ReplayInput) ([][]replay.Result, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: o.HostPort, Namespace: o.Namespace, Logger: sdklog.NewStructuredLogger(o.Logger)})
	if err != nil {
		return nil, fmt.Errorf("temporal %s: %w", o.HostPort, err)
	}
	defer c.Close()
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	wf, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "sextant-replay-" + hex.EncodeToString(id[:]),
		TaskQueue: o.TaskQueue,
	}, ReplayWorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("temporal %s: start the replay: %w", o.HostPort, err)
	}
	o.Logger.Info("replay started on temporal", "workflow", wf.GetID(), "run", wf.GetRunID(), "task_queue", o.TaskQueue, "shards", in.Shards)
	var out ReplayOutput
	if err := wf.Get(ctx, &out); err != nil {
		if ctx.Err() != nil {
			// The CLI is gone: so is the replay it waited for.
			if cerr := c.CancelWorkflow(context.WithoutCancel(ctx), wf.GetID(), wf.GetRunID()); cerr != nil {
				o.Logger.Warn("the replay workflow is not cancelled", "workflow", wf.GetID(), "err", cerr)
			}
			return nil, ctx.Err()
		}
		var app *sdktemporal.ApplicationError
		if errors.As(err, &app) {
			return nil, &ReplayError{Workflow: wf.GetID(), Message: app.Message(), Invalid: app.Type() == ReplayInvalidType}
		}
		return nil, fmt.Errorf("temporal replay %s: %w", wf.GetID(), err)
	}
	if len(out.Shards) != in.Shards {
		return nil, fmt.Errorf("temporal replay %s: %d shards, want %d", wf.GetID(), len(out.Shards), in.Shards)
	}
	shards := make([][]replay.Result, in.Shards)
	for i, id := range out.Shards {
		var s ReplayShardOutput
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &s); err != nil {
			return nil, fmt.Errorf("temporal replay %s: shard %d/%d: %w", wf.GetID(), i+1, in.Shards, err)
		}
		if s.Shard != i {
			return nil, fmt.Errorf("temporal replay %s: shard %d/%d holds shard %d's results", wf.GetID(), i+1, in.Shards, s.Shard+1)
		}
		if shards[i], err = decodeReplayResults(i, in.Shards, s.Results, maxReplayShardBytes); err != nil {
			return nil, fmt.Errorf("temporal replay %s: %w", wf.GetID(), err)
		}
	}
	return shards, nil
}
