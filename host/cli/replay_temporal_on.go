//go:build !notemporal

package cli

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// replayShard is the shard activity `sextant worker` runs
// (app.Replayer.ReplayShard); input that can never replay is final.
func (a *app) replayShard(ctx context.Context, in temporal.ReplayShardInput) ([]replay.Result, error) {
	return a.replayer().ReplayShard(ctx, in, func(err error) bool { return ExitCode(err) == ExitInvalid })
}
