//go:build notemporal

package cli

import (
	"context"
	"errors"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// Built with -tags notemporal: Temporal's SDK is not linked, and replay
// --temporal says so.
func (a *app) replayOnTemporal(context.Context, string, *replayFlags, *run.Loaded, *plugin.Registry,
	[]*strategy.Strategy, []string, effective, string) error {
	return usageErr(errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)"))
}
