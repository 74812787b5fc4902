//go:build notemporal

package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// Built with -tags notemporal: Temporal's SDK is not linked, and the
// commands that need it say so.

var errNoTemporal = usageErr(errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)"))

func (a *app) workerCommand() *cobra.Command {
	return &cobra.Command{Use: "worker", Short: "Run pipelines for a Temporal cluster (not in this build)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errNoTemporal }}
}

func (a *app) runOnTemporal(context.Context, temporalFlags, *run.Prepared, run.Input, bool, bool) error {
	return errNoTemporal
}

func (a *app) resumeOnTemporal(context.Context, temporalFlags, string, map[string]any, bool) error {
	return errNoTemporal
}

func (a *app) cancelOnTemporal(context.Context, temporalFlags, cancelRequest) (*run.Result, error) {
	return nil, errNoTemporal
}

func (a *app) sendOnTemporal(context.Context, temporalFlags, string, run.Delivery, bool) error {
	return errNoTemporal
}

func (a *app) signalOnTemporal(context.Context, temporalFlags, string, run.Delivery, bool) error {
	return errNoTemporal
}
