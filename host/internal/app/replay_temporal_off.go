//go:build notemporal

package app

import (
	"context"
	"errors"

	"github.com/sextant-dev/sextant/host/internal/replay"
)

// Built with -tags notemporal: Temporal's SDK is not linked, and replay
// --temporal says so.
func (r *Replayer) onTemporal(context.Context, *ReplayPlan, ReplayRequest) ([]replay.Result, error) {
	return nil, &UsageError{errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)")}
}
