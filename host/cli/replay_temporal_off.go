//go:build notemporal

package cli

import (
	"context"
	"errors"
)

// Built with -tags notemporal: Temporal's SDK is not linked, and replay
// --temporal says so.
func (a *app) replayOnTemporal(context.Context, string, *replayFlags, *replayPlan, string) error {
	return usageErr(errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)"))
}
